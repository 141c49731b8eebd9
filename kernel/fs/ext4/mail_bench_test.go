package ext4

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// The mail benchmark on a slow disk: workers deliver messages as
// mailbench's programs do (create in a spool directory, write, fsync,
// rename, unlink), on a device whose every request takes a while, so
// that what the file system does while it waits for the disk shows.
// Run it with
//
//	go test ./kernel/fs/ext4 -run '^$' -bench Mail -benchtime 400x
//
// Besides messages/s it reports the time goroutines waited for the
// file system's locks per message (from Go's mutex profile: the waits
// released by code of this package, whatever the lock), and with
// EXT4_MAILPROF=1 the unlocking stacks that made them wait the longest;
// EXT4_MAILLAT sets the device's latency (default 200µs).

// slowDev is a memDev whose requests each take lat, served in parallel
// as a disk's queue serves them.
type slowDev struct {
	mu sync.Mutex
	memDev
	lat                     time.Duration
	nRead, nWrite, nFlushes atomic.Int64
}

func (d *slowDev) ReadAt(p []byte, off int64) (int, error) {
	time.Sleep(d.lat)
	d.nRead.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.ReadAt(p, off)
}

func (d *slowDev) WriteAt(p []byte, off int64) (int, error) {
	time.Sleep(d.lat)
	d.nWrite.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.WriteAt(p, off)
}

func (d *slowDev) Flush() error {
	time.Sleep(d.lat)
	d.nFlushes.Add(1)
	return nil
}

func BenchmarkMail(b *testing.B) {
	for _, workers := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchMail(b, workers) })
	}
}

// mailDirs are the spool's and the one mailbox's directories.
type mailDirs struct{ pid, todo, mess, tmp, new uint32 }

func benchMail(b *testing.B, workers int) {
	img := loadImage(b, mkfs(b, "256M", "", "-t", "ext4"))
	lat := 200 * time.Microsecond
	if v := os.Getenv("EXT4_MAILLAT"); v != "" { // 0 for a CPU profile
		var err error
		if lat, err = time.ParseDuration(v); err != nil {
			b.Fatal(err)
		}
	}
	d := &slowDev{memDev: memDev{b: img.b}, lat: lat}
	fr := &mm.HeapPhys{}
	f, err := Mount(d, Options{Pages: pagecache.New(fr, 8<<20)})
	if err != nil {
		b.Fatal(err)
	}
	var dirs mailDirs
	mk := func(parent uint32, name string) uint32 {
		ino, err := f.Mkdir(parent, name, 0o755, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		return ino
	}
	dirs.pid, dirs.todo, dirs.mess = mk(RootIno, "pid"), mk(RootIno, "todo"), mk(RootIno, "mess")
	box := mk(mk(RootIno, "mail"), "u")
	dirs.tmp, dirs.new = mk(box, "tmp"), mk(box, "new")
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	msg := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB

	runtime.SetMutexProfileFraction(1)
	defer runtime.SetMutexProfileFraction(0)
	before := lockWaits()
	reads, writes, flushes := d.nRead.Load(), d.nWrite.Load(), d.nFlushes.Load()
	var next atomic.Int64
	runWorkers(b, workers, func(int) error {
		for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
			if err := mailOne(f, dirs, msg, i); err != nil {
				return err
			}
		}
		return nil
	})
	after := lockWaits()
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(after.total.Seconds()*1e3/n-before.total.Seconds()*1e3/n, "lockwait-ms/msg")
	b.ReportMetric(float64(d.nRead.Load()-reads)/n, "reads/msg")
	b.ReportMetric(float64(d.nWrite.Load()-writes)/n, "writes/msg")
	b.ReportMetric(float64(d.nFlushes.Load()-flushes)/n, "flushes/msg")
	if os.Getenv("EXT4_MAILPROF") != "" {
		after.report(b, before)
	}
	if err := f.Unmount(); err != nil {
		b.Fatal(err)
	}
}

// mailOne enqueues message i and delivers it: mail-enqueue's and
// mail-deliver's file system calls, three fsyncs.
func mailOne(f *FS, dirs mailDirs, msg []byte, i int64) error {
	name := strconv.FormatInt(i, 10)
	pid, err := f.Create(dirs.pid, name, linux.S_IFREG|0o600, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(pid, msg, 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	id := strconv.FormatUint(uint64(pid), 10)
	todo, err := f.Create(dirs.todo, id, linux.S_IFREG|0o600, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(todo, []byte("u\n"), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Rename(dirs.pid, name, dirs.mess, id, 0); err != nil {
		return err
	}
	// Delivery.
	buf := make([]byte, len(msg))
	if _, err := f.ReadAt(todo, buf[:2], 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(pid, buf, 0); err != nil {
		return err
	}
	out, err := f.Create(dirs.tmp, id, linux.S_IFREG|0o600, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(out, buf, 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Rename(dirs.tmp, id, dirs.new, id, 0); err != nil {
		return err
	}
	f.Forget(out) // as the VFS lets go of it
	if err := f.Unlink(dirs.todo, id); err != nil {
		return err
	}
	return f.Unlink(dirs.mess, id)
}

// waits is the mutex profile's contention released by this package's
// code, in all and by unlocking function.
type waits struct {
	total time.Duration
	by    map[string]time.Duration
}

// lockWaits reads the mutex profile.
func lockWaits() waits {
	var buf bytes.Buffer
	pprof.Lookup("mutex").WriteTo(&buf, 1)
	w := waits{by: map[string]time.Duration{}}
	sc := bufio.NewScanner(&buf)
	perSec := 0.0
	var cycles int64
	where := ""
	add := func() {
		if where != "" && where != "-" && perSec > 0 {
			dt := time.Duration(float64(cycles) / perSec * 1e9)
			w.total += dt
			w.by[where] += dt
		}
		where, cycles = "", 0
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "cycles/second="):
			perSec, _ = strconv.ParseFloat(strings.TrimPrefix(line, "cycles/second="), 64)
		case len(line) > 0 && line[0] >= '0' && line[0] <= '9':
			add()
			cycles, _ = strconv.ParseInt(strings.Fields(line)[0], 10, 64)
		case strings.HasPrefix(line, "#\t") && where == "" && cycles > 0:
			// The first frame outside sync and the runtime is where
			// the lock was released: only this package's own (not its
			// tests' device, not the page cache) count.
			fields := strings.Fields(line)
			if len(fields) < 4 || strings.HasPrefix(fields[2], "sync.") || strings.HasPrefix(fields[2], "runtime.") ||
				strings.HasPrefix(fields[2], "internal/") {
				continue
			}
			where = "-"
			if strings.HasPrefix(fields[2], "shortbread/kernel/fs/ext4.") && !strings.Contains(fields[3], "_test.go:") {
				where = strings.TrimPrefix(fields[2], "shortbread/kernel/fs/ext4.") + " " + fields[3][strings.LastIndex(fields[3], "/")+1:]
			}
		}
	}
	add()
	return w
}

// report logs the unlocking places that made others wait the longest
// since before.
func (w waits) report(b *testing.B, before waits) {
	type row struct {
		where string
		d     time.Duration
	}
	var rows []row
	for k, v := range w.by {
		if d := v - before.by[k]; d > 0 {
			rows = append(rows, row{k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].d > rows[j].d })
	for i, r := range rows {
		if i == 10 {
			break
		}
		b.Logf("%10v %s", r.d.Round(time.Microsecond), r.where)
	}
}

// runWorkers runs work(w) for w in [0, workers) in goroutines at once,
// timed from the call until the last returns, and fails b with the
// errors they return.
func runWorkers(b *testing.B, workers int, work func(w int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ResetTimer()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(w); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
