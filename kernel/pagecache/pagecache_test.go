package pagecache

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
)

// memFrames is frames from the Go heap, at most limit of them.
type memFrames struct {
	mu    sync.Mutex
	next  uintptr
	live  map[uintptr]*[PageSize]byte
	limit int
}

func newFrames(limit int) *memFrames {
	return &memFrames{next: PageSize, live: map[uintptr]*[PageSize]byte{}, limit: limit}
}

func (m *memFrames) Alloc() uintptr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.live) >= m.limit {
		return 0
	}
	pa := m.next
	m.next += PageSize
	m.live[pa] = new([PageSize]byte)
	return pa
}

func (m *memFrames) Free(pa uintptr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.live[pa] == nil {
		panic(fmt.Sprintf("free of frame %#x not held", pa))
	}
	delete(m.live, pa)
}

func (m *memFrames) Page(pa uintptr) *[PageSize]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[pa]
}

func (m *memFrames) held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// disk is an in-memory Backing of 512-byte sectors that counts requests
// and fails the sectors in bad.
type disk struct {
	mu              sync.Mutex
	data            []byte
	reads, writes   int
	readBytes       int
	flushes         int
	badRead, badWri map[int64]bool
}

func newDisk(size int) *disk {
	d := &disk{data: make([]byte, size), badRead: map[int64]bool{}, badWri: map[int64]bool{}}
	for i := range d.data {
		d.data[i] = byte(i*7 + i>>9)
	}
	return d
}

var errIO = errors.New("disk: I/O error")

func (d *disk) check(p []byte, off int64, bad map[int64]bool) error {
	if off%512 != 0 || len(p)%512 != 0 || off+int64(len(p)) > int64(len(d.data)) {
		return fmt.Errorf("bad request %d+%d", off, len(p))
	}
	for s := off / 512; s < (off+int64(len(p)))/512; s++ {
		if bad[s] {
			return errIO
		}
	}
	return nil
}

func (d *disk) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reads++
	if err := d.check(p, off, d.badRead); err != nil {
		return 0, err
	}
	d.readBytes += len(p)
	return copy(p, d.data[off:]), nil
}

func (d *disk) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes++
	if err := d.check(p, off, d.badWri); err != nil {
		return 0, err
	}
	return copy(d.data[off:], p), nil
}

func (d *disk) Flush() error {
	d.mu.Lock()
	d.flushes++
	d.mu.Unlock()
	return nil
}

func (d *disk) snapshot() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.data)
}

func setup(t *testing.T, size, frames int) (*Cache, *memFrames, *disk, *File) {
	t.Helper()
	fr := newFrames(frames)
	c := New(fr, 1<<20)
	d := newDisk(size)
	return c, fr, d, c.Open(d, int64(size), KindBlock)
}

func TestReadMatchesDiskAnyAlignment(t *testing.T) {
	const size = 1<<20 + 1536 // a partial last page
	_, _, d, f := setup(t, size, 1024)
	want := d.snapshot()
	rng := rand.New(rand.NewSource(1))
	for range 300 {
		off := rng.Int63n(size + 100)
		n := rng.Intn(20000)
		p := make([]byte, n)
		got, err := f.Read(p, off)
		if err != nil {
			t.Fatal(err)
		}
		exp := 0
		if off < size {
			exp = int(min(int64(n), size-off))
		}
		if got != exp || !bytes.Equal(p[:got], want[min(off, size):min(off, size)+int64(exp)]) {
			t.Fatalf("read %d at %d: got %d bytes, want %d (or wrong bytes)", n, off, got, exp)
		}
	}
}

func TestHitsDoNotReadDisk(t *testing.T) {
	c, _, d, f := setup(t, 1<<20, 1024)
	p := make([]byte, 64<<10)
	f.Read(p, 0)
	f.waitAsync()
	r := d.reads
	f.Read(p, 0)
	f.waitAsync()
	if d.reads != r {
		t.Fatalf("second read of the same range went to the disk (%d requests, then %d)", r, d.reads)
	}
	// The 16 pages read and the next window, read ahead (8 pages).
	if got := c.ReadStats().Block; got != 16+8 {
		t.Fatalf("%d pages cached, want 24", got)
	}
}

func TestSequentialReadAhead(t *testing.T) {
	_, _, d, f := setup(t, 4<<20, 2048)
	p := make([]byte, 4096)
	for off := int64(0); off < 4<<20; off += 4096 {
		if _, err := f.Read(p, off); err != nil {
			t.Fatal(err)
		}
	}
	f.waitAsync()
	// 1024 pages read one at a time: read-ahead must batch them, and the
	// window must reach maxRun (4 MiB in 64-page requests is 16).
	if d.reads > 30 {
		t.Fatalf("sequential 4 KiB reads of 4 MiB took %d disk requests", d.reads)
	}
	// A random reader is not given big windows.
	_, _, d2, f2 := setup(t, 4<<20, 2048)
	rng := rand.New(rand.NewSource(2))
	for range 50 {
		f2.Read(p[:1], rng.Int63n(4<<20))
	}
	if d2.readBytes > 50*minReadAhead*PageSize {
		t.Fatalf("random 1-byte reads read %d bytes from the disk", d2.readBytes)
	}
}

func TestWriteBackAndSync(t *testing.T) {
	c, _, d, f := setup(t, 1<<20, 1024)
	want := d.snapshot()
	rng := rand.New(rand.NewSource(3))
	for range 200 {
		off := rng.Int63n(1 << 20)
		p := make([]byte, rng.Intn(9000))
		rng.Read(p)
		n, err := f.Write(p, off)
		if err != nil {
			t.Fatal(err)
		}
		copy(want[off:], p[:n])
	}
	if c.ReadStats().Dirty == 0 {
		t.Fatal("no dirty pages after writes")
	}
	if bytes.Equal(d.snapshot(), want) {
		t.Fatal("writes reached the disk before write-back")
	}
	got := make([]byte, 1<<20)
	if _, err := f.Read(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read after write does not see the writes (%v)", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.snapshot(), want) {
		t.Fatal("disk differs from what was written after Sync")
	}
	if d.flushes != 1 {
		t.Fatalf("Sync flushed the disk %d times, want 1", d.flushes)
	}
	if s := c.ReadStats(); s.Dirty != 0 || s.Writeback != 0 {
		t.Fatalf("after Sync: %+v", s)
	}
}

func TestFullPageWriteReadsNothing(t *testing.T) {
	_, _, d, f := setup(t, 1<<20, 1024)
	f.Write(make([]byte, 64<<10), 8192)
	if d.reads != 0 {
		t.Fatalf("whole-page writes read the disk %d times", d.reads)
	}
	f.Write([]byte{1}, 100)
	if d.reads != 1 {
		t.Fatalf("a partial-page write read the disk %d times, want 1", d.reads)
	}
	if f.Sync(); d.writes != 2 {
		t.Fatalf("write-back of two runs took %d requests", d.writes)
	}
}

func TestEndOfFile(t *testing.T) {
	const size = 8192 + 512
	_, _, d, f := setup(t, size, 64)
	if n, err := f.Write([]byte("abcdef"), size-3); n != 3 || err != nil {
		t.Fatalf("write across the end: %d, %v", n, err)
	}
	if _, err := f.Write([]byte("x"), size); !errors.Is(err, ErrRange) {
		t.Fatalf("write at the end: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := string(d.snapshot()[size-3:]); got != "abc" {
		t.Fatalf("end of disk %q", got)
	}
}

func TestFailedWriteBackReportedOnce(t *testing.T) {
	c, _, d, f := setup(t, 1<<20, 1024)
	d.badWri[20] = true // in page 2
	p := bytes.Repeat([]byte{0xaa}, 4*PageSize)
	f.Write(p, 0)
	if err := f.Sync(); !errors.Is(err, errIO) {
		t.Fatalf("Sync with a failing sector: %v", err)
	}
	if s := c.ReadStats(); s.Dirty != 0 || s.Writeback != 0 {
		t.Fatalf("after a failed write-back: %+v", s)
	}
	got := make([]byte, len(p))
	if f.Read(got, 0); !bytes.Equal(got, p) {
		t.Fatal("written data not kept after a failed write-back")
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("second Sync reported the failure again: %v", err)
	}
	// A background failure reaches the next Sync, once.
	f.Write(p, 0)
	c.WritebackAll()
	if err := f.Sync(); !errors.Is(err, errIO) {
		t.Fatalf("Sync after a failed background write-back: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync after the report: %v", err)
	}
	delete(d.badWri, 20)
	f.Write(p, 0)
	if err := f.Sync(); err != nil {
		t.Fatalf("Sync once the sector works: %v", err)
	}
	if !bytes.Equal(d.snapshot()[:len(p)], p) {
		t.Fatal("pages not written once the disk worked")
	}
	if n := c.Shrink(1000); n != 4 {
		t.Fatalf("Shrink freed %d, want the 4 pages", n)
	}
}

func TestReadErrorOnlyForBadPage(t *testing.T) {
	c, _, d, f := setup(t, 1<<20, 1024)
	d.badRead[8*10+3] = true // page 10
	p := make([]byte, PageSize)
	if _, err := f.Read(p[:512], 10*PageSize+3*512); !errors.Is(err, errIO) {
		t.Fatalf("read of a bad sector: %v", err)
	}
	if _, err := f.Read(p, 10*PageSize); !errors.Is(err, errIO) {
		t.Fatalf("second read of a bad sector: %v", err)
	}
	// Read-ahead from page 6 covers page 10: its failure must not fail
	// the read of page 6, and page 10 must not be cached.
	if n, err := f.Read(p, 6*PageSize); n != PageSize || err != nil {
		t.Fatalf("read before the bad page: %d, %v", n, err)
	}
	if n, err := f.Read(p, 11*PageSize); n != PageSize || err != nil {
		t.Fatalf("read after the bad page: %d, %v", n, err)
	}
	want := d.snapshot()
	if !bytes.Equal(p, want[11*PageSize:12*PageSize]) {
		t.Fatal("wrong bytes after the bad page")
	}
	n, err := f.Read(make([]byte, 8*PageSize), 8*PageSize)
	if n != 2*PageSize || !errors.Is(err, errIO) {
		t.Fatalf("read across the bad page: %d, %v", n, err)
	}
	_ = c
}

func TestShrinkAndDrop(t *testing.T) {
	c, fr, _, f := setup(t, 1<<20, 1024)
	f.Read(make([]byte, 1<<20), 0)
	if fr.held() != 256 || c.ReadStats().Block != 256 {
		t.Fatalf("%d frames held, %d pages", fr.held(), c.ReadStats().Block)
	}
	f.Write(make([]byte, PageSize), 0)
	if n := c.Shrink(100); n != 100 {
		t.Fatalf("Shrink(100) freed %d", n)
	}
	if n := c.DropClean(); n != 155 {
		t.Fatalf("DropClean freed %d, want 155 (the dirty page stays)", n)
	}
	if fr.held() != 1 {
		t.Fatalf("%d frames held after dropping, want the dirty one", fr.held())
	}
	// Under pressure, dirty pages are written and dropped.
	if n := c.Shrink(10); n != 1 || fr.held() != 0 {
		t.Fatalf("Shrink freed %d, %d held", n, fr.held())
	}
}

func TestOutOfFramesShrinksItself(t *testing.T) {
	c, fr, d, f := setup(t, 4<<20, 100)
	want := d.snapshot()
	p := make([]byte, 4<<20)
	if n, err := f.Read(p, 0); n != len(p) || err != nil || !bytes.Equal(p, want) {
		t.Fatalf("read of 4 MiB through 100 frames: %d, %v", n, err)
	}
	rng := rand.New(rand.NewSource(4))
	rng.Read(p)
	if n, err := f.Write(p, 0); n != len(p) || err != nil {
		t.Fatalf("write of 4 MiB through 100 frames: %d, %v", n, err)
	}
	if err := f.Sync(); err != nil || !bytes.Equal(d.snapshot(), p) {
		t.Fatalf("disk after Sync: %v", err)
	}
	if fr.held() > 100 {
		t.Fatal("over the frame limit")
	}
	_ = c
}

func TestReleaseWritesAndFrees(t *testing.T) {
	c, fr, d, f := setup(t, 1<<20, 1024)
	f.Write([]byte("hello"), 5000)
	f.Read(make([]byte, 100), 200000)
	if err := f.Release(); err != nil {
		t.Fatal(err)
	}
	if fr.held() != 0 || c.ReadStats() != (Stats{}) {
		t.Fatalf("after Release: %d frames, %+v", fr.held(), c.ReadStats())
	}
	if string(d.snapshot()[5000:5005]) != "hello" {
		t.Fatal("Release lost a write")
	}
}

func TestInvalidate(t *testing.T) {
	c, _, d, f := setup(t, 1<<20, 1024)
	f.Read(make([]byte, 1<<20), 0)
	f.Write([]byte{9}, 3*PageSize)
	d.mu.Lock()
	d.data[5*PageSize] = 0x77
	d.mu.Unlock()
	f.Invalidate(2*PageSize, 4*PageSize) // pages 2-5, the dirty 3 too
	b := make([]byte, 1)
	f.Read(b, 5*PageSize)
	if b[0] != 0x77 {
		t.Fatal("invalidated page not read again")
	}
	if c.ReadStats().Dirty != 0 {
		t.Fatal("dirty page in the range kept")
	}
	f.Invalidate(0, 1<<20)
	if n := c.ReadStats().Block; n > 8 {
		t.Fatalf("%d pages left after invalidating all", n)
	}
}

func TestConcurrent(t *testing.T) {
	c, _, d, f := setup(t, 2<<20, 300)
	const workers = 8
	region := int64(2<<20) / workers
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			base := int64(w) * region
			for i := range 200 {
				off := base + rng.Int63n(region-5000)
				p := bytes.Repeat([]byte{byte(w)}, rng.Intn(5000))
				f.Write(p, off)
				f.Read(make([]byte, 3000), rng.Int63n(2<<20-3000))
				if i%50 == 0 {
					f.Sync()
				}
				if i%70 == 0 {
					c.Shrink(20)
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	img := d.snapshot()
	// Each region holds only its writer's byte or the original pattern.
	orig := newDisk(2 << 20).data
	for i, b := range img {
		if b != orig[i] && b != byte(int64(i)/region) {
			t.Fatalf("byte %d is %d", i, b)
		}
	}
	if s := c.ReadStats(); s.Dirty != 0 || s.Writeback != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestFlusherWritesBack(t *testing.T) {
	fr := newFrames(1000)
	c := New(fr, 2*maxRun) // a low limit: writers kick the flusher
	d := newDisk(1 << 20)
	f := c.Open(d, 1<<20, KindBlock)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.Flusher(stop); close(done) }()
	f.Write(make([]byte, 512<<10), 0) // 128 pages: over half the limit
	for c.ReadStats().Dirty != 0 {
		f.throttle() // wait for the flusher (kicked again each round)
	}
	close(stop)
	<-done
	if !bytes.Equal(d.snapshot()[:512<<10], make([]byte, 512<<10)) {
		t.Fatal("flusher did not write the pages")
	}
}

// blockingDisk holds reads until released, to race an invalidation
// with a read-in.
type blockingDisk struct {
	*disk
	started, release chan struct{}
}

func (d *blockingDisk) ReadAt(p []byte, off int64) (int, error) {
	d.started <- struct{}{}
	<-d.release
	return d.disk.ReadAt(p, off)
}

func TestInvalidateDuringReadIn(t *testing.T) {
	fr := newFrames(100)
	c := New(fr, 1<<20)
	d := &blockingDisk{newDisk(1 << 20), make(chan struct{}), make(chan struct{})}
	f := c.Open(d, 1<<20, KindFile)
	done := make(chan struct{})
	go func() {
		f.Read(make([]byte, 1), 0)
		close(done)
	}()
	<-d.started
	// The write lands below the cache while the old bytes are read in.
	d.disk.WriteAt(bytes.Repeat([]byte{0x5a}, 512), 0)
	f.Invalidate(0, 512)
	close(d.release)
	// The reader finds its page dropped and reads it again.
	go func() {
		for range d.started {
		}
	}()
	<-done
	b := make([]byte, 1)
	f.Read(b, 0)
	if b[0] != 0x5a {
		t.Fatalf("read after the invalidation saw %#x, the bytes from before the write", b[0])
	}
}
