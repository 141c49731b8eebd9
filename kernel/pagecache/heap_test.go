package pagecache

import (
	"runtime"
	"testing"
)

// TestHeapPerPage measures the Go heap the cache's bookkeeping takes
// per cached page (the frames themselves are not heap): the package
// documentation states it.
func TestHeapPerPage(t *testing.T) {
	const pages = 40000
	fr := &arenaFrames{arena: make([][PageSize]byte, pages+1)}
	c := New(fr, 1<<20)
	f := c.Open(&zeroBacking{}, pages*PageSize, KindBlock)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	frameHeap := before.HeapAlloc
	for i := int64(0); i < pages; i++ {
		f.Write(make([]byte, PageSize), i*PageSize) // whole pages: no reads
	}
	f.writeback()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(frameHeap)) / pages
	t.Logf("%d bytes of heap per cached page", per)
	if per > 160 {
		t.Errorf("%d bytes of heap per cached page, documented as about 120", per)
	}
	runtime.KeepAlive(c)
}

// TestHeapGivenBack: once its pages are gone (drop_caches here; an
// unlink or truncate invalidates them the same way), the cache's
// bookkeeping gives the heap they took back: its shards' slots and maps,
// and a file's dirty set, keep no trace of the most pages they held.
func TestHeapGivenBack(t *testing.T) {
	const pages = 40000
	fr := &arenaFrames{arena: make([][PageSize]byte, pages+1)}
	c := New(fr, 1<<20)
	f := c.Open(&zeroBacking{}, pages*PageSize, KindBlock)
	var before, full, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := int64(0); i < pages; i++ {
		f.Write(make([]byte, PageSize), i*PageSize)
	}
	f.writeback()
	runtime.GC()
	runtime.ReadMemStats(&full)
	if n := c.DropClean(); n != pages {
		t.Fatalf("DropClean dropped %d pages of %d", n, pages)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(full.HeapAlloc) - int64(before.HeapAlloc)
	left := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap: %d kB with %d pages cached, %d kB once they were dropped", held>>10, pages, left>>10)
	if left > 64<<10 {
		t.Errorf("%d kB of heap kept after every page was dropped (%d kB while cached)", left>>10, held>>10)
	}
	runtime.KeepAlive(c)
	runtime.KeepAlive(f)
}

// arenaFrames hands out frames from one preallocated arena, so that
// the heap the test measures is the cache's alone.
type arenaFrames struct {
	arena [][PageSize]byte
	next  int
}

func (a *arenaFrames) Alloc() uintptr {
	if a.next+1 >= len(a.arena) {
		return 0
	}
	a.next++
	return uintptr(a.next) * PageSize
}

func (a *arenaFrames) Free(uintptr) {}

func (a *arenaFrames) Page(pa uintptr) *[PageSize]byte { return &a.arena[pa/PageSize] }

type zeroBacking struct{}

func (zeroBacking) ReadAt(p []byte, off int64) (int, error)  { clear(p); return len(p), nil }
func (zeroBacking) WriteAt(p []byte, off int64) (int, error) { return len(p), nil }
func (zeroBacking) Flush() error                             { return nil }
