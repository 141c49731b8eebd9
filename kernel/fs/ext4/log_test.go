package ext4

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// TestLogHoldsTransactions: commits append to the log and leave the
// blocks there (two flushes each, nothing written home) until the log
// fills; a disk cut after the last commit is recovered to the same tree
// by this package and by e2fsck (Linux's replay code), across many
// transactions in one log and a checkpoint between them.
func TestLogHoldsTransactions(t *testing.T) {
	for _, v := range []struct {
		name string
		opts []string
	}{
		{"ext4", []string{"-t", "ext4"}},
		{"ext4-1k-small-journal", []string{"-t", "ext4", "-b", "1024", "-J", "size=1"}},
		{"ext3", []string{"-t", "ext3"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "32M", "", v.opts...))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			must := okIno(t)
			dir := must(f.Mkdir(RootIno, "spool", 0o755, 0, 0))
			ok(t, f.Sync())
			checkpoints, maxFlushes := 0, 0
			want := map[string][]byte{}
			for i := 0; i < 240; i++ {
				name := fmt.Sprintf("m%03d", i)
				data := bytes.Repeat([]byte(name), 300+i*3)
				ino := must(f.Create(dir, name, linux.S_IFREG|0o644, 0, 0, 0, 0))
				writeAll(t, f, ino, data, 0)
				want[name] = data
				if i%3 == 2 {
					gone := fmt.Sprintf("m%03d", i-1)
					ok(t, f.Unlink(dir, gone))
					delete(want, gone)
				}
				start := f.jnl.r.jsb.start
				n := len(d.flushes)
				ok(t, f.Sync())
				if f.jnl.r.jsb.start == 0 {
					t.Fatalf("commit %d left the log empty: it checkpointed at once", i)
				}
				if start != 0 && f.jnl.head == f.jnl.r.jsb.first {
					t.Fatalf("commit %d: log head at its start", i)
				}
				if len(d.flushes)-n > 2 {
					checkpoints++
				}
				maxFlushes = max(maxFlushes, len(d.flushes)-n)
			}
			if maxFlushes > 4 {
				t.Errorf("a commit flushed %d times", maxFlushes)
			}
			if strings.Contains(v.name, "small") && checkpoints == 0 {
				t.Error("a 1 MiB journal never filled: no checkpoint was tested")
			}
			// Power cut after the last commit: nothing unflushed lands.
			raw := append([]byte(nil), d.cut(len(d.flushes)-1, func(int) bool { return false }).b...)
			check := func(who string, g *FS) {
				t.Helper()
				sp, err := g.Lookup(RootIno, "spool")
				if err != nil {
					t.Fatalf("%s: spool: %v", who, err)
				}
				for name, data := range want {
					ino, err := g.Lookup(sp, name)
					if err != nil {
						t.Errorf("%s: %s: %v", who, name, err)
						continue
					}
					if got := readAll(t, g, ino); !bytes.Equal(got, data) {
						t.Errorf("%s: %s holds %d bytes, want %d", who, name, len(got), len(data))
					}
				}
				ents, err := g.ReadDir(sp)
				ok(t, err)
				if n := len(ents) - 2; n != len(want) {
					t.Errorf("%s: %d names in spool, want %d", who, n, len(want))
				}
			}
			ours := &memDev{b: append([]byte(nil), raw...)}
			g, err := mountDev(t, ours, Options{})
			ok(t, err)
			check("replayed here", g)
			fsck(t, ours)
			ref := &memDev{b: e2fsckReplay(t, raw)}
			fsck(t, ref)
			h, err := Mount(ref, Options{ReadOnly: true})
			ok(t, err)
			check("replayed by e2fsck", h)
		})
	}
}

// TestHeldBlocksWait: a metadata block freed while the log holds a copy
// of it is not reused (as file data) before the checkpoint: a replay
// would write the old copy over the new data. Once the log is
// checkpointed it is free again.
func TestHeldBlocksWait(t *testing.T) {
	img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4", "-b", "4096"))
	d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
	f, err := Mount(d, Options{})
	ok(t, err)
	must := okIno(t)
	dir := must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
	for i := 0; i < 200; i++ { // directory blocks: logged metadata
		must(f.Create(dir, fmt.Sprintf("a-long-name-%04d", i), linux.S_IFREG|0o644, 0, 0, 0, 0))
	}
	ok(t, f.Sync())
	in, _ := f.iget(dir)
	fm, _ := f.mapping(in)
	dirBlocks := map[uint64]bool{}
	for _, e := range fm.em.exts {
		for i := uint32(0); i < e.len; i++ {
			dirBlocks[e.pblk+uint64(i)] = true
		}
	}
	if len(dirBlocks) < 2 {
		t.Fatalf("directory of %d blocks", len(dirBlocks))
	}
	for i := 0; i < 200; i++ {
		ok(t, f.Unlink(dir, fmt.Sprintf("a-long-name-%04d", i)))
	}
	ok(t, f.Rmdir(RootIno, "d"))
	ok(t, f.Sync()) // the rmdir committed; the log still holds the blocks
	data := bytes.Repeat([]byte("new data "), 1<<17)
	nw := must(f.Create(RootIno, "new", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, nw, data, 0)
	ok(t, f.Sync())
	in, _ = f.iget(nw)
	fm, _ = f.mapping(in)
	for _, e := range fm.em.exts {
		for i := uint32(0); i < e.len; i++ {
			if dirBlocks[e.pblk+uint64(i)] {
				t.Fatalf("block %d, logged as a directory block, reused before the checkpoint", e.pblk+uint64(i))
			}
		}
	}
	// A cut now: the replay must leave the new file's data whole.
	raw := append([]byte(nil), d.cut(len(d.flushes)-1, func(int) bool { return false }).b...)
	for who, dev := range map[string]*memDev{"here": {b: append([]byte(nil), raw...)}, "e2fsck": {b: e2fsckReplay(t, raw)}} {
		g, err := Mount(dev, Options{ReadOnly: true})
		ok(t, err)
		if got := readAll(t, g, walk(t, g, "new")); !bytes.Equal(got, data) {
			t.Errorf("replayed %s: the new file's data changed", who)
		}
	}
	// After the checkpoint the blocks are free for anything.
	ok(t, f.syncHome())
	if f.jnl.held != nil {
		t.Error("blocks still held after the checkpoint")
	}
	fsck(t, &d.memDev)
}

// lockedDev makes a memDev safe for the concurrent calls a real disk's
// queue takes, and can hold a flush until the test lets it go.
type lockedDev struct {
	mu sync.Mutex
	memDev
	hold chan struct{} // non-nil: a flush reports on held, then waits for hold
	held chan struct{}
}

func (d *lockedDev) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.ReadAt(p, off)
}

func (d *lockedDev) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memDev.WriteAt(p, off)
}

func (d *lockedDev) Flush() error {
	d.mu.Lock()
	d.memDev.flushes++
	hold, held := d.hold, d.held
	d.mu.Unlock()
	if hold != nil {
		held <- struct{}{}
		<-hold
	}
	return nil
}

func (d *lockedDev) image() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]byte(nil), d.b...)
}

// TestCommitReleasesLock: while a commit waits for the device, other
// operations go on, and an fsync that arrives meanwhile waits for the
// commit in flight and then commits what came after it.
func TestCommitReleasesLock(t *testing.T) {
	img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4"))
	d := &lockedDev{memDev: memDev{b: img.b}}
	f, err := Mount(d, Options{})
	ok(t, err)
	must := okIno(t)
	must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
	hold := make(chan struct{})
	d.mu.Lock()
	d.hold, d.held = hold, make(chan struct{}, 1)
	held := d.held
	d.mu.Unlock()
	first := make(chan error, 1)
	go func() { first <- f.Sync() }()
	<-held // the commit of "a" waits in a flush
	d.mu.Lock()
	d.hold = nil
	d.mu.Unlock()
	created := make(chan error, 1)
	go func() {
		_, err := f.Create(RootIno, "b", linux.S_IFREG|0o644, 0, 0, 0, 0)
		created <- err
	}()
	select {
	case err := <-created:
		ok(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a create waited for the commit in flight")
	}
	second := make(chan error, 1)
	go func() { second <- f.Sync() }()
	select {
	case <-second:
		t.Fatal("an fsync returned while the commit before its change was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(hold)
	ok(t, <-first)
	ok(t, <-second)
	g, err := Mount(&memDev{b: d.image()}, Options{ReadOnly: true})
	ok(t, err)
	for _, n := range []string{"a", "b"} {
		if _, err := g.Lookup(RootIno, n); err != nil {
			t.Errorf("after both fsyncs, %s: %v", n, err)
		}
	}
}

// TestConcurrentSyncs: threads that create, write and fsync in their
// own directories at once (run under -race) leave, at a cut after the
// last fsync, every file they synced, and a clean file system.
func TestConcurrentSyncs(t *testing.T) {
	img := loadImage(t, mkfs(t, "32M", "", "-t", "ext4"))
	d := &lockedDev{memDev: memDev{b: img.b}}
	f, err := Mount(d, Options{})
	ok(t, err)
	const workers, files = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		dir, err := f.Mkdir(RootIno, fmt.Sprintf("w%d", w), 0o755, 0, 0)
		ok(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < files; i++ {
				ino, err := f.Create(dir, fmt.Sprintf("f%02d", i), linux.S_IFREG|0o644, 0, 0, 0, 0)
				if err == nil {
					_, err = f.WriteAt(ino, bytes.Repeat([]byte{byte(i)}, 100*i+1), 0)
				}
				if err == nil && i%4 == 3 {
					err = f.Unlink(dir, fmt.Sprintf("f%02d", i-1))
				}
				if err == nil {
					err = f.Sync()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	crashed := &memDev{b: d.image()}
	g, err := mountDev(t, crashed, Options{})
	ok(t, err)
	for w := 0; w < workers; w++ {
		dir := walk(t, g, fmt.Sprintf("w%d", w))
		for i := 0; i < files; i++ {
			name := fmt.Sprintf("f%02d", i)
			ino, err := g.Lookup(dir, name)
			if i%4 == 2 {
				if err == nil {
					t.Errorf("w%d/%s: unlinked and synced, but there", w, name)
				}
				continue
			}
			if err != nil {
				t.Errorf("w%d/%s: %v", w, name, err)
				continue
			}
			if got := readAll(t, g, ino); len(got) != 100*i+1 || got[0] != byte(i) {
				t.Errorf("w%d/%s: %d bytes", w, name, len(got))
			}
		}
	}
	fsck(t, crashed)
}
