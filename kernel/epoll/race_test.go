//go:build race

package epoll

// raceEnabled: the race detector's instrumentation (and sync.Pool's
// random drops under it) changes what allocates, so the allocation
// counts are checked only without it.
const raceEnabled = true
