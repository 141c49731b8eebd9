package pagecache

import (
	"bytes"
	"errors"
	"testing"
)

// A held page is the cache's own: stores to the frame are what read(2)
// sees, and write(2)s show in the frame.
func TestHoldIsTheCachedPage(t *testing.T) {
	c, fr, d, f := setup(t, 64*PageSize, 1024)
	pa, err := f.HoldPage(3, false)
	if err != nil {
		t.Fatal(err)
	}
	want := d.snapshot()[3*PageSize : 4*PageSize]
	if !bytes.Equal(fr.Page(pa)[:], want) {
		t.Fatal("held frame does not hold the page's bytes")
	}
	f.Write([]byte("written"), 3*PageSize+10)
	if string(fr.Page(pa)[10:17]) != "written" {
		t.Fatal("write(2) not seen in the held frame")
	}
	pa2, _ := f.HoldPage(3, false)
	if pa2 != pa {
		t.Fatal("a second hold got another frame")
	}
	f.PutPage(3, pa, false)
	f.PutPage(3, pa2, false)
	if c.Detached() != 0 {
		t.Fatal("frames detached without a truncate")
	}
	if _, err := f.HoldPage(64, false); !errors.Is(err, ErrRange) {
		t.Fatalf("hold past the end: %v", err)
	}
}

// A writable hold dirties the page and keeps it dirty across
// write-backs, so stores made after one are written by the next; the
// last writable hold leaves it dirty once more.
func TestWritableHoldStaysDirty(t *testing.T) {
	c, fr, d, f := setup(t, 64*PageSize, 1024)
	pa, err := f.HoldPage(5, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.ReadStats().Dirty != 1 {
		t.Fatalf("dirty %d after a writable hold", c.ReadStats().Dirty)
	}
	copy(fr.Page(pa)[100:], "first")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if string(d.snapshot()[5*PageSize+100:5*PageSize+105]) != "first" {
		t.Fatal("store through the hold not written back")
	}
	copy(fr.Page(pa)[100:], "again")
	if c.ReadStats().Dirty != 1 {
		t.Fatal("writably held page clean after write-back")
	}
	f.PutPage(5, pa, true)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if string(d.snapshot()[5*PageSize+100:5*PageSize+105]) != "again" {
		t.Fatal("store after the first write-back lost")
	}
	if s := c.ReadStats(); s.Dirty != 0 || s.Writeback != 0 {
		t.Fatalf("after the last hold and a sync: %+v", s)
	}
}

// Reclaim and drop_caches never take a held page: the mapping and the
// cache must keep sharing one copy.
func TestHeldPageSurvivesReclaim(t *testing.T) {
	c, fr, _, f := setup(t, 64*PageSize, 1024)
	pa, err := f.HoldPage(7, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Read(make([]byte, 64*PageSize), 0)
	c.Shrink(1000)
	c.DropClean()
	if n := c.ReadStats().Block; n != 1 || fr.held() != 1 {
		t.Fatalf("%d pages, %d frames after reclaim; want the held one", n, fr.held())
	}
	copy(fr.Page(pa)[:], "mapped")
	b := make([]byte, 6)
	f.Read(b, 7*PageSize)
	if string(b) != "mapped" {
		t.Fatal("read(2) after reclaim does not see the held page")
	}
	f.PutPage(7, pa, false)
	if c.DropClean() != 1 || fr.held() != 0 {
		t.Fatal("page not dropped once unheld")
	}
}

// A truncate past a held page takes it out of the file (a read after
// the file grows again sees zeros) but frees its frame only with the
// last hold; nothing leaks, whichever goes first.
func TestTruncateHeldPage(t *testing.T) {
	c, fr, _, f := setup(t, 64*PageSize, 1024)
	pa, _ := f.HoldPage(10, true)
	pb, _ := f.HoldPage(10, false)
	copy(fr.Page(pa)[:], "mapped")
	f.Resize(8 * PageSize)
	if _, err := f.HoldPage(10, false); !errors.Is(err, ErrRange) {
		t.Fatal("hold past the new end")
	}
	if c.Detached() != 1 || fr.Page(pa) == nil {
		t.Fatal("held frame not kept after truncate")
	}
	if s := c.ReadStats(); s.Dirty != 0 {
		t.Fatalf("truncated page still dirty: %+v", s)
	}
	f.Resize(64 * PageSize)
	pc, err := f.HoldPage(10, false)
	if err != nil || pc == pa {
		t.Fatalf("hold after regrowing: %#x, %v (old %#x)", pc, err, pa)
	}
	f.PutPage(10, pa, true)
	if fr.Page(pa) == nil {
		t.Fatal("frame freed with a hold left")
	}
	f.PutPage(10, pb, false)
	f.PutPage(10, pc, false)
	if c.Detached() != 0 || fr.Page(pa) != nil {
		t.Fatal("detached frame not freed with its last hold")
	}
	f.Release()
	if fr.held() != 0 {
		t.Fatalf("%d frames leaked", fr.held())
	}
}

// A file released while a page is held (the last close of a device)
// leaves the frame to the hold.
func TestReleaseWithHeldPage(t *testing.T) {
	c, fr, _, f := setup(t, 64*PageSize, 1024)
	pa, _ := f.HoldPage(1, false)
	f.Release()
	if fr.held() != 1 || c.Detached() != 1 {
		t.Fatal("held frame not kept past the file's release")
	}
	f.PutPage(1, pa, false)
	if fr.held() != 0 {
		t.Fatal("frame leaked")
	}
}

// Bytes a mapping stored past the end, in the last page, read as zeros
// once the file grows over them.
func TestGrowZeroesTail(t *testing.T) {
	_, fr, _, f := setup(t, 64*PageSize, 1024)
	f.Resize(PageSize + 512)
	pa, err := f.HoldPage(1, true)
	if err != nil {
		t.Fatal(err)
	}
	copy(fr.Page(pa)[512:], "beyond")
	f.Resize(2 * PageSize)
	b := make([]byte, 6)
	f.Read(b, PageSize+512)
	if !bytes.Equal(b, make([]byte, 6)) {
		t.Fatalf("bytes past the old end read %q", b)
	}
	f.PutPage(1, pa, true)
}

// cleanerDisk is a disk whose mappings (one writable hold per page in
// held) are write-protected on request, as a file system's are.
type cleanerDisk struct {
	*disk
	f     *File
	held  map[uint64]uintptr
	asked [][]uint64
}

func (d *cleanerDisk) CleanPages(idxs []uint64) {
	d.asked = append(d.asked, append([]uint64(nil), idxs...))
	for _, i := range idxs {
		if pa, ok := d.held[i]; ok {
			d.f.Downgrade(i, pa)
			delete(d.held, i)
		}
	}
}

// The flusher's write-back asks the backing to write-protect only the
// dirty pages held writably; a downgraded page is clean once written,
// and a new writable hold (the next store's fault) dirties it again.
// A plain Writeback (a writer's throttling, a shrink) asks nothing.
func TestCleanMappedDowngrades(t *testing.T) {
	fr := newFrames(1024)
	c := New(fr, 1<<20)
	d := &cleanerDisk{disk: newDisk(64 * PageSize), held: map[uint64]uintptr{}}
	f := c.Open(d, 64*PageSize, KindFile)
	d.f = f
	pa, err := f.HoldPage(5, true)
	if err != nil {
		t.Fatal(err)
	}
	d.held[5] = pa
	f.Write([]byte("plain"), 9*PageSize) // dirty, not mapped
	copy(fr.Page(pa)[100:], "mapped")
	if err := f.Writeback(); err != nil || len(d.asked) != 0 || c.ReadStats().Dirty != 1 {
		t.Fatalf("Writeback: %v, asked %v, dirty %d (want the held page still dirty)", err, d.asked, c.ReadStats().Dirty)
	}
	f.Write([]byte("plain"), 9*PageSize)
	c.writebackAll(true)
	if len(d.asked) != 1 || len(d.asked[0]) != 1 || d.asked[0][0] != 5 {
		t.Fatalf("asked to clean %v, want [[5]]", d.asked)
	}
	if got := c.ReadStats().Dirty; got != 0 {
		t.Fatalf("dirty %d after a cleaning write-back, want 0", got)
	}
	if string(d.snapshot()[5*PageSize+100:5*PageSize+106]) != "mapped" {
		t.Fatal("the mapped page's store not written back")
	}
	// The next store faults: a writable hold again, the page dirty.
	pa2, err := f.HoldPage(5, true)
	if err != nil || pa2 != pa || c.ReadStats().Dirty != 1 {
		t.Fatalf("hold after clean: %v, dirty %d", err, c.ReadStats().Dirty)
	}
	if f.wheld.Load() != 1 {
		t.Fatalf("%d pages counted writably held, want 1", f.wheld.Load())
	}
	f.PutPage(5, pa2, true)
	f.PutPage(5, pa, false) // the downgraded hold
	if f.wheld.Load() != 0 {
		t.Fatalf("%d pages counted writably held after the last hold, want 0", f.wheld.Load())
	}
}
