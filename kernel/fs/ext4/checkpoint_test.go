package ext4

import (
	"bytes"
	"fmt"
	"testing"

	"shortbread/kernel/abi/linux"
)

// TestCheckpointGivesBack: a Sync leaves the committed metadata in the
// log and its copies in memory; Checkpoint (sync(2), syncfs) writes them
// home, empties the log and drops the copies. The log is used again
// from its start afterwards, and a disk cut after the next commit
// recovers everything, by this package and with e2fsck clean.
func TestCheckpointGivesBack(t *testing.T) {
	needTools(t)
	f, dev := mountRW(t, "32M", "-t", "ext4")
	must := okIno(t)
	dir := must(f.Mkdir(RootIno, "spool", 0o755, 0, 0))
	want := map[string][]byte{}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			name := fmt.Sprintf("m%03d", i)
			data := bytes.Repeat([]byte(name), 200+i)
			writeAll(t, f, must(f.Create(dir, name, linux.S_IFREG|0o644, 0, 0, 0, 0)), data, 0)
			want[name] = data
		}
	}
	create(0, 100)
	ok(t, f.Sync())
	held := len(f.jnl.ckpt)
	if held == 0 || f.jnl.r.jsb.start == 0 {
		t.Fatalf("after Sync: %d committed blocks held, log start %d: nothing to checkpoint", held, f.jnl.r.jsb.start)
	}
	ok(t, f.Checkpoint())
	if n := len(f.jnl.ckpt); n != 0 || f.jnl.held != nil || f.jnl.r.jsb.start != 0 || f.jnl.head != f.jnl.r.jsb.first {
		t.Fatalf("after Checkpoint: %d of %d blocks still held, held frees %v, log start %d, head %d (first %d)",
			n, held, f.jnl.held, f.jnl.r.jsb.start, f.jnl.head, f.jnl.r.jsb.first)
	}
	ok(t, f.Checkpoint()) // nothing left: no write, no error
	create(100, 150)
	ok(t, f.Unlink(dir, "m007"))
	delete(want, "m007")
	ok(t, f.Sync())
	if f.jnl.r.jsb.start != f.jnl.r.jsb.first {
		t.Errorf("the commit after a checkpoint starts the log at %d, not its first block %d", f.jnl.r.jsb.start, f.jnl.r.jsb.first)
	}
	// A power cut now: the log's last transaction replays over the
	// checkpointed home blocks.
	g, err := Mount(&memDev{b: append([]byte(nil), dev.b...)}, Options{})
	ok(t, err)
	sp, err := g.Lookup(RootIno, "spool")
	ok(t, err)
	for name, data := range want {
		ino, err := g.Lookup(sp, name)
		if err != nil {
			t.Fatalf("after replay: %s: %v", name, err)
		}
		if got := readAll(t, g, ino); !bytes.Equal(got, data) {
			t.Fatalf("after replay: %s: %d bytes, want %d", name, len(got), len(data))
		}
	}
	if _, err := g.Lookup(sp, "m007"); err == nil {
		t.Error("after replay: the unlinked m007 is back")
	}
	fsck(t, dev)
}
