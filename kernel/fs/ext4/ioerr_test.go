package ext4

import (
	"errors"
	"fmt"
	"math/rand"
	"os/exec"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// faultyDev is a memDev whose reads, writes and flushes fail at random
// once armed; a failed write writes nothing.
type faultyDev struct {
	*memDev
	mu    sync.Mutex
	rng   *rand.Rand
	p     float64
	armed bool
	fails int
}

var errInjected = errors.New("injected device error")

func (d *faultyDev) fail() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed && d.rng.Float64() < d.p {
		d.fails++
		return true
	}
	return false
}

func (d *faultyDev) ReadAt(p []byte, off int64) (int, error) {
	if d.fail() {
		return 0, errInjected
	}
	return d.memDev.ReadAt(p, off)
}

func (d *faultyDev) WriteAt(p []byte, off int64) (int, error) {
	if d.fail() {
		return 0, errInjected
	}
	return d.memDev.WriteAt(p, off)
}

func (d *faultyDev) Flush() error {
	if d.fail() {
		return errInjected
	}
	return d.memDev.Flush()
}

// TestRandomIOErrors runs TestRandomSpace's operations, from one worker
// and from four at once, on a journaled disk whose reads, writes and
// flushes fail at random (1 in 200). Every operation
// succeeds or fails with ENOSPC, EIO or EROFS (the mount goes read-only
// after a failed commit), and none panics. Then the power goes: the
// disk as the writes that succeeded left it, mounted again (the journal
// replayed), must be a file system e2fsck finds nothing wrong with. A
// failed write of data may lose that data; a failed read or write of
// metadata must never let a half-made change reach the disk.
func TestRandomIOErrors(t *testing.T) {
	for _, workers := range []int{1, 4} {
		for _, cached := range []bool{false, true} {
			for _, bsize := range []string{"1024", "4096"} {
				for seed := int64(1); seed <= 5; seed++ {
					t.Run(fmt.Sprintf("workers-%d-cached-%v-%s-%d", workers, cached, bsize, seed), func(t *testing.T) {
						randomIOErrors(t, workers, cached, bsize, seed)
					})
				}
			}
		}
	}
}

func randomIOErrors(t *testing.T, workers int, cached bool, bsize string, seed int64) {
	size := "4M" // a journal, and room for one 4 KiB blocks need twice
	if bsize == "4096" {
		size = "8M"
	}
	base := loadImage(t, mkfs(t, size, "", "-t", "ext4", "-b", bsize, "-N", "128"))
	dev := &faultyDev{memDev: base, rng: rand.New(rand.NewSource(seed)), p: 1.0 / 200}
	o := Options{Clock: func() time.Time { return time.Unix(1700000000, 0) }}
	if cached {
		o.Pages = pagecache.New(&limitedFrames{}, 1<<20)
	}
	f, err := Mount(dev, o)
	if err != nil {
		t.Fatal(err)
	}
	if f.jnl == nil {
		t.Fatal("no journal: the test needs one")
	}
	dev.mu.Lock()
	dev.armed = true
	dev.mu.Unlock()
	ws := make([]*spaceWorker, workers)
	var wg sync.WaitGroup
	for i := range ws {
		w := &spaceWorker{
			t: t, f: f, rng: rand.New(rand.NewSource(seed*100 + int64(i))), prefix: fmt.Sprint("w", i),
			files: map[string]*spaceFile{}, dirs: map[string]uint32{}, entries: map[string][]string{},
			also: []error{linux.EIO, linux.EROFS},
		}
		ws[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := 0; op < 300 && !w.failed; op++ {
				w.step(op)
				if op%50 == 49 {
					w.allowed("sync", f.Sync())
				}
			}
		}()
	}
	wg.Wait()
	failed, others, nospc := false, 0, 0
	for _, w := range ws {
		failed = failed || w.failed
		others += w.others
		nospc += w.nospc
	}
	ro, why := f.ReadOnly()
	dev.mu.Lock()
	dev.armed = false
	fails := dev.fails
	dev.mu.Unlock()
	t.Logf("%d device errors, %d operations failed with them, %d with ENOSPC; read-only %v %s", fails, others, nospc, ro, why)
	if failed {
		return
	}
	// The power goes: what the disk holds now, mounted afresh.
	after := &memDev{b: append([]byte(nil), base.b...)}
	g, err := mountDev(t, after, Options{})
	if err != nil {
		t.Fatalf("mount after the errors: %v", err)
	}
	if ro, why := g.ReadOnly(); ro {
		t.Fatalf("mounted read-only after the errors: %s", why)
	}
	if err := g.syncHome(); err != nil {
		t.Fatalf("sync after the errors: %v", err)
	}
	out, err := exec.Command("e2fsck", "-fn", saveImage(t, after)).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck -fn after the errors: %v\n%s", err, out)
	}
}
