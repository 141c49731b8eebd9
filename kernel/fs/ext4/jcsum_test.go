package ext4

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// The log as Shortbread writes it, read by e2fsprogs: debugfs's logdump
// walks it (its own parser of descriptors, tags and commit blocks), and
// e2fsck -fy replays it with jbd2's recovery code, which verifies the
// v2/v3 checksums of descriptor tails, tags and commit blocks and says so
// when one fails.

// setJournalCsum rewrites the journal superblock of the image on d
// (empty log) to use checksum feature v (jbdIncompatCsumV2 or V3).
func setJournalCsum(t *testing.T, d *memDev, v uint32) {
	t.Helper()
	f, err := Mount(&memDev{b: append([]byte(nil), d.b...)}, Options{ReadOnly: true})
	ok(t, err)
	_, phys, err := f.readJournal()
	ok(t, err)
	b := d.b[int64(phys)*int64(f.blockSize):][:1024]
	inc := be.Uint32(b[0x28:])&^(jbdIncompatCsumV2|jbdIncompatCsumV3) | v
	be.PutUint32(b[0x24:], be.Uint32(b[0x24:])&^jbdCompatChecksum)
	be.PutUint32(b[0x28:], inc)
	b[0x50] = 4
	be.PutUint32(b[0xFC:], journalSuperCsum(b))
}

// e2fsckRecover runs e2fsck -fy on a copy of b and fails the test if its
// journal recovery reports anything: a checksum failure, an unreadable
// block, a pass ending at another transaction than the scan.
func e2fsckRecover(t *testing.T, b []byte) *memDev {
	t.Helper()
	img := filepath.Join(t.TempDir(), "rec")
	os.WriteFile(img, b, 0o644)
	out, err := exec.Command("e2fsck", "-fy", img).CombinedOutput()
	if ee, isExit := err.(*exec.ExitError); err != nil && (!isExit || ee.ExitCode() > 1) {
		t.Fatalf("e2fsck -fy: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "recovering journal") {
		t.Fatalf("e2fsck -fy recovered no journal:\n%s", s)
	}
	for _, bad := range []string{"checksum", "JBD2", "Journal", "journal superblock"} {
		if strings.Contains(s, bad) {
			t.Fatalf("e2fsck -fy on Shortbread's log says %q:\n%s", bad, s)
		}
	}
	r, _ := os.ReadFile(img)
	return &memDev{b: r}
}

// logdump is what debugfs's logdump -a reads in the log of b.
type logdump struct {
	seqs   []uint32 // committed transactions, in order
	descs  map[uint32]int
	homes  map[uint64]bool // blocks logged
	tagsOf map[uint32]int  // tags per transaction
	out    string
}

var (
	ldFound = regexp.MustCompile(`Found expected sequence (\d+), type (\d+) \([a-z ]+\) at block (\d+)`)
	ldTag   = regexp.MustCompile(`FS block (\d+) logged at journal block (\d+) \(flags 0x([0-9a-f]+)\)`)
)

func readLogdump(t *testing.T, b []byte) logdump {
	t.Helper()
	img := filepath.Join(t.TempDir(), "ld")
	os.WriteFile(img, b, 0o644)
	out, err := exec.Command("debugfs", "-R", "logdump -a", img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs logdump: %v\n%s", err, out)
	}
	ld := logdump{descs: map[uint32]int{}, homes: map[uint64]bool{}, tagsOf: map[uint32]int{}, out: string(out)}
	var cur uint32
	for _, line := range strings.Split(ld.out, "\n") {
		if m := ldFound.FindStringSubmatch(line); m != nil {
			seq, _ := strconv.ParseUint(m[1], 10, 32)
			cur = uint32(seq)
			switch m[2] {
			case "1":
				ld.descs[cur]++
			case "2":
				ld.seqs = append(ld.seqs, cur)
			}
		} else if m := ldTag.FindStringSubmatch(line); m != nil {
			home, _ := strconv.ParseUint(m[1], 10, 64)
			ld.homes[home] = true
			ld.tagsOf[cur]++
		}
	}
	if !strings.Contains(ld.out, "end of journal") {
		t.Fatalf("logdump found no end of the log:\n%s", ld.out)
	}
	return ld
}

// TestLogReadByE2fsprogs leaves a log of several committed transactions
// unreplayed (a crash before any checkpoint), with checksums v3, v2 and
// none, and one transaction needing several descriptor blocks: logdump
// must find every transaction and every block Shortbread logged, e2fsck's
// replay must verify every checksum and end at the same transaction as
// Shortbread's, and both replays must write the same blocks home.
func TestLogReadByE2fsprogs(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	for _, v := range []struct {
		name string
		opts []string
		csum uint32 // the journal's checksum feature as written
		set  uint32 // the feature set in the journal before the mount
	}{
		{"v3-1k", []string{"-t", "ext4", "-b", "1024", "-I", "256"}, jbdIncompatCsumV3, 0},
		{"v3-4k", []string{"-t", "ext4", "-b", "4096"}, jbdIncompatCsumV3, 0},
		// Linux's mount turns a v2 journal of a metadata_csum file
		// system to v3; without metadata_csum the journal keeps v2.
		{"v2-to-v3", []string{"-t", "ext4", "-b", "1024", "-I", "256"}, jbdIncompatCsumV3, jbdIncompatCsumV2},
		{"v2-1k", []string{"-t", "ext4", "-b", "1024", "-I", "256", "-O", "^metadata_csum"}, jbdIncompatCsumV2, jbdIncompatCsumV2},
		{"v2-4k-32bit", []string{"-t", "ext4", "-b", "4096", "-O", "^metadata_csum,^64bit"}, jbdIncompatCsumV2, jbdIncompatCsumV2},
		{"none", []string{"-t", "ext4", "-b", "1024", "-I", "256", "-O", "^metadata_csum"}, 0, 0},
		{"ext3", []string{"-t", "ext3", "-b", "1024", "-I", "256"}, 0, 0},
	} {
		t.Run(v.name, func(t *testing.T) {
			d := loadImage(t, mkfs(t, "32M", "", v.opts...))
			if v.set != 0 {
				setJournalCsum(t, d, v.set)
			}
			f, err := Mount(d, Options{})
			ok(t, err)
			jsb := f.jnl.r.jsb
			if got := jsb.incompat & (jbdIncompatCsumV2 | jbdIncompatCsumV3); got != v.csum {
				t.Fatalf("journal checksum features %#x, want %#x", got, v.csum)
			}
			first := jsb.sequence
			// Transaction 1: a directory of 600 files, enough inode
			// table and directory blocks for several descriptors at 1k.
			dir := okIno(t)(f.Mkdir(RootIno, "d", 0o755, 0, 0))
			for i := 0; i < 600; i++ {
				ino := okIno(t)(f.Create(dir, fmt.Sprintf("f%03d", i), linux.S_IFREG|0o644, 0, 0, 0, 0))
				writeAll(t, f, ino, []byte(fmt.Sprintf("file %d\n", i)), 0)
			}
			ok(t, f.Sync())
			// Transaction 2: renames and unlinks.
			for i := 0; i < 600; i += 7 {
				ok(t, f.Rename(dir, fmt.Sprintf("f%03d", i), RootIno, fmt.Sprintf("r%03d", i), 0))
			}
			for i := 1; i < 600; i += 7 {
				ok(t, f.Unlink(dir, fmt.Sprintf("f%03d", i)))
			}
			ok(t, f.Sync())
			// Transaction 3: small.
			okIno(t)(f.Symlink(RootIno, "link", "d/f002", 0, 0))
			ok(t, f.Sync())
			if jsb.start == 0 {
				t.Fatal("the log was checkpointed: nothing left to replay")
			}
			end := f.jnl.seq
			raw := append([]byte(nil), d.b...)

			ld := readLogdump(t, raw)
			if len(ld.seqs) != int(end-first) || len(ld.seqs) < 3 || ld.seqs[0] != first {
				t.Fatalf("logdump found transactions %v, Shortbread committed %d..%d:\n%s", ld.seqs, first, end-1, ld.out)
			}
			many := 0
			for _, s := range ld.seqs {
				if ld.descs[s] == 0 || ld.tagsOf[s] == 0 {
					t.Errorf("logdump: transaction %d with %d descriptors, %d tags", s, ld.descs[s], ld.tagsOf[s])
				}
				many = max(many, ld.descs[s])
			}
			perDesc := (int(f.blockSize) - jbdHeaderSize - jbdTailSize - 16) / jsb.tagSize()
			if f.blockSize == 1024 && many < 2 {
				t.Errorf("no transaction needed two descriptor blocks (%d tags each)", perDesc)
			}

			ref := e2fsckRecover(t, raw)
			fsckStrict(t, ref)
			mine := &memDev{b: append([]byte(nil), raw...)}
			g, err := Mount(mine, Options{ReadOnly: true})
			ok(t, err)
			sbBlock := uint64(superOffset / g.blockSize)
			for home := range ld.homes {
				if home == sbBlock {
					continue // e2fsck -fy rewrites the free counts
				}
				off := int64(home) * int64(g.blockSize)
				if !bytes.Equal(mine.b[off:off+int64(g.blockSize)], ref.b[off:off+int64(g.blockSize)]) {
					t.Errorf("block %d differs between e2fsck's replay and Shortbread's", home)
				}
			}
			fsckStrict(t, mine)
			if out := debugfs(t, ref, "cat /d/f598"); !strings.Contains(out, "file 598\n") {
				t.Errorf("after e2fsck's replay /d/f598 holds %q", out)
			}
			if out := debugfs(t, ref, "ls /"); !strings.Contains(out, "r007") || !strings.Contains(out, "link") {
				t.Errorf("after e2fsck's replay the root lists:\n%s", out)
			}
		})
	}
}

// descriptorWrite returns the index of the first recorded write at or
// after from that starts with a descriptor block.
func descriptorWrite(d *recDev, from int) int {
	for i := from; i < len(d.writes); i++ {
		w := d.writes[i].data
		if len(w) >= 12 && be.Uint32(w) == jbdMagic && be.Uint32(w[4:]) == jbdDescriptor {
			return i
		}
	}
	return -1
}

// TestTornDescriptor cuts power while a commit's log is written, with its
// descriptor block torn: the sector with its header landed, the rest (and
// with it the checksum's tail) did not, or the reverse. The transaction
// did not commit: the mount must replay the ones before it and go on
// read-write, as jbd2 does (a descriptor failing its checksum without a
// valid commit block after it is the end of the log, not corruption), and
// e2fsck's recovery must agree.
func TestTornDescriptor(t *testing.T) {
	for _, v := range tornVariants {
		t.Run(v.name, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", v.opts...))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			if !f.jnl.r.jsb.csumV23() {
				t.Fatal("journal without checksums")
			}
			okIno(t)(f.Mkdir(RootIno, "kept", 0o755, 0, 0))
			ok(t, f.Sync())
			from := len(d.writes)
			ino := okIno(t)(f.Create(RootIno, "torn", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, ino, bytes.Repeat([]byte("x"), 5000), 0)
			ok(t, f.Sync())
			i := descriptorWrite(d, from)
			if i < 0 {
				t.Fatal("no descriptor block written")
			}
			w := d.writes[i]
			for _, part := range []struct {
				name   string
				lo, hi int
			}{{"header-only", 0, 512}, {"all-but-header", 512, int(f.blockSize)}} {
				t.Run(part.name, func(t *testing.T) {
					// Everything before the descriptor's write (the
					// log of the first transaction flushed, the
					// file's data), and part of the descriptor.
					c := &memDev{b: append([]byte(nil), d.base...)}
					for _, x := range d.writes[:i] {
						copy(c.b[x.off:], x.data)
					}
					copy(c.b[w.off+int64(part.lo):], w.data[part.lo:part.hi])
					raw := append([]byte(nil), c.b...)
					g, err := mountDev(t, c, Options{})
					if err != nil {
						t.Fatalf("mount: %v", err)
					}
					if ro, why := g.ReadOnly(); ro {
						t.Fatalf("mounted read-only: %s", why)
					}
					if _, err := g.Lookup(RootIno, "kept"); err != nil {
						t.Errorf("the transaction before: %v", err)
					}
					if _, err := g.Lookup(RootIno, "torn"); err == nil {
						t.Error("the torn transaction was replayed")
					}
					fsck(t, c)
					ref := e2fsckRecover(t, raw)
					fsckStrict(t, ref)
					if out := debugfs(t, ref, "ls /"); !strings.Contains(out, "kept") || strings.Contains(out, "torn") {
						t.Errorf("after e2fsck's replay the root lists:\n%s", out)
					}
				})
			}
		})
	}
}

// TestCommittedBadChecksum damages a transaction that did commit: a
// descriptor block failing its checksum before a valid commit block
// means the log is corrupt (jbd2 fails the recovery with EFSBADCRC), and a
// logged block failing its tag's checksum is left out of the replay and
// reported. e2fsck's recovery must see the same damage, so that the
// mutation is real.
func TestCommittedBadChecksum(t *testing.T) {
	for _, what := range []string{"descriptor", "block"} {
		t.Run(what, func(t *testing.T) {
			img := loadImage(t, mkfs(t, "16M", "", "-t", "ext4", "-b", "4096"))
			d := &recDev{memDev: memDev{b: append([]byte(nil), img.b...)}, base: append([]byte(nil), img.b...)}
			f, err := Mount(d, Options{})
			ok(t, err)
			from := len(d.writes)
			okIno(t)(f.Mkdir(RootIno, "a", 0o755, 0, 0))
			ok(t, f.Sync())
			i := descriptorWrite(d, from)
			if i < 0 {
				t.Fatal("no descriptor block written")
			}
			raw := append([]byte(nil), d.b...)
			off := d.writes[i].off
			switch what {
			case "descriptor":
				raw[off+int64(f.blockSize)-100] ^= 1 // unused bytes before the tail
			case "block":
				raw[off+int64(f.blockSize)+200] ^= 1 // the first logged block
			}
			_, err = Mount(&memDev{b: append([]byte(nil), raw...)}, Options{})
			if err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Errorf("mount: %v, want a checksum error", err)
			}
			img2 := filepath.Join(t.TempDir(), "bad")
			os.WriteFile(img2, raw, 0o644)
			out, _ := exec.Command("e2fsck", "-fy", img2).CombinedOutput()
			if !strings.Contains(strings.ToLower(string(out)), "checksum") {
				t.Errorf("e2fsck -fy found no checksum error:\n%s", out)
			}
		})
	}
}
