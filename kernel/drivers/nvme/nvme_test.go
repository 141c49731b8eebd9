package nvme_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/nvme"
	"shortbread/kernel/drivers/nvme/nvmetest"
	"shortbread/kernel/drivers/pci"
)

type logger struct {
	mu    sync.Mutex
	lines []string
}

func (l *logger) log(f string, a ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
	l.mu.Unlock()
}

func (l *logger) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func (l *logger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

type setup struct {
	queues  int
	timeout time.Duration
	cpu     func() int
	bootIRQ bool // Config.BootCPUIRQs
}

// open brings a simulated controller up with the driver.
func open(t *testing.T, dev *nvmetest.Controller, s setup) (*nvme.Controller, *logger, error) {
	t.Helper()
	devs, _ := pci.Scan(dev.Cfg)
	var d *pci.Device
	for _, x := range devs {
		if x.Class == nvme.ClassNVMe {
			d = x
		}
	}
	if d == nil {
		t.Fatal("no NVMe function found")
	}
	l := &logger{}
	if s.queues == 0 {
		s.queues = 1
	}
	c, err := nvme.New(d, dev.Platform(), nvme.Config{Name: "nvme0", DMA: dev.Mem, Log: l.log,
		Queues: s.queues, CPU: s.cpu, Timeout: s.timeout, ReadyTimeout: 2 * time.Second, BootCPUIRQs: s.bootIRQ})
	return c, l, err
}

func mustOpen(t *testing.T, dev *nvmetest.Controller, s setup) (*nvme.Controller, *logger) {
	t.Helper()
	c, l, err := open(t, dev, s)
	if err != nil {
		t.Fatalf("New: %v\nlog:\n%v", err, l)
	}
	t.Cleanup(func() {
		if p := dev.Problems(); len(p) > 0 {
			t.Errorf("controller saw protocol errors: %q", p)
		}
	})
	return c, l
}

func ns(size int, shift uint) *nvmetest.Namespace {
	return &nvmetest.Namespace{Data: make([]byte, size), Shift: shift}
}

func TestBringUp(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 8, VWC: true}, ns(4<<20, 9), ns(1<<20, 12))
	c, _ := mustOpen(t, dev, setup{queues: 4})
	if c.Queues() != 4 {
		t.Errorf("%d I/O queues, want 4", c.Queues())
	}
	if k, n := c.Interrupts(); k != pci.MSIX || n != 4 {
		t.Errorf("interrupts %v x %d, want MSI-X x 4", k, n)
	}
	if c.Model() != "nvmetest controller" || c.Serial() != "SIM0001" || c.Version() != "1.4" || !c.VolatileCache() {
		t.Errorf("identity %q %q %q vwc %v", c.Model(), c.Serial(), c.Version(), c.VolatileCache())
	}
	nss := c.Namespaces()
	if len(nss) != 2 {
		t.Fatalf("%d namespaces", len(nss))
	}
	var _ blk.Device = nss[0]
	for i, want := range []struct {
		name    string
		ss      int
		sectors uint64
	}{{"nvme0n1", 512, 8192}, {"nvme0n2", 4096, 256}} {
		n := nss[i]
		if n.Name() != want.name || n.SectorSize() != want.ss || n.Sectors() != want.sectors || n.ID() != uint32(i+1) {
			t.Errorf("namespace %d: %s %d x %d", i, n.Name(), n.Sectors(), n.SectorSize())
		}
	}
}

// A controller the firmware left running is reset before it is set up.
func TestResetsEnabledController(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 2, Enabled: true}, ns(1<<20, 9))
	c, _ := mustOpen(t, dev, setup{})
	if len(c.Namespaces()) != 1 || !dev.Enabled() {
		t.Fatalf("namespaces %d, enabled %v", len(c.Namespaces()), dev.Enabled())
	}
}

func pattern(n int, seed int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int64(i)*7 + seed + int64(i>>9))
	}
	return b
}

func TestReadWrite(t *testing.T) {
	for _, shift := range []uint{9, 12} {
		t.Run(fmt.Sprint(1<<shift), func(t *testing.T) {
			backing := ns(4<<20, shift)
			dev := nvmetest.New(nvmetest.Options{Vectors: 2}, backing)
			c, _ := mustOpen(t, dev, setup{})
			d := c.Namespaces()[0]
			ss := int64(d.SectorSize())
			// Sizes around the page, two-page and 64 KiB command limits.
			for _, tc := range []struct {
				off int64
				n   int
			}{{0, 1}, {1, 8}, {8, 16}, {24, 128}, {512, 129}, {1000, 600}, {(4<<20)/ss - 64, 64}} {
				off, n := tc.off*ss, tc.n*int(ss)
				if n > 4<<20 || off+int64(n) > 4<<20 {
					continue
				}
				w := pattern(n, off)
				if got, err := d.WriteAt(w, off); got != n || err != nil {
					t.Fatalf("WriteAt(%d, %d) = %d, %v", n, off, got, err)
				}
				if !bytes.Equal(backing.Data[off:off+int64(n)], w) {
					t.Fatalf("device holds other bytes after WriteAt(%d, %d)", n, off)
				}
				r := make([]byte, n)
				if got, err := d.ReadAt(r, off); got != n || err != nil || !bytes.Equal(r, w) {
					t.Fatalf("ReadAt(%d, %d) = %d, %v, same %v", n, off, got, err, bytes.Equal(r, w))
				}
			}
			if _, err := d.ReadAt(make([]byte, 100), 0); !errors.Is(err, blk.ErrAlign) {
				t.Errorf("unaligned read: %v", err)
			}
			if _, err := d.WriteAt(make([]byte, ss), 4<<20); !errors.Is(err, blk.ErrRange) {
				t.Errorf("write past the end: %v", err)
			}
		})
	}
}

// Writers on every CPU's queue at once, several commands in flight on
// each; then everything reads back.
func TestConcurrent(t *testing.T) {
	backing := ns(8<<20, 9)
	dev := nvmetest.New(nvmetest.Options{Vectors: 4}, backing)
	var next atomic.Int64
	c, _ := mustOpen(t, dev, setup{queues: 3, cpu: func() int { return int(next.Add(1)) }})
	if c.Queues() != 3 {
		t.Fatalf("%d queues", c.Queues())
	}
	d := c.Namespaces()[0]
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 16; i++ {
				off := int64(g)<<20 + int64(i)*65536
				if _, err := d.WriteAt(pattern(65536, off), off); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r := make([]byte, 8<<20)
	if _, err := d.ReadAt(r, 0); err != nil {
		t.Fatal(err)
	}
	for g := 0; g < 8; g++ {
		for i := 0; i < 16; i++ {
			off := int64(g)<<20 + int64(i)*65536
			if !bytes.Equal(r[off:off+65536], pattern(65536, off)) {
				t.Fatalf("writer %d piece %d differs", g, i)
			}
		}
	}
	for q := 1; q <= 3; q++ {
		if dev.Executed[q].Load() == 0 {
			t.Errorf("queue %d carried no commands", q)
		}
	}
	for v := 0; v < 3; v++ {
		if dev.Raised[v].Load() == 0 {
			t.Errorf("vector %d never raised", v)
		}
	}
	if dev.Raised[3].Load() != 0 {
		t.Errorf("vector 3 raised with 3 queues")
	}
}

// A large transfer keeps several commands in the controller at once.
func TestInFlight(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 1}, ns(4<<20, 9))
	c, _ := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	dev.Hold.Store(true)
	done := make(chan error)
	go func() {
		_, err := d.WriteAt(make([]byte, 1<<20), 0)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for dev.Pending(1) < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := dev.Pending(1); n < 8 {
		t.Errorf("%d commands in flight, want at least 8", n)
	}
	dev.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFewerQueues(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      nvmetest.Options
		want      int
		kind      pci.IntrKind
		queuesLog bool
	}{
		{"controller grants 1", nvmetest.Options{Vectors: 8, MaxQueues: 1}, 1, pci.MSIX, false},
		{"table of 2", nvmetest.Options{Vectors: 2}, 2, pci.MSIX, false},
		{"MSI only", nvmetest.Options{}, 1, pci.MSI, false},
		{"10-entry queues", nvmetest.Options{Vectors: 4, MQES: 9}, 4, pci.MSIX, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := nvmetest.New(tc.opts, ns(1<<20, 9))
			var next atomic.Int64
			c, _ := mustOpen(t, dev, setup{queues: 4, cpu: func() int { return int(next.Add(1)) }})
			if k, _ := c.Interrupts(); c.Queues() != tc.want || k != tc.kind {
				t.Fatalf("%d queues on %v, want %d on %v", c.Queues(), k, tc.want, tc.kind)
			}
			d := c.Namespaces()[0]
			for i := 0; i < 8; i++ {
				w := pattern(4096, int64(i))
				if _, err := d.WriteAt(w, int64(i)*4096); err != nil {
					t.Fatal(err)
				}
				r := make([]byte, 4096)
				if _, err := d.ReadAt(r, int64(i)*4096); err != nil || !bytes.Equal(r, w) {
					t.Fatalf("read back: %v", err)
				}
			}
			// Enough at once to wrap the rings several times.
			w := pattern(1<<20, 5)
			if _, err := d.WriteAt(w, 0); err != nil {
				t.Fatal(err)
			}
			r := make([]byte, 1<<20)
			if _, err := d.ReadAt(r, 0); err != nil || !bytes.Equal(r, w) {
				t.Fatalf("1 MiB read back: %v", err)
			}
		})
	}
}

func TestFlush(t *testing.T) {
	for _, vwc := range []bool{false, true} {
		dev := nvmetest.New(nvmetest.Options{Vectors: 2, VWC: vwc}, ns(1<<20, 9))
		c, _ := mustOpen(t, dev, setup{})
		if err := c.Namespaces()[0].Flush(); err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		if vwc {
			want = 1
		}
		if got := dev.Flushes.Load(); got != want {
			t.Errorf("write cache %v: %d flushes reached the controller, want %d", vwc, got, want)
		}
	}
}

func TestMediaError(t *testing.T) {
	backing := ns(1<<20, 9)
	backing.Bad = map[uint64]bool{100: true}
	dev := nvmetest.New(nvmetest.Options{Vectors: 2}, backing)
	c, l := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	_, err := d.ReadAt(make([]byte, 4096), 96*512)
	if !errors.Is(err, blk.ErrIO) || !strings.Contains(err.Error(), "nvme0n1: sector 96") {
		t.Fatalf("read of a bad block: %v", err)
	}
	if !l.has("nvme nvme0n1: sector 96") || !l.has("unrecovered read error") {
		t.Errorf("log lacks the device, sector or status:\n%v", l)
	}
	if _, err := d.WriteAt(make([]byte, 512), 100*512); !errors.Is(err, blk.ErrIO) {
		t.Errorf("write of a bad block: %v", err)
	}
	// The rest of the disk still works.
	if _, err := d.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
}

// A command the controller never completes times out and is reported;
// its slot comes back when the controller answers after all.
func TestTimeout(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 2}, ns(1<<20, 9))
	c, l := mustOpen(t, dev, setup{timeout: 200 * time.Millisecond})
	d := c.Namespaces()[0]
	dev.Hold.Store(true)
	start := time.Now()
	_, err := d.ReadAt(make([]byte, 512), 4096)
	if !errors.Is(err, blk.ErrTimeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("held read: %v after %v", err, time.Since(start))
	}
	if !l.has("nvme0n1: sector 8") || !l.has("not completed after") {
		t.Errorf("timeout not logged with the sector:\n%v", l)
	}
	dev.Release()
	deadline := time.Now().Add(5 * time.Second)
	for !l.has("completed after it timed out") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !l.has("completed after it timed out") {
		t.Errorf("late completion not noticed:\n%v", l)
	}
	// Every slot is usable again: more reads than slots.
	for i := 0; i < 40; i++ {
		if _, err := d.ReadAt(make([]byte, 512), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// Completions that break the protocol fail or time out the command they
// concern and never reach another; the driver keeps working afterwards.
func TestMalformedCompletions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(e *nvmetest.CQE)
		want    error
		log     string
	}{
		{"unknown command id", func(e *nvmetest.CQE) { e.CID ^= 0x1f }, blk.ErrTimeout, "not outstanding"},
		{"stale generation", func(e *nvmetest.CQE) { e.CID += 1 << 6 }, blk.ErrTimeout, "not outstanding"},
		{"wrong phase", func(e *nvmetest.CQE) { e.WrongPhase = true }, blk.ErrTimeout, "not completed after"},
		{"dropped", func(e *nvmetest.CQE) { e.Drop = true }, blk.ErrTimeout, "not completed after"},
		{"other submission queue", func(e *nvmetest.CQE) { e.SQID = 7 }, blk.ErrIO, "names submission queue 7"},
		{"head beyond queue", func(e *nvmetest.CQE) { e.SQHead = 1000 }, blk.ErrIO, "moves submission head to 1000"},
		{"head past tail", func(e *nvmetest.CQE) { e.SQHead += 5 }, blk.ErrIO, "moves submission head"},
		{"error status", func(e *nvmetest.CQE) { e.Status = 0x06 | 1<<14 }, blk.ErrIO, "internal error), do not retry"},
		{"posted twice", func(e *nvmetest.CQE) { e.Twice = true }, nil, "not outstanding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := nvmetest.New(nvmetest.Options{Vectors: 2}, ns(1<<20, 9))
			c, l := mustOpen(t, dev, setup{timeout: 300 * time.Millisecond})
			d := c.Namespaces()[0]
			var once atomic.Bool
			dev.Corrupt = func(q uint16, e *nvmetest.CQE) {
				if q == 1 && !once.Swap(true) {
					tc.corrupt(e)
				}
			}
			_, err := d.ReadAt(make([]byte, 512), 0)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("read: %v, want %v", err, tc.want)
			}
			// The next command is unaffected (a second entry posted twice
			// must not complete it early either).
			w := pattern(4096, 3)
			if _, err := d.WriteAt(w, 8192); err != nil && tc.name != "wrong phase" {
				t.Fatalf("next write: %v", err)
			}
			deadline := time.Now().Add(2 * time.Second)
			for !l.has(tc.log) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if !l.has(tc.log) {
				t.Errorf("log lacks %q:\n%v", tc.log, l)
			}
		})
	}
}

func TestBringUpFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts nvmetest.Options
		hook func(cns uint8, nsid uint32, d []byte)
		want string // in the error; "" means New succeeds with no namespace
	}{
		{"never ready", nvmetest.Options{NeverReady: true}, nil, "CSTS.RDY not true"},
		{"fatal status", nvmetest.Options{Fatal: true}, nil, "fatal status"},
		{"no NVM command set", nvmetest.Options{CAP: 0x7ff | 1<<24}, nil, "NVM command set"},
		{"CAP all ones", nvmetest.Options{CAP: 1<<64 - 1}, nil, "no controller"},
		{"8 KiB minimum page", nvmetest.Options{CAP: 0x7ff | 1<<24 | 1<<37 | 1<<48}, nil, "4 KiB pages"},
		{"one-entry queues", nvmetest.Options{CAP: 1<<24 | 1<<37}, nil, "queues of 1 entries"},
		{"huge doorbell stride", nvmetest.Options{CAP: 0x7ff | 1<<24 | 15<<32 | 1<<37}, nil, "doorbell stride"},
		{"submission entries too big", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 1 {
				d[512] = 0x77
			}
		}, "submission entry sizes"},
		{"namespace list out of order", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 2 {
				d[0], d[4] = 1, 1
			}
		}, "active namespace list"},
		{"namespace beyond NN", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 2 {
				d[4] = 9
			}
		}, "active namespace list"},
		{"metadata format", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 0 {
				d[132] = 8
			}
		}, ""},
		{"8 KiB blocks", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 0 {
				d[134] = 13
			}
		}, ""},
		{"format index beyond count", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 0 {
				d[26] = 5
			}
		}, ""},
		{"size overflows", nvmetest.Options{}, func(cns uint8, _ uint32, d []byte) {
			if cns == 0 {
				d[7] = 0x7f
			}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := nvmetest.New(tc.opts, ns(1<<20, 9), nil)
			dev.Namespaces = dev.Namespaces[:1]
			dev.IdentifyHook = tc.hook
			start := time.Now()
			c, l, err := open(t, dev, setup{timeout: time.Second})
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
			if tc.want == "" {
				if err != nil || len(c.Namespaces()) != 0 {
					t.Fatalf("New: %v; want success without namespaces", err)
				}
				if !l.has("not used") {
					t.Errorf("rejected namespace not logged:\n%v", l)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A controller that corrupts completions at random, under concurrent
// load, gets every call back with success, EIO or a timeout — never a
// panic, a hang or bytes from the wrong request.
func TestRandomCorruption(t *testing.T) {
	backing := ns(2<<20, 9)
	dev := nvmetest.New(nvmetest.Options{Vectors: 4}, backing)
	var next atomic.Int64
	c, _ := mustOpen(t, dev, setup{queues: 2, timeout: 150 * time.Millisecond, cpu: func() int { return int(next.Add(1)) }})
	d := c.Namespaces()[0]
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	dev.Corrupt = func(q uint16, e *nvmetest.CQE) {
		if q == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch rng.IntN(12) {
		case 0:
			e.CID = uint16(rng.Uint32())
		case 1:
			e.SQHead = uint16(rng.Uint32())
		case 2:
			e.SQID = uint16(rng.IntN(4))
		case 3:
			e.Status = uint16(rng.Uint32())
		case 4:
			e.Twice = true
		case 5:
			e.Drop = true
		}
	}
	// Each goroutine owns 256 KiB; what a successful read returns must be
	// what that goroutine last wrote successfully there (or zeros).
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := int64(g) << 18
			written := map[int64]int64{}
			for i := 0; i < 30; i++ {
				off := base + int64(i%8)*32768
				if i%3 == 0 {
					r := make([]byte, 32768)
					if _, err := d.ReadAt(r, off); err != nil {
						if !errors.Is(err, blk.ErrIO) && !errors.Is(err, blk.ErrTimeout) {
							t.Errorf("read: %v", err)
						}
						failed.Add(1)
						continue
					}
					ok.Add(1)
					if seed, w := written[off]; w && !bytes.Equal(r, pattern(32768, seed)) {
						// A failed write after the good one may have landed
						// in part; only a mixture of another region is wrong.
						if r[0] != pattern(32768, seed)[0] && r[0] != pattern(32768, int64(i))[0] && r[0] != 0 {
							t.Errorf("goroutine %d: read back foreign bytes", g)
						}
					}
					continue
				}
				if _, err := d.WriteAt(pattern(32768, int64(i)), off); err != nil {
					if !errors.Is(err, blk.ErrIO) && !errors.Is(err, blk.ErrTimeout) {
						t.Errorf("write: %v", err)
					}
					delete(written, off)
					failed.Add(1)
					continue
				}
				ok.Add(1)
				written[off] = int64(i)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls succeeded, %d failed", ok.Load(), failed.Load())
	if ok.Load() == 0 || failed.Load() == 0 {
		t.Errorf("corruption at 1 in 2 should give both outcomes")
	}
}

// With shadow doorbells the driver keeps the doorbells in memory and
// writes the completion doorbell register only when the controller's
// event index asks (here: when the head wraps past 0), while every
// request still completes with the right data.
func TestShadowDoorbells(t *testing.T) {
	for _, dbbuf := range []bool{false, true} {
		t.Run(fmt.Sprint("dbbuf=", dbbuf), func(t *testing.T) {
			backing := ns(4<<20, 9)
			dev := nvmetest.New(nvmetest.Options{Vectors: 2, DBBuf: dbbuf}, backing)
			var next atomic.Int64
			c, _ := mustOpen(t, dev, setup{queues: 2, cpu: func() int { return int(next.Add(1)) }})
			d := c.Namespaces()[0]
			before := dev.Doorbells[1].Load()
			const n = 300 // several times around each 64-entry ring
			var wg sync.WaitGroup
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < n; i += 4 {
						off := int64(i) * 4096
						if _, err := d.WriteAt(pattern(4096, off), off); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			r := make([]byte, n*4096)
			if _, err := d.ReadAt(r, 0); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				off := int64(i) * 4096
				if !bytes.Equal(r[off:off+4096], pattern(4096, off)) {
					t.Fatalf("block %d differs", i)
				}
			}
			cqRings := dev.Doorbells[1].Load() - before
			if dbbuf && cqRings > 20 {
				t.Errorf("%d completion doorbell writes for %d commands with shadow doorbells", cqRings, n+n/16)
			}
			if !dbbuf && cqRings < 20 {
				t.Errorf("only %d completion doorbell writes for %d commands", cqRings, n+n/16)
			}
		})
	}
}

// Completions arriving just as their commands time out: each slot comes
// back exactly once, whichever side wins.
func TestTimeoutRace(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 2}, ns(1<<20, 9))
	// Bring-up with the default timeout: 3 ms is for the race below,
	// and a loaded host can take longer than that to answer identify.
	c, _ := mustOpen(t, dev, setup{})
	c.Timeout = 3 * time.Millisecond
	d := c.Namespaces()[0]
	rng := rand.New(rand.NewPCG(3, 4))
	var ok, timedOut int
	for i := 0; i < 300; i++ {
		dev.Hold.Store(true)
		released := make(chan struct{})
		pause := time.Duration(rng.IntN(6000)) * time.Microsecond
		go func() {
			time.Sleep(pause)
			dev.Release()
			close(released)
		}()
		_, err := d.ReadAt(make([]byte, 512), 0)
		<-released
		switch {
		case err == nil:
			ok++
		case errors.Is(err, blk.ErrTimeout):
			timedOut++
		default:
			t.Fatal(err)
		}
	}
	t.Logf("%d completed, %d timed out", ok, timedOut)
	time.Sleep(50 * time.Millisecond) // late completions come back
	free, dup := nvme.FreeSlots(c)
	if dup || len(free) != 1 || free[0] != 16 {
		t.Fatalf("free slots %v, duplicate %v; want all 16 once", free, dup)
	}
}

// The driver allocates nothing for a 4 KiB read: the queue's one timer
// times commands out (before, each command started a timer of its own:
// 6 allocations a read here). AllocsPerRun counts the simulated
// controller's too, which run meanwhile: one each in process, prps and
// post, 3 a read.
func TestReadAllocations(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 2}, ns(1<<20, 9))
	c, _ := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	p := make([]byte, 4096)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := d.ReadAt(p, 8192); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 && !raceEnabled {
		t.Errorf("%.1f allocations per 4 KiB read, want the simulated controller's 3", allocs)
	}
}
