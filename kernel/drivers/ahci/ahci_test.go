package ahci

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/pci"
)

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logs) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func newDisk(size, ss int, ncq bool) *simDisk {
	d := &simDisk{data: make([]byte, size), ss: ss, ncq: ncq, bad: map[uint64]bool{}, hang: map[uint64]bool{}}
	for i := range d.data {
		d.data[i] = byte(i*13 + i>>9)
	}
	return d
}

// start brings a simulated HBA up with the given disks on ports 0...
func start(t *testing.T, ncq, s64a bool, disks ...*simDisk) (*Controller, *sim, *logs) {
	t.Helper()
	return startOn(t, false, ncq, s64a, disks...)
}

func startOn(t *testing.T, intx, ncq, s64a bool, disks ...*simDisk) (*Controller, *sim, *logs) {
	t.Helper()
	h := newSim(ncq, s64a, disks...)
	l := &logs{}
	n := 0
	c, err := New(simFunction(), simPlatform{h, intx}, Config{DMA: h.mem, Log: l.add, Info: l.add,
		Name: func() string { n++; return fmt.Sprintf("sd%c", 'a'+n-1) }})
	if err != nil {
		t.Fatal(err)
	}
	c.wait = func(time.Duration) { time.Sleep(10 * time.Microsecond) }
	t.Cleanup(func() {
		h.irq.Close()
		close(h.stop)
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.seen) > 0 {
			t.Errorf("the HBA saw protocol errors: %q", h.seen)
		}
	})
	return c, h, l
}

func TestBringUp(t *testing.T) {
	cd := newDisk(1<<20, 512, false)
	cd.atapi = true
	c, h, l := start(t, true, true, newDisk(4<<20, 512, true), nil, cd)
	if h.resets != 1 {
		t.Errorf("HBA reset %d times", h.resets)
	}
	if len(c.Disks()) != 1 {
		t.Fatalf("disks %d; log %q", len(c.Disks()), l.lines)
	}
	k := c.Disks()[0]
	if k.Name() != "sda" || k.Sectors() != 8192 || k.SectorSize() != 512 || k.Model() != "QEMU SATA DISK" {
		t.Errorf("disk %s %d×%d %q", k.Name(), k.Sectors(), k.SectorSize(), k.Model())
	}
	if ok, depth := k.NCQ(); !ok || depth != 32 {
		t.Errorf("NCQ %v depth %d", ok, depth)
	}
	if c.Interrupt() != pci.MSI {
		t.Errorf("interrupt %v", c.Interrupt())
	}
	if !l.has("port 2: ATAPI") {
		t.Errorf("ATAPI device not reported: %q", l.lines)
	}
	// The memory of ports without a disk went back.
	if want := 1 + 32*(1+dataPages); h.mem.inUse != want {
		t.Errorf("%d DMA pages in use, want %d", h.mem.inUse, want)
	}
}

// whole writes a pattern over the whole disk from several goroutines in
// pieces of varied size and reads it back by other pieces.
func whole(t *testing.T, k *Disk, d *simDisk) {
	t.Helper()
	size := int(blk.Size(k))
	want := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	part := size / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			for off := w * part; off < (w+1)*part; {
				n := min((1+rng.IntN(64))*k.ss*4, (w+1)*part-off)
				if _, err := k.WriteAt(want[off:off+n], int64(off)); err != nil {
					errs <- err
					return
				}
				off += n
			}
		}()
	}
	wg.Wait()
	if !bytes.Equal(d.data, want) {
		t.Fatalf("disk contents differ from what was written")
	}
	got := make([]byte, size)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := k.ReadAt(got[w*part:(w+1)*part], int64(w*part)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back differs")
	}
}

func TestNCQ(t *testing.T) {
	d := newDisk(8<<20, 512, true)
	c, _, _ := start(t, true, true, d)
	whole(t, c.Disks()[0], d)
	if d.maxQueued < 4 {
		t.Errorf("at most %d queued commands outstanding", d.maxQueued)
	}
}

func TestDMAExt(t *testing.T) {
	for _, ncqHBA := range []bool{false, true} {
		d := newDisk(2<<20, 512, !ncqHBA) // NCQ on one side only: not used
		c, _, _ := start(t, ncqHBA, true, d)
		k := c.Disks()[0]
		if ok, depth := k.NCQ(); ok || depth != 1 {
			t.Errorf("NCQ %v depth %d", ok, depth)
		}
		whole(t, k, d)
		if d.maxQueued != 0 {
			t.Errorf("queued commands issued")
		}
	}
}

func Test32BitDMA(t *testing.T) {
	d := newDisk(2<<20, 512, true)
	c, h, _ := start(t, true, false, d)
	h.mem.high = true // every page asked for without low would be above 4 GiB
	whole(t, c.Disks()[0], d)
}

func Test4KSectors(t *testing.T) {
	d := newDisk(4<<20, 4096, true)
	c, _, _ := start(t, true, true, d)
	k := c.Disks()[0]
	if k.SectorSize() != 4096 || k.Sectors() != 1024 {
		t.Fatalf("%d×%d", k.Sectors(), k.SectorSize())
	}
	whole(t, k, d)
	if _, err := k.ReadAt(make([]byte, 512), 0); !errors.Is(err, blk.ErrAlign) {
		t.Errorf("512-byte read on a 4K disk: %v", err)
	}
}

func TestFlush(t *testing.T) {
	d := newDisk(1<<20, 512, true)
	c, _, _ := start(t, true, true, d)
	if err := c.Disks()[0].Flush(); err != nil || d.flushes != 1 {
		t.Errorf("flush: %v, %d flushes", err, d.flushes)
	}
}

// A bad sector fails its own request with EIO, logged with the disk and
// sector; queued requests caught in the error are retried and succeed.
func TestBadSector(t *testing.T) {
	for _, ncq := range []bool{true, false} {
		d := newDisk(4<<20, 512, ncq)
		d.bad[1000] = true
		c, _, l := start(t, true, true, d)
		k := c.Disks()[0]
		var wg sync.WaitGroup
		errs := make([]error, 16)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = k.ReadAt(make([]byte, 64<<10), int64(i)*(64<<10))
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if (i == 7) != (err != nil) { // sector 1000 is in the 8th 64 KiB
				t.Errorf("ncq %v: request %d: %v", ncq, i, err)
			}
		}
		if !errors.Is(errs[7], blk.ErrIO) || !strings.Contains(errs[7].Error(), "sda: sector 896") {
			t.Errorf("ncq %v: error %v", ncq, errs[7])
		}
		if !l.has("ahci sda: sector 896:") {
			t.Errorf("ncq %v: not logged: %q", ncq, l.lines)
		}
		// The port works afterwards.
		if _, err := k.ReadAt(make([]byte, 4096), 0); err != nil {
			t.Errorf("ncq %v: after the error: %v", ncq, err)
		}
	}
}

func TestTimeout(t *testing.T) {
	for _, ncq := range []bool{true, false} {
		d := newDisk(1<<20, 512, ncq)
		d.hang[64] = true
		c, h, l := start(t, true, true, d)
		k := c.Disks()[0]
		k.Timeout = 100 * time.Millisecond
		t0 := time.Now()
		_, err := k.ReadAt(make([]byte, 512), 64*512)
		if !errors.Is(err, blk.ErrTimeout) || time.Since(t0) > 5*time.Second {
			t.Errorf("ncq %v: %v after %v", ncq, err, time.Since(t0))
		}
		if !l.has("not completed after") || h.comreset == 0 {
			t.Errorf("ncq %v: timeout not reported or no reset: %q", ncq, l.lines)
		}
		if _, err := k.ReadAt(make([]byte, 512), 0); err != nil {
			t.Errorf("ncq %v: after the timeout: %v", ncq, err)
		}
	}
}

func TestBadByteCount(t *testing.T) {
	d := newDisk(1<<20, 512, false)
	c, _, _ := start(t, true, true, d)
	d.shortPRDB = true
	if _, err := c.Disks()[0].ReadAt(make([]byte, 4096), 0); !errors.Is(err, blk.ErrIO) || !strings.Contains(err.Error(), "moved 4095 bytes of 4096") {
		t.Errorf("short byte count: %v", err)
	}
}

func TestStrayBits(t *testing.T) {
	d := newDisk(1<<20, 512, false) // one slot in use: 31 never is
	c, _, l := start(t, true, true, d)
	d.strayCI = true
	whole(t, c.Disks()[0], d)
	if !l.has("never issued") {
		t.Errorf("stray completion bits not reported")
	}
}

func TestIdentifyChecked(t *testing.T) {
	d := newDisk(1<<20, 512, true)
	d.hugeSize = true
	c, _, l := start(t, true, true, d)
	if len(c.Disks()) != 0 || !l.has("capacity") {
		t.Errorf("a disk of 2^50 sectors was taken: %q", l.lines)
	}
}

func TestINTx(t *testing.T) {
	d := newDisk(2<<20, 512, true)
	c, _, _ := startOn(t, true, true, true, d)
	if c.Interrupt() != pci.INTx {
		t.Errorf("interrupt %v", c.Interrupt())
	}
	whole(t, c.Disks()[0], d)
}

// QEMU's second error event for a failed queued command halts the port
// under the next command, a non-queued flush here: it goes again and
// succeeds.
func TestLateErrorEvent(t *testing.T) {
	d := newDisk(1<<20, 512, true)
	d.bad[100] = true
	d.lateTFES = true
	c, _, _ := start(t, true, true, d)
	k := c.Disks()[0]
	if _, err := k.ReadAt(make([]byte, 512), 100*512); !errors.Is(err, blk.ErrIO) {
		t.Fatalf("bad sector: %v", err)
	}
	d.lateTFES = false
	if err := k.Flush(); err != nil {
		t.Errorf("flush after the late event: %v", err)
	}
	if d.flushes != 1 {
		t.Errorf("%d flushes", d.flushes)
	}
}

// A command aborted by restart after restart gives up with EIO.
func TestEndlessRestarts(t *testing.T) {
	d := newDisk(1<<20, 512, false)
	c, h, _ := start(t, true, true, d)
	k := c.Disks()[0]
	h.mu.Lock()
	d.lateAlways = true
	h.mu.Unlock()
	_, err := k.ReadAt(make([]byte, 512), 0)
	if !errors.Is(err, blk.ErrIO) || !strings.Contains(err.Error(), "aborted by 4 port restarts") {
		t.Errorf("got %v", err)
	}
}

// A 4 KiB read allocates nothing: the port's one timer times commands
// out, and a one-command transfer keeps no per-command error list
// (before, 5 allocations a read). The simulated HBA allocates none
// either: AllocsPerRun would count its own too.
func TestReadAllocations(t *testing.T) {
	for _, ncq := range []bool{true, false} {
		d := newDisk(1<<20, 512, ncq)
		c, _, _ := start(t, ncq, true, d)
		k := c.Disks()[0]
		p := make([]byte, 4096)
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := k.ReadAt(p, 8192); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 0 && !raceEnabled {
			t.Errorf("ncq %v: %.1f allocations per 4 KiB read, want none", ncq, allocs)
		}
	}
}
