package pagecache

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// gatedDisk logs its reads as (first page, pages) and holds each read
// at or past page gate until the test lets it go (release), reporting
// it on started first.
type gatedDisk struct {
	*disk
	gate     int64
	started  chan [2]int64
	release  chan struct{}
	mu       sync.Mutex
	requests [][2]int64
}

func newGated(size int, gate int64) *gatedDisk {
	return &gatedDisk{disk: newDisk(size), gate: gate, started: make(chan [2]int64, 1000), release: make(chan struct{}, 1000)}
}

func (d *gatedDisk) ReadAt(p []byte, off int64) (int, error) {
	r := [2]int64{off / PageSize, int64(len(p)+PageSize-1) / PageSize}
	d.mu.Lock()
	d.requests = append(d.requests, r)
	d.mu.Unlock()
	if r[0] >= d.gate {
		d.started <- r
		<-d.release
	}
	return d.disk.ReadAt(p, off)
}

func (d *gatedDisk) log() [][2]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][2]int64(nil), d.requests...)
}

// readPage reads page idx of f, which must hold want's bytes (the
// disk's: newDisk's pattern).
func readPage(t *testing.T, f *File, idx int64) {
	t.Helper()
	p := make([]byte, PageSize)
	if n, err := f.Read(p, idx*PageSize); n != PageSize || err != nil {
		t.Fatalf("read of page %d: %d, %v", idx, n, err)
	}
	if !bytes.Equal(p, pattern[idx*PageSize:(idx+1)*PageSize]) {
		t.Fatalf("page %d: wrong bytes", idx)
	}
}

// A sequential reader's windows double and are read while it copies:
// the read that meets the marker returns with the next window still on
// the device.
func TestReadAheadAsyncWindows(t *testing.T) {
	fr := newFrames(1024)
	c := New(fr, 1<<20)
	d := newGated(4<<20, 4) // pages 0-3 (the first window) pass at once
	f := c.Open(d, 4<<20, KindBlock)
	readPage(t, f, 0) // a miss: pages 0-3, the marker on page 1
	// Page 1's hit starts pages 4-11 and returns while they are read.
	readPage(t, f, 1)
	if r := <-d.started; r != [2]int64{4, 8} {
		t.Fatalf("second window %v, want pages 4-11", r)
	}
	readPage(t, f, 2)
	readPage(t, f, 3)
	// Page 4 waits for its window, then starts the next one (16 pages).
	d.release <- struct{}{}
	readPage(t, f, 4)
	if r := <-d.started; r != [2]int64{12, 16} {
		t.Fatalf("third window %v, want pages 12-27", r)
	}
	d.release <- struct{}{}
	// The rest of the file: the windows grow to maxRun and stay there.
	go func() {
		for range d.started {
			d.release <- struct{}{}
		}
	}()
	for idx := int64(5); idx < 1024; idx++ {
		readPage(t, f, idx)
	}
	f.waitAsync()
	close(d.started)
	want := [][2]int64{{0, 4}, {4, 8}, {12, 16}, {28, 32}}
	for at := int64(60); at < 1024; at += maxRun {
		want = append(want, [2]int64{at, min(maxRun, 1024-at)})
	}
	if got := d.log(); !equalRequests(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if err := f.Release(); err != nil {
		t.Fatal(err)
	}
	if fr.held() != 0 || c.raPages.Load() != 0 || c.ReadStats() != (Stats{}) {
		t.Fatalf("after Release: %d frames, %d read-ahead pages, %+v", fr.held(), c.raPages.Load(), c.ReadStats())
	}
}

// pattern is what newDisk holds, for disks of up to 16 MiB.
var pattern = newDisk(16 << 20).data

func equalRequests(a, b [][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Random reads never read ahead asynchronously, and one in the middle
// of a stream makes its pending marker stale.
func TestReadAheadStopsOnRandomAccess(t *testing.T) {
	_, _, d, f := setup(t, 16<<20, 4096)
	// Pages far apart, none next to a cached one: each miss reads its
	// own small window and nothing more.
	for i, idx := range []int64{100, 3000, 700, 2100, 1500, 40, 3900, 1200} {
		readPage(t, f, idx)
		readPage(t, f, idx+1) // within the window: no marker there
		f.waitAsync()
		if d.reads != i+1 || d.readBytes != (i+1)*minReadAhead*PageSize {
			t.Fatalf("after %d random reads: %d requests, %d bytes", i+1, d.reads, d.readBytes)
		}
	}
	// A stream from 0 leaves its marker on page 1; a random read
	// elsewhere moves on, and the marker then starts nothing.
	_, _, d2, f2 := setup(t, 16<<20, 4096)
	readPage(t, f2, 0)
	readPage(t, f2, 2000)
	readPage(t, f2, 1)
	f2.waitAsync()
	if d2.reads != 2 {
		t.Fatalf("a stale marker started a read: %d requests", d2.reads)
	}
}

// An asynchronous window with a bad sector fails only the reader of
// that page: the pages before and after it read, the same stream goes
// on past it, and nothing is left in flight or held.
func TestReadAheadErrorOnlyForItsPage(t *testing.T) {
	c, fr, d, f := setup(t, 2<<20, 1024)
	const bad = 40 // in the third window (pages 28-59)
	d.mu.Lock()
	d.badRead[bad*8+5] = true
	d.mu.Unlock()
	p := make([]byte, PageSize)
	for idx := int64(0); idx < 512; idx++ {
		n, err := f.Read(p, idx*PageSize)
		if idx == bad {
			if n != 0 || !errors.Is(err, errIO) {
				t.Fatalf("read of the bad page: %d, %v", n, err)
			}
			continue
		}
		if n != PageSize || err != nil || !bytes.Equal(p, pattern[idx*PageSize:(idx+1)*PageSize]) {
			t.Fatalf("read of page %d: %d, %v", idx, n, err)
		}
	}
	// Another reader of the bad page sees the error too; its
	// neighbours read.
	if _, err := f.Read(p, bad*PageSize); !errors.Is(err, errIO) {
		t.Fatalf("second read of the bad page: %v", err)
	}
	readPage(t, f, bad-1)
	readPage(t, f, bad+1)
	if err := f.Release(); err != nil {
		t.Fatal(err)
	}
	if fr.held() != 0 || c.raPages.Load() != 0 {
		t.Fatalf("after Release: %d frames held, %d read-ahead pages", fr.held(), c.raPages.Load())
	}
}

// Read-ahead takes only free frames: with the frame source nearly
// exhausted, a stream reads on synchronously and stays within it.
func TestReadAheadWithinFreeFrames(t *testing.T) {
	c, fr, d, f := setup(t, 4<<20, 40)
	for idx := int64(0); idx < 1024; idx++ {
		readPage(t, f, idx)
		if fr.held() > 40 {
			t.Fatalf("%d frames held, limit 40", fr.held())
		}
	}
	f.waitAsync()
	if c.raPages.Load() != 0 {
		t.Fatalf("%d read-ahead pages counted in flight after the stream", c.raPages.Load())
	}
	// Pages read ahead are not pushed out before they are read.
	if d.readBytes > 2*4<<20 {
		t.Fatalf("a 4 MiB stream read %d bytes from the disk", d.readBytes)
	}
}

// At most maxAsyncPages are in flight however many streams read.
func TestReadAheadBoundedInFlight(t *testing.T) {
	fr := newFrames(1 << 16)
	c := New(fr, 1<<20)
	d := newGated(4<<20, 4)
	var files []*File
	for range 200 {
		f := c.Open(d, 4<<20, KindBlock)
		files = append(files, f)
		readPage(t, f, 0)
		readPage(t, f, 1) // starts a window of 8 pages, held by the disk
	}
	// 128 windows fit; the other streams' markers started nothing.
	if n := c.raPages.Load(); n != maxAsyncPages {
		t.Fatalf("%d pages in flight, want the bound, %d", n, maxAsyncPages)
	}
	for range maxAsyncPages / 8 {
		<-d.started
		d.release <- struct{}{}
	}
	for _, f := range files {
		f.waitAsync()
		if err := f.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if fr.held() != 0 || c.raPages.Load() != 0 || len(d.started) != 0 {
		t.Fatalf("after Release: %d frames held, %d read-ahead pages, %d more reads", fr.held(), c.raPages.Load(), len(d.started))
	}
}

// Releasing a file waits for its read-ahead and frees every page.
func TestReleaseDuringReadAhead(t *testing.T) {
	fr := newFrames(1024)
	c := New(fr, 1<<20)
	d := newGated(1<<20, 4)
	f := c.Open(d, 1<<20, KindBlock)
	readPage(t, f, 0)
	readPage(t, f, 1)
	<-d.started
	done := make(chan error)
	go func() { done <- f.Release() }()
	d.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fr.held() != 0 || c.raPages.Load() != 0 || c.ReadStats() != (Stats{}) {
		t.Fatalf("after Release: %d frames, %d read-ahead pages, %+v", fr.held(), c.raPages.Load(), c.ReadStats())
	}
}

// ReadCached copies only what is cached, into scattered buffers, and
// stops short of a page not cached, being read in or marked.
func TestReadCached(t *testing.T) {
	const size = 1<<20 + 1536 // whole sectors, the last page in part
	_, _, d, f := setup(t, size, 1024)
	want := d.snapshot()
	split := func(n int, cuts ...int) [][]byte {
		buf := make([]byte, n)
		var segs [][]byte
		last := 0
		for _, c := range append(cuts, n) {
			segs = append(segs, buf[last:c])
			last = c
		}
		return segs
	}
	join := func(segs [][]byte) []byte { return bytes.Join(segs, nil) }
	// Nothing cached: nothing copied.
	if n, all := f.ReadCached(split(100, 10), 5000); n != 0 || all {
		t.Fatalf("cold: %d, %v", n, all)
	}
	// Pages 0-15 read (the marker, on page 16 past them, is not met).
	f.Read(make([]byte, 64<<10), 0)
	f.waitAsync()
	segs := split(30000, 1, 4095, 4097, 20000)
	if n, all := f.ReadCached(segs, 777); n != 30000 || !all || !bytes.Equal(join(segs), want[777:777+30000]) {
		t.Fatalf("cached range: %d, %v", n, all)
	}
	// Across the end of what is cached: the 16 pages read, then the
	// marker (page 16, the first of the window read ahead) stops it.
	segs = split(200<<10, 5)
	n, all := f.ReadCached(segs, 3)
	if all || n != 16*PageSize-3 || !bytes.Equal(join(segs)[:n], want[3:3+n]) {
		t.Fatalf("up to the marker: %d, %v", n, all)
	}
	// At the end of the file: all there is.
	f.Read(make([]byte, 8192), size-5000)
	f.waitAsync()
	segs = split(8000, 100)
	if n, all := f.ReadCached(segs, size-1000); n != 1000 || !all || !bytes.Equal(join(segs)[:n], want[size-1000:]) {
		t.Fatalf("at the end: %d, %v", n, all)
	}
	if n, all := f.ReadCached(segs, size); n != 0 || !all {
		t.Fatalf("past the end: %d, %v", n, all)
	}
}

// Dropping clean pages waits for the read-ahead in flight, so that
// nothing it reads stays cached.
func TestDropCleanDuringReadAhead(t *testing.T) {
	for _, whole := range []bool{false, true} {
		fr := newFrames(1024)
		c := New(fr, 1<<20)
		d := newGated(1<<20, 4)
		f := c.Open(d, 1<<20, KindBlock)
		readPage(t, f, 0)
		readPage(t, f, 1) // starts pages 4-11, held by the disk
		<-d.started
		done := make(chan struct{})
		go func() {
			if whole {
				c.DropClean()
			} else {
				f.DropClean()
			}
			close(done)
		}()
		d.release <- struct{}{}
		<-done
		if fr.held() != 0 || c.ReadStats().Block != 0 {
			t.Fatalf("whole cache %v: %d frames, %d pages left", whole, fr.held(), c.ReadStats().Block)
		}
	}
}
