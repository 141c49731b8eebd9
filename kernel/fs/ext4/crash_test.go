package ext4

import (
	"bytes"
	"errors"
	"math/rand"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// recDev records every write and flush after a starting image, so that a
// test can rebuild what a disk with a volatile write cache may hold after
// a power cut at any point: every write before the last flush, and any
// subset of the writes after it.
type recDev struct {
	memDev
	base    []byte
	writes  []recWrite
	flushes []int // len(writes) at each flush
}

type recWrite struct {
	off  int64
	data []byte
}

func (d *recDev) WriteAt(p []byte, off int64) (int, error) {
	d.writes = append(d.writes, recWrite{off, append([]byte(nil), p...)})
	return d.memDev.WriteAt(p, off)
}

func (d *recDev) Flush() error {
	d.flushes = append(d.flushes, len(d.writes))
	return nil
}

// cut returns the disk after a power cut following flush k (-1: before
// any), keeping the writes after it that keep selects.
func (d *recDev) cut(k int, keep func(i int) bool) *memDev {
	img := append([]byte(nil), d.base...)
	durable := 0
	if k >= 0 {
		durable = d.flushes[k]
	}
	end := len(d.writes)
	if k+1 < len(d.flushes) {
		end = d.flushes[k+1]
	}
	for i, w := range d.writes[:end] {
		if i < durable || keep(i) {
			copy(img[w.off:], w.data)
		}
	}
	return &memDev{b: img}
}

// TestCommitPowerCut cuts power at every flush of a commit, and with
// random subsets of the writes in flight: after recovery e2fsck must find
// the file system clean and the transaction's changes all there or none.
func TestCommitPowerCut(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, v := range []struct {
		name string
		opts []string
	}{
		{"ext4", []string{"-t", "ext4"}},
		{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}},
		{"ext3", []string{"-t", "ext3"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", v.opts...))
			// A first transaction, committed, so that the log holds an
			// older one the next must not be confused with.
			f0, err := Mount(img, Options{})
			ok(t, err)
			okIno(t)(f0.Mkdir(RootIno, "old", 0o755, 0, 0))
			ok(t, f0.Sync())

			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			if f.jnl == nil {
				t.Fatal("no journal in use")
			}
			data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
			a := okIno(t)(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, a, data, 0)
			sub := okIno(t)(f.Mkdir(RootIno, "d", 0o755, 0, 0))
			okIno(t)(f.Create(sub, "b", linux.S_IFREG|0o644, 0, 0, 0, 0))
			ok(t, f.Rmdir(RootIno, "old"))
			if len(f.jnl.order) == 0 {
				t.Fatal("the operations left nothing in the transaction")
			}
			before := len(d.flushes)
			ok(t, f.Sync())
			rng := rand.New(rand.NewSource(7))
			cuts, complete := 0, 0
			for k := before - 1; k < len(d.flushes); k++ {
				for trial := 0; trial < 4; trial++ {
					keep := func(int) bool { return false }
					switch trial {
					case 1:
						keep = func(int) bool { return true }
					case 2, 3:
						keep = func(int) bool { return rng.Intn(2) == 0 }
					}
					c := d.cut(k, keep)
					raw := append([]byte(nil), c.b...)
					g, err := mountDev(t, c, Options{})
					if err != nil {
						t.Fatalf("cut after flush %d (trial %d): mount: %v", k, trial, err)
					}
					if ro, why := g.ReadOnly(); ro {
						t.Fatalf("cut after flush %d (trial %d): mounted read-only: %s", k, trial, why)
					}
					fsck(t, c)
					cuts++
					_, errA := g.Lookup(RootIno, "a")
					_, errOld := g.Lookup(RootIno, "old")
					dd, errD := g.Lookup(RootIno, "d")
					switch {
					case errA == nil && errD == nil && errors.Is(errOld, linux.ENOENT):
						if got := readAll(t, g, walk(t, g, "a")); !bytes.Equal(got, data) {
							t.Errorf("cut %d/%d: a holds %d bytes, not what was written", k, trial, len(got))
						}
						if _, err := g.Lookup(dd, "b"); err != nil {
							t.Errorf("cut %d/%d: d/b: %v", k, trial, err)
						}
						complete++
						// e2fsck's recovery (Linux's code) reads our log
						// the same way.
						ref := &memDev{b: e2fsckReplay(t, raw)}
						fsck(t, ref)
						if out := debugfs(t, ref, "cat /a"); !strings.Contains(out, string(data[:64])) {
							t.Errorf("cut %d/%d: after e2fsck's replay /a is not there", k, trial)
						}
					case errors.Is(errA, linux.ENOENT) && errors.Is(errD, linux.ENOENT) && errOld == nil:
					default:
						t.Errorf("cut %d/%d: part of the transaction: a %v, d %v, old %v", k, trial, errA, errD, errOld)
					}
				}
			}
			if complete == 0 || complete == cuts {
				t.Errorf("%d of %d cuts kept the transaction: the cuts did not straddle the commit", complete, cuts)
			}
			// The last cut point is after the whole commit: it must hold.
			last := d.cut(len(d.flushes)-1, func(int) bool { return false })
			g, err := Mount(last, Options{ReadOnly: true})
			ok(t, err)
			if _, err := g.Lookup(RootIno, "a"); err != nil {
				t.Errorf("after the commit returned: %v", err)
			}
		})
	}
}

// TestFreedBlocksWait: blocks freed by the running transaction are not
// given to new data before it commits (else a crash would leave the
// deleted file, still on disk, holding the new data).
func TestFreedBlocksWait(t *testing.T) {
	f, dev := mountRW(t, "16M", "-t", "ext4")
	old := okIno(t)(f.Create(RootIno, "old", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, old, make([]byte, 1<<20), 0)
	ok(t, f.Sync())
	in, _ := f.iget(old)
	fm, _ := f.mapping(in)
	oldBlocks := map[uint64]bool{}
	for _, e := range fm.em.exts {
		for i := uint32(0); i < e.len; i++ {
			oldBlocks[e.pblk+uint64(i)] = true
		}
	}
	ok(t, f.Unlink(RootIno, "old"))
	nw := okIno(t)(f.Create(RootIno, "new", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, nw, make([]byte, 1<<20), 0)
	in, _ = f.iget(nw)
	fm, _ = f.mapping(in)
	for _, e := range fm.em.exts {
		for i := uint32(0); i < e.len; i++ {
			if oldBlocks[e.pblk+uint64(i)] {
				t.Fatalf("block %d reused before the unlink committed", e.pblk+uint64(i))
			}
		}
	}
	fsck(t, dev)
}

// TestOrphans: a file whose last name goes while it is open waits on the
// orphan list; a crash before the last close leaves it there, and the
// next mount frees it.
func TestOrphans(t *testing.T) {
	f, dev := mountRW(t, "16M", "-t", "ext4")
	must := okIno(t)
	var inos []uint32
	for _, name := range []string{"a", "b", "c"} {
		ino := must(f.Create(RootIno, name, linux.S_IFREG|0o644, 0, 0, 0, 0))
		writeAll(t, f, ino, make([]byte, 50000), 0)
		f.Hold(ino)
		ok(t, f.Unlink(RootIno, name))
		inos = append(inos, ino)
	}
	free := f.Statfs().Free
	// The middle one closes: it leaves the list from its middle.
	ok(t, f.Release(inos[1]))
	if f.Statfs().Free <= free {
		t.Error("closing an unlinked file freed nothing")
	}
	ok(t, f.Sync())
	if got := le.Uint32(f.sb.raw[0xE8:]); got != inos[2] {
		t.Errorf("orphan list starts at %d, want %d", got, inos[2])
	}
	// Crash now, with a and c still open.
	crashed := &memDev{b: append([]byte(nil), dev.b...)}
	g, err := mountDev(t, crashed, Options{})
	ok(t, err)
	if le.Uint32(g.sb.raw[0xE8:]) != 0 {
		t.Error("orphans left after mount")
	}
	fsck(t, crashed)
	// Without the crash, the last closes free them.
	ok(t, f.Release(inos[0]))
	ok(t, f.Release(inos[2]))
	fsck(t, dev)
	if a, b := f.Statfs(), g.Statfs(); a.Free != b.Free || a.FilesFree != b.FilesFree {
		t.Errorf("after the closes %d/%d free, after the crash %d/%d", a.Free, a.FilesFree, b.Free, b.FilesFree)
	}
}

// TestSyncSkipsIdleFlush: a Sync with nothing written since the last
// flush issues none (two fsyncs of one change cost one device flush),
// and any write after it, journaled or straight to the device (file
// data), brings the flush back.
func TestSyncSkipsIdleFlush(t *testing.T) {
	img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4"))
	d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
	f, err := Mount(d, Options{})
	ok(t, err)
	a := okIno(t)(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
	ok(t, f.Sync())
	n := len(d.flushes)
	ok(t, f.Sync())
	if len(d.flushes) != n {
		t.Errorf("a Sync with nothing new flushed %d times", len(d.flushes)-n)
	}
	writeAll(t, f, a, []byte("data"), 0)
	ok(t, f.Sync())
	if len(d.flushes) == n {
		t.Error("a Sync after a write flushed nothing")
	}
	n = len(d.flushes)
	last := len(d.writes)
	ok(t, f.Sync())
	if len(d.flushes) != n || len(d.writes) != last {
		t.Errorf("a second Sync wrote %d blocks and flushed %d times", len(d.writes)-last, len(d.flushes)-n)
	}
}

// TestOrphansAtRemount: a read-only mount of a crashed file system
// leaves its orphan list alone (it writes nothing but the replay);
// remounting it read-write frees the orphans, as a read-write mount
// would have. An orphan held open here (unlinked, then the mount made
// read-only) is left to its last close.
func TestOrphansAtRemount(t *testing.T) {
	f, dev := mountRW(t, "16M", "-t", "ext4")
	a := okIno(t)(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, a, make([]byte, 50000), 0)
	f.Hold(a)
	ok(t, f.Unlink(RootIno, "a"))
	ok(t, f.Sync())
	crashed := &memDev{b: append([]byte(nil), dev.b...)}
	g, err := mountDev(t, crashed, Options{ReadOnly: true})
	ok(t, err)
	if le.Uint32(g.sb.raw[0xE8:]) != a {
		t.Fatalf("orphan list of the read-only mount starts at %d, want %d", le.Uint32(g.sb.raw[0xE8:]), a)
	}
	ok(t, g.Remount(false))
	if n := le.Uint32(g.sb.raw[0xE8:]); n != 0 {
		t.Errorf("orphan %d left after remount read-write", n)
	}
	ok(t, f.Release(a))
	if x, y := f.Statfs(), g.Statfs(); x.Free != y.Free || x.FilesFree != y.FilesFree {
		t.Errorf("after the last close %d/%d free, after the remount %d/%d", x.Free, x.FilesFree, y.Free, y.FilesFree)
	}
	fsck(t, crashed)

	// Held open across a remount read-only and back: still there.
	b := okIno(t)(f.Create(RootIno, "b", linux.S_IFREG|0o644, 0, 0, 0, 0))
	f.Hold(b)
	ok(t, f.Unlink(RootIno, "b"))
	ok(t, f.Remount(true))
	ok(t, f.Remount(false))
	if n := le.Uint32(f.sb.raw[0xE8:]); n != b {
		t.Errorf("a held orphan was freed by the remount (list head %d)", n)
	}
	ok(t, f.Release(b))
	fsck(t, dev)
}
