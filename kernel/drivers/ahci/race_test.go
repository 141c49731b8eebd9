//go:build race

package ahci

// raceEnabled: the race detector's instrumentation changes what
// allocates, so the allocation counts are checked only without it.
const raceEnabled = true
