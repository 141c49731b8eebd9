package ext4

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// A disk keeps a 512-byte sector whole, not the 1024-byte superblocks of
// the file system and of the journal: a power cut while such a write is
// in the cache may land some of its sectors. These tests cut at every
// flush of a workload and tear those writes.

var tornVariants = []struct {
	name string
	opts []string
}{
	{"ext4", []string{"-t", "ext4"}},
	{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}},
}

// touches reports whether a write covers any of [lo, hi).
func (w recWrite) touches(lo, hi int64) bool {
	return w.off < hi && w.off+int64(len(w.data)) > lo
}

// tearCut returns the disk after a cut following flush k (-1: before
// any): every write before it, and after it every write up to the next
// flush except those torn selects, of which only the 512-byte sectors
// land that sector selects (by index in the write).
func (d *recDev) tearCut(k int, torn func(i int) bool, sector func(s int) bool) *memDev {
	img := append([]byte(nil), d.base...)
	durable, end := 0, len(d.writes)
	if k >= 0 {
		durable = d.flushes[k]
	}
	if k+1 < len(d.flushes) {
		end = d.flushes[k+1]
	}
	for i, w := range d.writes[:end] {
		if i < durable || !torn(i) {
			copy(img[w.off:], w.data)
			continue
		}
		for s := 0; s*512 < len(w.data); s++ {
			if sector(s) {
				copy(img[w.off+int64(s*512):], w.data[s*512:(s+1)*512])
			}
		}
	}
	return &memDev{b: img}
}

// fsckStrict runs e2fsck -fn on a disk left by Unmount: clean, and not
// even the free counts in the superblock off (e2fsck reports those but
// exits 0).
func fsckStrict(t *testing.T, d *memDev) string {
	t.Helper()
	img := saveImage(t, d)
	out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput()
	if err != nil || strings.Contains(string(out), "wrong") || strings.Contains(string(out), "recovery") {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
	return string(out)
}

// tornWorkload changes the file system through the journal, with a file
// unlinked while open (the orphan list's head is in the superblock, so
// the superblock goes through the log and is checkpointed home), and
// syncs and checkpoints after each step, as a log filling up would, so
// that both superblocks are written at every step. It returns the names left in the root.
func tornWorkload(t *testing.T, f *FS) []string {
	data := bytes.Repeat([]byte("torn"), 3000)
	for i := 0; i < 3; i++ {
		ino := okIno(t)(f.Create(RootIno, string(rune('a'+i)), linux.S_IFREG|0o644, 0, 0, 0, 0))
		writeAll(t, f, ino, data, 0)
		ok(t, f.syncHome())
	}
	o := okIno(t)(f.Create(RootIno, "open", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, o, data, 0)
	f.Hold(o)
	ok(t, f.Unlink(RootIno, "open"))
	ok(t, f.syncHome())
	ok(t, f.Release(o))
	ok(t, f.syncHome())
	return []string{"a", "b", "c"}
}

// TestTornSuperblock: no power cut after the mount returned, whatever
// part of a superblock write it lands, keeps the file system from
// mounting. Ordinary changes never write the superblock home (needs
// recovery is set once, at mount, and the free counts stay in memory);
// the orphan list's head goes through the journal, and a checkpoint of
// it torn is written whole again by recovery from the log, which still
// holds it.
//
// The mount's own write of the superblock (setting needs_recovery) and
// Unmount's (clearing it) can be torn by a cut during them, as Linux's
// can: they are flushed before Mount and Unmount return, and the cuts
// here begin after.
func TestTornSuperblock(t *testing.T) {
	for _, v := range tornVariants {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", v.opts...))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			if n := len(d.flushes); n == 0 || d.flushes[n-1] != len(d.writes) {
				t.Fatal("Mount returned with writes not flushed")
			}
			if le.Uint32(d.b[superOffset+0x60:])&incompatRecover == 0 {
				t.Fatal("a read-write mount left needs_recovery clear on the disk")
			}
			first := len(d.flushes) - 1
			names := tornWorkload(t, f)
			sbWrites, torn := 0, 0
			isSB := func(i int) bool { return d.writes[i].touches(superOffset, superOffset+superSize) }
			for i := first; i < len(d.writes); i++ {
				if i >= d.flushes[first] && isSB(i) {
					sbWrites++
				}
			}
			if sbWrites == 0 {
				t.Fatal("the orphan list's head never went home: nothing to tear")
			}
			for k := first; k < len(d.flushes); k++ {
				end := len(d.writes)
				if k+1 < len(d.flushes) {
					end = d.flushes[k+1]
				}
				any := false
				for i := d.flushes[k]; i < end; i++ {
					any = any || isSB(i)
				}
				if !any {
					continue
				}
				for half := 0; half < 2; half++ {
					// the superblock's first or second sector lands
					s0 := int(superOffset % int64(f.blockSize) / 512)
					c := d.tearCut(k, isSB, func(s int) bool { return s == s0+half })
					torn++
					g, err := mountDev(t, c, Options{})
					if err != nil {
						t.Errorf("cut after flush %d, superblock torn (its sector %d landed): %v", k, half, err)
						continue
					}
					for _, n := range names {
						if _, err := g.Lookup(RootIno, n); err != nil {
							t.Errorf("cut after flush %d (sector %d): %s: %v", k, half, n, err)
						}
					}
					fsck(t, c)
				}
			}
			if torn == 0 {
				t.Fatal("no superblock write after a flush: nothing was torn")
			}
		})
	}
}

// TestSuperHomeOnlyAtMount: between a read-write mount and its Unmount
// the superblock is written home only as the checkpoint of a logged copy
// (the orphan list), never by ordinary changes and syncs; Unmount writes
// it once, flushed, with needs_recovery clear and free counts that
// e2fsck agrees with. Remount read-only does as Unmount, and read-write
// again sets the flag again. The backup superblocks are never written.
func TestSuperHomeOnlyAtMount(t *testing.T) {
	for _, v := range tornVariants {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", v.opts...))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			sbWrites := func(from int) int {
				n := 0
				for _, w := range d.writes[from:] {
					if w.touches(superOffset, superOffset+superSize) {
						n++
					}
				}
				return n
			}
			if n := sbWrites(0); n != 1 {
				t.Errorf("the mount wrote the superblock %d times, want 1", n)
			}
			start := len(d.writes)
			must := okIno(t)
			dir := must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
			for i := 0; i < 20; i++ {
				name := string(rune('a' + i))
				ino := must(f.Create(dir, name, linux.S_IFREG|0o644, 0, 0, 0, 0))
				writeAll(t, f, ino, bytes.Repeat([]byte{byte(i)}, 5000*i), 0)
				if i%3 == 0 {
					ok(t, f.Truncate(ino, 100))
				}
				if i%4 == 0 {
					ok(t, f.Unlink(dir, name))
				}
				ok(t, f.Sync())
			}
			ok(t, f.Rename(dir, "b", RootIno, "moved", 0))
			_, err = f.Commit()
			ok(t, err)
			ok(t, f.Sync())
			if n := sbWrites(start); n != 0 {
				t.Errorf("creates, writes, truncates, unlinks and syncs wrote the superblock home %d times", n)
			}
			if got := le.Uint32(d.b[superOffset+0x60:]); got&incompatRecover == 0 {
				t.Error("needs_recovery clear on the disk while mounted read-write")
			}

			// Remount read-only: clean on the disk, as after Unmount.
			start = len(d.writes)
			ok(t, f.Remount(true))
			if n := sbWrites(start); n != 1 || d.flushes[len(d.flushes)-1] != len(d.writes) {
				t.Errorf("remount read-only: %d superblock writes, want 1, flushed", n)
			}
			fsckStrict(t, &d.memDev)
			if _, err := f.Create(RootIno, "ro", linux.S_IFREG|0o644, 0, 0, 0, 0); err == nil {
				t.Error("create on a file system remounted read-only")
			}
			ok(t, f.Remount(false))
			if got := le.Uint32(d.b[superOffset+0x60:]); got&incompatRecover == 0 {
				t.Error("remount read-write left needs_recovery clear")
			}
			must(f.Create(RootIno, "rw", linux.S_IFREG|0o644, 0, 0, 0, 0))

			start = len(d.writes)
			ok(t, f.Unmount())
			if n := sbWrites(start); n != 1 {
				t.Errorf("Unmount wrote the superblock %d times, want 1", n)
			}
			if d.flushes[len(d.flushes)-1] != len(d.writes) {
				t.Error("Unmount returned with writes not flushed")
			}
			if got := le.Uint32(d.b[superOffset+0x60:]); got&incompatRecover != 0 {
				t.Error("needs_recovery still set after Unmount")
			}
			fsckStrict(t, &d.memDev)
			if _, err := f.Create(RootIno, "late", linux.S_IFREG|0o644, 0, 0, 0, 0); err == nil {
				t.Error("create after Unmount")
			}

			// Backups: group 1 holds one (sparse_super); nothing wrote it.
			bpg := int64(f.sb.blocksPerGroup)
			backup := (int64(f.sb.firstDataBlock) + bpg) * int64(f.blockSize)
			for i, w := range d.writes {
				if w.touches(backup, backup+superSize) {
					t.Errorf("write %d went to the backup superblock", i)
				}
			}
			g, err := mountDev(t, &memDev{b: append([]byte(nil), d.b...)}, Options{})
			ok(t, err)
			for _, n := range []string{"moved", "rw"} {
				if _, err := g.Lookup(RootIno, n); err != nil {
					t.Errorf("%s after Unmount and mount: %v", n, err)
				}
			}
		})
	}
}

// TestFreeCountsFromGroups: the superblock's free counts are not trusted
// (Linux keeps them in memory and writes them only at unmount): mount
// sums the group descriptors', and Unmount leaves counts e2fsck agrees
// with even when the superblock's were wrong.
func TestFreeCountsFromGroups(t *testing.T) {
	for _, v := range append(tornVariants, struct {
		name string
		opts []string
	}{"ext2", []string{"-t", "ext2"}}) {
		t.Run(v.name, func(t *testing.T) {
			d := loadImage(t, mkfs(t, "16M", "", v.opts...))
			wantBlocks, wantInodes := uint64(le.Uint32(d.b[superOffset+0xC:])), le.Uint32(d.b[superOffset+0x10:])
			patchSuper(d, func(sb []byte) {
				le.PutUint32(sb[0xC:], 7)
				le.PutUint32(sb[0x10:], 3)
			})
			f, err := mountDev(t, d, Options{})
			ok(t, err)
			var sumB uint64
			var sumI uint32
			for _, g := range f.groups {
				sumB += uint64(g.freeBlocks)
				sumI += g.freeInodes
			}
			st := f.Statfs()
			if st.Free != sumB || st.FilesFree != uint64(sumI) {
				t.Errorf("statfs free %d blocks, %d inodes; the group descriptors say %d, %d", st.Free, st.FilesFree, sumB, sumI)
			}
			if st.Free != wantBlocks || st.FilesFree != uint64(wantInodes) {
				t.Errorf("statfs free %d blocks, %d inodes; mke2fs wrote %d, %d", st.Free, st.FilesFree, wantBlocks, wantInodes)
			}
			ino := okIno(t)(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, ino, make([]byte, 40000), 0)
			if st2 := f.Statfs(); st2.Free >= st.Free || st2.FilesFree != st.FilesFree-1 {
				t.Errorf("after a 40000-byte file: %d free blocks (from %d), %d free inodes (from %d)", st2.Free, st.Free, st2.FilesFree, st.FilesFree)
			}
			ok(t, f.Unmount())
			fsckStrict(t, d)
		})
	}
}

// TestTornJournalSuper: the journal superblock is written at the first
// commit into an empty log (pointing at it) and at every checkpoint
// (emptying it), and torn it would fail
// its checksum, which Linux refuses. Every write of it changes only its
// first 512-byte sector, so a cut that lands any part of it leaves the
// old one or the new one, whole: the disk mounts, and e2fsck finds it
// clean.
//
// mke2fs leaves the journal without checksums; a read-write mount of a
// metadata_csum file system turns v3 on (as Linux's first mount does),
// so the csum variants are those, and the others are made without
// metadata_csum, whose journal stays without checksums.
func TestTornJournalSuper(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, v := range tornVariants {
		for _, csum := range []bool{false, true} {
			name := v.name
			if csum {
				name += "-csum"
			}
			t.Run(name, func(t *testing.T) { tornJournalSuper(t, v.opts, csum) })
		}
	}
}

func tornJournalSuper(t *testing.T, opts []string, csum bool) {
	if !csum {
		opts = append(opts[:len(opts):len(opts)], "-O", "^metadata_csum")
	}
	path := mkfs(t, "16M", "", opts...)
	img := loadImage(t, path)
	d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
	f, err := Mount(d, Options{})
	ok(t, err)
	if got := f.jnl.r.jsb.csumV23(); got != csum {
		t.Fatalf("journal checksums %v, want %v", got, csum)
	}
	jsb := int64(f.jnl.jsbPhys) * int64(f.blockSize)
	first := len(d.flushes) - 1
	tornWorkload(t, f)
	isJSB := func(i int) bool { return d.writes[i].off == jsb }
	// Each write of it against the one before (or the image's).
	prev := d.base[jsb : jsb+int64(f.blockSize)]
	seen := 0
	for i, w := range d.writes {
		if !isJSB(i) {
			continue
		}
		seen++
		if !bytes.Equal(prev[512:], w.data[512:]) {
			t.Errorf("journal superblock write %d changes bytes past its first sector", i)
		}
		prev = w.data
	}
	if seen < 4 {
		t.Fatalf("%d journal superblock writes", seen)
	}
	cuts := 0
	for k := first; k < len(d.flushes); k++ {
		end := len(d.writes)
		if k+1 < len(d.flushes) {
			end = d.flushes[k+1]
		}
		any := false
		for i := d.flushes[k]; i < end; i++ {
			any = any || isJSB(i)
		}
		if !any {
			continue
		}
		// Its first sector alone, or all but its first.
		for _, keep := range []func(int) bool{func(s int) bool { return s == 0 }, func(s int) bool { return s != 0 }} {
			c := d.tearCut(k, isJSB, keep)
			cuts++
			if _, err := mountDev(t, c, Options{}); err != nil {
				t.Errorf("cut after flush %d, journal superblock torn: %v", k, err)
				continue
			}
			fsck(t, c)
		}
	}
	if cuts == 0 {
		t.Fatal("no journal superblock write after a flush")
	}
}
