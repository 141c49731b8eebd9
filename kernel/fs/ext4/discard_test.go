package ext4

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// discDev is a memDev that takes discards: it records each (byte offset,
// length) and zeroes the range (QEMU's discard=unmap on a raw image),
// after calling during, if set, with the range.
type discDev struct {
	*memDev
	mu       sync.Mutex
	got      [][2]int64
	flushes  []int // the device's flush count at each discard
	during   func(off, n int64)
	duringMu sync.Mutex
}

func (d *discDev) CanDiscard() bool { return true }

func (d *discDev) Discard(off, n int64) error {
	d.duringMu.Lock()
	h := d.during
	d.duringMu.Unlock()
	if h != nil {
		h(off, n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if off < 0 || n <= 0 || off+n > int64(len(d.b)) {
		return errors.New("discard out of range")
	}
	d.got = append(d.got, [2]int64{off, n})
	d.flushes = append(d.flushes, d.memDev.flushes)
	clear(d.b[off : off+n])
	return nil
}

func (d *discDev) discards() [][2]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][2]int64(nil), d.got...)
}

func mountDisc(t *testing.T, o Options, opts ...string) (*FS, *discDev) {
	t.Helper()
	mem := loadImage(t, mkfs(t, "64M", "", opts...))
	d := &discDev{memDev: mem}
	clock := time.Unix(1700000000, 0)
	o.Clock = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	f, err := Mount(d, o)
	if err != nil {
		t.Fatal(err)
	}
	remember(t, mem, f)
	return f, d
}

// patterned writes a file of n blocks, each full of one byte, and
// returns its inode.
func patterned(t *testing.T, f *FS, name string, blocks int, fill byte) uint32 {
	t.Helper()
	ino, err := f.Create(RootIno, name, linux.S_IFREG|0o644, 0, 0, 0, 0)
	ok(t, err)
	writeAll(t, f, ino, bytes.Repeat([]byte{fill}, blocks*int(f.blockSize)), 0)
	return ino
}

// blocksOf counts the image's blocks that are wholly fill.
func blocksOf(f *FS, d *discDev, fill byte) int {
	bs := int(f.blockSize)
	want := bytes.Repeat([]byte{fill}, bs)
	n := 0
	for off := 0; off+bs <= len(d.b); off += bs {
		if bytes.Equal(d.b[off:off+bs], want) {
			n++
		}
	}
	return n
}

// checkFree fails unless every discarded block is free in its group's
// bitmap.
func checkFree(t *testing.T, f *FS, ranges [][2]int64) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	bs := int64(f.blockSize)
	for _, r := range ranges {
		if r[0]%bs != 0 || r[1]%bs != 0 {
			t.Fatalf("discard %v not of whole blocks", r)
		}
		for b := uint64(r[0] / bs); b < uint64((r[0]+r[1])/bs); b++ {
			g := f.groupOf(b)
			bm, err := f.blockBitmap(g)
			if err != nil {
				t.Fatal(err)
			}
			if testBit(bm, uint32(b-f.groupFirstBlock(g))) {
				t.Fatalf("block %d discarded while in use", b)
			}
		}
	}
}

func sum(ranges [][2]int64) uint64 {
	n := uint64(0)
	for _, r := range ranges {
		n += uint64(r[1])
	}
	return n
}

// FITRIM after a file is written and deleted: the file's blocks are
// among those discarded (none of its pattern is left in the image),
// every discarded block is free, len is what was discarded, e2fsck
// finds nothing; minlen, start and len bound what is discarded.
func TestTrim(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, v := range []struct {
		name string
		opts []string
	}{{"ext4", []string{"-t", "ext4"}}, {"ext4-4k", []string{"-t", "ext4", "-b", "4096"}}, {"ext2", []string{"-t", "ext2"}}} {
		t.Run(v.name, func(t *testing.T) {
			f, d := mountDisc(t, Options{}, v.opts...)
			bs := uint64(f.blockSize)
			patterned(t, f, "keep", 50, 0x3c)
			patterned(t, f, "gone", 300, 0x5a)
			ok(t, f.Sync())
			ok(t, f.Unlink(RootIno, "gone"))
			// Freed, not yet committed: not free for FITRIM.
			if f.jnl != nil {
				n, err := f.Trim(0, 1<<62, 0)
				ok(t, err)
				checkFree(t, f, d.discards())
				if blocksOf(f, d, 0x5a) != 300 {
					t.Fatalf("blocks freed by an uncommitted transaction were discarded (%d bytes trimmed)", n)
				}
			}
			ok(t, f.Sync())
			d.mu.Lock()
			d.got = nil
			d.mu.Unlock()
			n, err := f.Trim(0, 1<<62, 0)
			ok(t, err)
			got := d.discards()
			if n == 0 || n != sum(got) || n%bs != 0 {
				t.Fatalf("trimmed %d bytes, the device got %v (%d bytes)", n, got, sum(got))
			}
			if left := blocksOf(f, d, 0x5a); left != 0 {
				t.Errorf("%d blocks of the deleted file not discarded", left)
			}
			if kept := blocksOf(f, d, 0x3c); kept != 50 {
				t.Errorf("%d blocks of the kept file left, want 50", kept)
			}
			checkFree(t, f, got)
			if free := f.Statfs().Free; n > free*bs {
				t.Errorf("trimmed %d bytes of %d free", n, free*bs)
			}
			fsck(t, d.memDev)

			// minlen: only runs at least that long (the groups
			// forgotten as trimmed, so that they are looked at).
			d.mu.Lock()
			d.got = nil
			d.mu.Unlock()
			f.mu.Lock()
			f.trimmed = nil
			f.mu.Unlock()
			_, err = f.Trim(0, 1<<62, 64*bs)
			ok(t, err)
			if len(d.discards()) == 0 {
				t.Error("no run of 64 blocks on a nearly empty file system")
			}
			for _, r := range d.discards() {
				if uint64(r[1]) < 64*bs {
					t.Errorf("a run of %d bytes with minlen %d", r[1], 64*bs)
				}
			}
			// start and len: only within [start, start+len).
			d.mu.Lock()
			d.got = nil
			d.mu.Unlock()
			start, length := 3000*bs+7, 5000*bs
			_, err = f.Trim(start, length, 0)
			ok(t, err)
			for _, r := range d.discards() {
				if uint64(r[0]) < start/bs*bs || uint64(r[0]+r[1]) > start/bs*bs+length {
					t.Errorf("discard %v outside [%d, %d)", r, start, start+length)
				}
			}
			// Linux's EINVAL cases.
			for _, c := range []struct{ start, length, minLen uint64 }{
				{0, 1 << 62, (uint64(f.sb.blocksPerGroup) + 1) * bs},
				{f.sb.blocksCount * bs, 1 << 40, 0},
				{0, bs - 1, 0},
			} {
				if _, err := f.Trim(c.start, c.length, c.minLen); !errors.Is(err, linux.EINVAL) {
					t.Errorf("Trim(%d, %d, %d) = %v, want EINVAL", c.start, c.length, c.minLen, err)
				}
			}
			fsck(t, d.memDev)
		})
	}
}

// A device without discards: EOPNOTSUPP.
func TestTrimUnsupported(t *testing.T) {
	f, _ := mountRW(t, "16M", "-t", "ext4")
	if f.CanDiscard() {
		t.Error("CanDiscard on a device without discards")
	}
	if _, err := f.Trim(0, 1<<30, 0); !errors.Is(err, linux.EOPNOTSUPP) {
		t.Errorf("Trim: %v, want EOPNOTSUPP", err)
	}
}

// Allocation goes on while FITRIM discards, and never gets a block that
// is being discarded: a file written from inside the device's discard
// (FS.mu is not held then) reads back whole, and the discards and the
// file's blocks do not meet.
func TestTrimRacesAllocation(t *testing.T) {
	f, d := mountDisc(t, Options{}, "-t", "ext4")
	var once sync.Once
	var ino uint32
	d.duringMu.Lock()
	d.during = func(off, n int64) {
		once.Do(func() { ino = patterned(t, f, "during", 400, 0x77) })
	}
	d.duringMu.Unlock()
	n, err := f.Trim(0, 1<<62, 0)
	ok(t, err)
	if n == 0 || ino == 0 {
		t.Fatalf("trimmed %d bytes; file written during it: %d", n, ino)
	}
	if got := readAll(t, f, ino); !bytes.Equal(got, bytes.Repeat([]byte{0x77}, 400*int(f.blockSize))) {
		t.Error("a file allocated during FITRIM lost data to its discards")
	}
	if blocksOf(f, d, 0x77) != 400 {
		t.Errorf("%d blocks of the file in the image, want 400", blocksOf(f, d, 0x77))
	}
	f.mu.Lock()
	if len(f.trimming) != 0 {
		t.Errorf("reservations left after FITRIM: %d groups", len(f.trimming))
	}
	f.mu.Unlock()
	fsck(t, d.memDev)
}

// The discard mount option: a deleted file's blocks are discarded once
// the transaction that freed them is durable (its commit block written
// and flushed), not before; without the option, never. Without a
// journal, at once.
func TestDiscardOption(t *testing.T) {
	f, d := mountDisc(t, Options{Discard: true}, "-t", "ext4")
	patterned(t, f, "gone", 300, 0x5a)
	ok(t, f.Sync())
	if got := d.discards(); len(got) != 0 {
		t.Fatalf("discards with nothing freed: %v", got)
	}
	ok(t, f.Unlink(RootIno, "gone"))
	if got := d.discards(); len(got) != 0 {
		t.Fatalf("discards before the commit: %v", got)
	}
	flushes := d.memDev.flushes
	ok(t, f.Sync())
	got := d.discards()
	if len(got) == 0 || blocksOf(f, d, 0x5a) != 0 {
		t.Fatalf("after the commit: discards %v, %d blocks of the file left", got, blocksOf(f, d, 0x5a))
	}
	for _, fl := range d.flushes {
		if fl < flushes+2 {
			t.Errorf("a discard after %d of the commit's flushes, want both", fl-flushes)
		}
	}
	checkFree(t, f, got)
	fsck(t, d.memDev)

	plain, pd := mountDisc(t, Options{}, "-t", "ext4")
	patterned(t, plain, "gone", 30, 0x5a)
	ok(t, plain.Sync())
	ok(t, plain.Unlink(RootIno, "gone"))
	ok(t, plain.Sync())
	if got := pd.discards(); len(got) != 0 {
		t.Errorf("discards without the option: %v", got)
	}

	e2, ed := mountDisc(t, Options{Discard: true}, "-t", "ext2")
	patterned(t, e2, "gone", 30, 0x5a)
	ok(t, e2.Unlink(RootIno, "gone"))
	if blocksOf(e2, ed, 0x5a) != 0 || len(ed.discards()) == 0 {
		t.Errorf("ext2 with discard: %d blocks left, discards %v", blocksOf(e2, ed, 0x5a), ed.discards())
	}
	fsck(t, ed.memDev)
}

// As on Linux, a group trimmed whole is skipped by the next FITRIM until
// a block is freed in it, unless the minimum is smaller; blocks held
// back (freed, not yet durable) keep their group unmarked.
func TestTrimSkipsTrimmedGroups(t *testing.T) {
	f, d := mountDisc(t, Options{}, "-t", "ext4")
	bs := uint64(f.blockSize)
	trim := func(minLen uint64) uint64 {
		t.Helper()
		n, err := f.Trim(0, 1<<62, minLen)
		ok(t, err)
		return n
	}
	if n := trim(64 * bs); n == 0 {
		t.Fatal("nothing trimmed on a fresh file system")
	}
	if n := trim(64 * bs); n != 0 {
		t.Errorf("trimmed %d bytes again with nothing freed", n)
	}
	if n := trim(0); n == 0 {
		t.Error("a smaller minimum trimmed nothing")
	}
	if n := trim(0); n != 0 {
		t.Errorf("trimmed %d bytes a third time", n)
	}
	patterned(t, f, "gone", 300, 0x5a)
	ok(t, f.Sync())
	ok(t, f.Unlink(RootIno, "gone"))
	trim(0) // the file's blocks are held back: its groups stay unmarked
	if blocksOf(f, d, 0x5a) != 300 {
		t.Fatal("blocks of an uncommitted free discarded")
	}
	ok(t, f.Sync())
	if n := trim(0); n < 300*bs || blocksOf(f, d, 0x5a) != 0 {
		t.Errorf("after the commit: trimmed %d bytes, %d blocks of the file left", n, blocksOf(f, d, 0x5a))
	}
	if n := trim(0); n != 0 {
		t.Errorf("trimmed %d bytes again", n)
	}
	fsck(t, d.memDev)
}
