//go:build race

package net

// raceEnabled: the race detector's instrumentation changes what
// allocates (and sync.Pool drops items at random under it), so the
// allocation counts are checked only without it.
const raceEnabled = true
