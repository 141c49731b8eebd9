package ext4

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Journals needing recovery are made by debugfs's journal writer
// (jo/jw/jc), which shares its log format code with e2fsck and Linux.
// Each test checks that Mount replays them to the same blocks as e2fsck
// -fy does, and that e2fsck -fn then finds the file system clean.

// dirtyJournal makes an image with mke2fs opts, runs the debugfs script
// on it and returns the image bytes.
func dirtyJournal(t *testing.T, script string, opts ...string) []byte {
	t.Helper()
	img := mkfs(t, "64M", "", opts...)
	cmds := filepath.Join(t.TempDir(), "cmds")
	os.WriteFile(cmds, []byte(script), 0o644)
	out, err := exec.Command("debugfs", "-w", "-f", cmds, img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	b, _ := os.ReadFile(img)
	return b
}

// e2fsckReplay returns the image as e2fsck -fy recovers it.
func e2fsckReplay(t *testing.T, b []byte) []byte {
	t.Helper()
	img := filepath.Join(t.TempDir(), "ref")
	os.WriteFile(img, b, 0o644)
	out, err := exec.Command("e2fsck", "-fy", img).CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck -fy: %v\n%s", err, out)
		}
	}
	ref, _ := os.ReadFile(img)
	return ref
}

func payload(t *testing.T, size int, seed int64) string {
	b := make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(b)
	// A block starting with the journal magic is escaped in the log.
	if size >= 8192 {
		be.PutUint32(b[size/2:], jbdMagic)
	}
	p := filepath.Join(t.TempDir(), "payload")
	os.WriteFile(p, b, 0o644)
	return p
}

func TestJournalReplay(t *testing.T) {
	needTools(t)
	cases := []struct {
		name   string
		opts   []string
		script func(p string) string
		blocks []uint64 // blocks whose contents replay changes (or must not)
	}{
		{"ext4-1k", []string{"-t", "ext4", "-b", "1024"}, func(p string) string {
			return "jo\njw -b 60000,60001,60002,60003,60004,60005,60006,60007 " + p + "\njc\n"
		}, []uint64{60000, 60001, 60002, 60003, 60004, 60005, 60006, 60007}},
		{"ext4-csum-v3-revoke", []string{"-t", "ext4", "-b", "4096"}, func(p string) string {
			return "jo -c\njw -b 14000,14001 " + p + "\njc\njo\njw -b 14002,14003 " + p + "\njw -r 14000\njc\n"
		}, []uint64{14000, 14001, 14002, 14003}},
		{"ext3", []string{"-t", "ext3", "-b", "4096"}, func(p string) string {
			return "jo\njw -b 14000,14001 " + p + "\njc\n"
		}, []uint64{14000, 14001}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bs := 4096
			if strings.Contains(c.name, "1k") {
				bs = 1024
			}
			p := payload(t, 8192, 5)
			b := dirtyJournal(t, c.script(p), c.opts...)
			if le.Uint32(b[superOffset+0x60:])&incompatRecover == 0 {
				t.Fatal("debugfs left no journal to recover")
			}
			ref := e2fsckReplay(t, b)
			dev := &memDev{b: b}
			f, err := Mount(dev, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			changed := 0
			orig := dirtyJournal(t, "", c.opts...)
			for _, blk := range c.blocks {
				off := int(blk) * bs
				got, want := dev.b[off:off+bs], ref[off:off+bs]
				if !bytes.Equal(got, want) {
					t.Errorf("block %d differs from e2fsck's replay", blk)
				}
				if !bytes.Equal(got, orig[off:off+bs]) {
					changed++
				}
			}
			if changed == 0 {
				t.Error("replay changed nothing")
			}
			if f.sb.incompat&incompatRecover != 0 {
				t.Error("needs_recovery still set")
			}
			fsck(t, dev)
			// The revoked block keeps its old contents.
			if c.name == "ext4-csum-v3-revoke" && !bytes.Equal(dev.b[14000*bs:14001*bs], orig[14000*bs:14001*bs]) {
				t.Error("revoked block 14000 was replayed")
			}
		})
	}
}

// TestJournalTornCommit damages the last transaction's commit block: it
// must not be replayed, the one before it must.
func TestJournalTornCommit(t *testing.T) {
	needTools(t)
	p := payload(t, 8192, 6)
	b := dirtyJournal(t, "jo -c\njw -b 14000,14001 "+p+"\njc\njo\njw -b 15000,15001 "+p+"\njc\n", "-t", "ext4", "-b", "4096")
	dev := &memDev{b: b}
	// Find the second commit block (journal block 8) through the journal
	// inode of a copy whose superblock does not ask for recovery.
	sb := &memDev{b: append([]byte(nil), b...)}
	le.PutUint32(sb.b[superOffset+0x60:], le.Uint32(sb.b[superOffset+0x60:])&^incompatRecover)
	le.PutUint32(sb.b[superOffset+0x3FC:], crc32c(^uint32(0), sb.b[superOffset:superOffset+0x3FC]))
	g, err := Mount(sb, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	jin, _ := g.iget(journalIno)
	fm, _ := g.mapping(jin)
	commit, _, _, _ := fm.lookup(8, 1)
	if be.Uint32(dev.b[commit*4096+4:]) != jbdCommit {
		t.Fatalf("journal block 8 is not a commit block")
	}
	dev.b[commit*4096+100] ^= 1
	if _, err := Mount(dev, Options{}); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(p)
	if !bytes.Equal(dev.b[14000*4096:14002*4096], want) {
		t.Error("first transaction not replayed")
	}
	if bytes.Equal(dev.b[15000*4096:15002*4096], want) {
		t.Error("torn transaction replayed")
	}
	fsck(t, dev)
}
