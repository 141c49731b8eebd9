package mm

import "sync/atomic"

// Frame counts for /proc/meminfo, kept as the frames change hands so that
// reading them costs nothing (no walk over address spaces or objects).
var (
	// shmFrames counts the frames shared memory objects hold (Shmem).
	shmFrames atomic.Int64
	// mappedFrames counts the frames of objects that at least one
	// mapping holds (Mapped; Linux counts pages some page table maps,
	// this counts every page of a mapped object).
	mappedFrames atomic.Int64
	// anonFrames counts the private frames of user mappings: anonymous
	// memory, copies of written file pages (AnonPages).
	anonFrames atomic.Int64
	// tableFrames counts the frames of user page tables (PageTables).
	tableFrames atomic.Int64
)

// Stats are the frame counts of user memory.
type Stats struct {
	Shm    int64 // held by shared memory objects: tmpfs file data, shared anonymous memory
	Mapped int64 // of those, held by objects something maps
	Anon   int64 // private frames of user mappings
	Tables int64 // user page tables
}

// ReadStats returns the current counts.
func ReadStats() Stats {
	return Stats{Shm: shmFrames.Load(), Mapped: mappedFrames.Load(), Anon: anonFrames.Load(), Tables: tableFrames.Load()}
}
