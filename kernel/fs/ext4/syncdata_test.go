package ext4

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// gateDev is a lockedDev that can stop one write, at a byte offset,
// until the test lets it go, and records which writes were commit
// blocks.
type gateDev struct {
	lockedDev
	gateOff          int64         // under mu
	reached, release chan struct{} // under mu; reached nil: no gate
	writes           []int64       // under mu: offsets written, in order
	commits          []int         // under mu: indexes in writes of commit blocks
}

func (d *gateDev) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	reached, release := d.reached, d.release
	gated := reached != nil && off == d.gateOff
	if gated {
		d.reached = nil
	}
	d.mu.Unlock()
	if gated {
		close(reached)
		<-release
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(p) >= 8 && be.Uint32(p) == jbdMagic && be.Uint32(p[4:]) == jbdCommit {
		d.commits = append(d.commits, len(d.writes))
	}
	d.writes = append(d.writes, off)
	return d.memDev.WriteAt(p, off)
}

// TestSyncDataBeforeCommit: an fsync writes its file's pages back
// without FS.mu, so other operations go on meanwhile, and a commit that
// closes the transaction holding the file's new blocks meanwhile waits
// for that write-back (data=ordered): no commit block reaches the disk
// before the data its block map points at.
func TestSyncDataBeforeCommit(t *testing.T) {
	img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4"))
	d := &gateDev{lockedDev: lockedDev{memDev: memDev{b: img.b}}}
	fr := &mm.HeapPhys{}
	f, err := Mount(d, Options{Pages: pagecache.New(fr, 1<<20)})
	ok(t, err)
	must := okIno(t)
	x := must(f.Create(RootIno, "x", linux.S_IFREG|0o644, 0, 0, 0, 0))
	data := bytes.Repeat([]byte{0xAB}, pagecache.PageSize)
	if _, err := f.WriteAt(x, data, 0); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	dm := f.maps[x]
	dm.mu.Lock()
	blk := dm.pages[0].blk[0]
	dm.mu.Unlock()
	f.mu.Unlock()
	if blk == 0 {
		t.Fatal("the written page has no block noted")
	}
	reached, release := make(chan struct{}), make(chan struct{})
	d.mu.Lock()
	d.gateOff, d.reached, d.release = int64(blk)*int64(f.blockSize), reached, release
	first := len(d.writes)
	d.mu.Unlock()

	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	<-reached // the fsync's write-back waits in the device
	created := make(chan error, 1)
	go func() {
		_, err := f.Create(RootIno, "y", linux.S_IFREG|0o644, 0, 0, 0, 0)
		created <- err
	}()
	select {
	case err := <-created:
		ok(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a create waited for an fsync's write-back of file data")
	}
	committed := make(chan error, 1)
	go func() {
		_, err := f.Commit()
		committed <- err
	}()
	select {
	case err := <-committed:
		t.Fatalf("a commit returned (%v) while the data of a file in it was being written", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	ok(t, <-synced)
	ok(t, <-committed)

	d.mu.Lock()
	dataAt := -1
	for i := first; i < len(d.writes); i++ {
		if d.writes[i] == d.gateOff {
			dataAt = i
			break
		}
	}
	commits := append([]int(nil), d.commits...)
	d.mu.Unlock()
	if dataAt < 0 {
		t.Fatal("the file's data was never written")
	}
	for _, c := range commits {
		if c >= first && c < dataAt {
			t.Errorf("a commit block (write %d) went before the file's data (write %d)", c, dataAt)
		}
	}
	g, err := Mount(&memDev{b: d.image()}, Options{ReadOnly: true})
	ok(t, err)
	if got := readAll(t, g, walk(t, g, "x")); !bytes.Equal(got, data) {
		t.Error("after the fsync a cut loses x's data")
	}
	if _, err := g.Lookup(RootIno, "y"); err != nil {
		t.Errorf("after the commit a cut loses y: %v", err)
	}
}

// TestCheckpointReleasesLock: an fsync that finds the log full writes
// the checkpoint with FS.mu released: other operations go on (into the
// running transaction, reading blocks whose home copies are being
// written), the fsync's own changes wait for it, and the disk left
// after it holds every synced change and passes e2fsck.
func TestCheckpointReleasesLock(t *testing.T) {
	img := loadImage(t, mkfs(t, "32M", "", "-t", "ext4", "-b", "1024", "-J", "size=1"))
	d := &lockedDev{memDev: memDev{b: img.b}}
	f, err := Mount(d, Options{})
	ok(t, err)
	must := okIno(t)
	dir := must(f.Mkdir(RootIno, "spool", 0o755, 0, 0))
	full := false
	for i := 0; i < 2000 && !full; i++ {
		must(f.Create(dir, fmt.Sprintf("m%04d", i), linux.S_IFREG|0o644, 0, 0, 0, 0))
		f.mu.Lock()
		full = f.needCheckpoint()
		f.mu.Unlock()
		if !full {
			ok(t, f.Sync())
		}
	}
	if !full {
		t.Fatal("the log never filled")
	}
	hold := make(chan struct{})
	d.mu.Lock()
	d.hold, d.held = hold, make(chan struct{}, 1)
	held := d.held
	d.mu.Unlock()
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	<-held // the checkpoint's first flush
	d.mu.Lock()
	d.hold = nil
	d.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		// Names in the directory blocks being written home.
		if _, err := f.Lookup(dir, "m0000"); err != nil {
			done <- err
			return
		}
		_, err := f.Create(dir, "during", linux.S_IFREG|0o644, 0, 0, 0, 0)
		done <- err
	}()
	select {
	case err := <-done:
		ok(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a create waited for a checkpoint")
	}
	f.mu.Lock()
	inFlight := f.jnl.ckptIO != nil
	f.mu.Unlock()
	if !inFlight {
		t.Fatal("the fsync's flush is not a checkpoint's")
	}
	close(hold)
	ok(t, <-synced)
	ok(t, f.Sync()) // "during" too
	crashed := &memDev{b: d.image()}
	g, err := mountDev(t, crashed, Options{})
	ok(t, err)
	gd := walk(t, g, "spool")
	for _, name := range []string{"m0000", "during"} {
		if _, err := g.Lookup(gd, name); err != nil {
			t.Errorf("after the fsyncs, %s: %v", name, err)
		}
	}
	fsck(t, crashed)
}
