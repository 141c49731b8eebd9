package ext4

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

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
			g, err := mountDev(ours, Options{})
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
