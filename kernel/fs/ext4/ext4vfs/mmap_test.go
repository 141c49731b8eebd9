package ext4vfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/ext4"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/vfs"
)

type pagerFile interface{ Pager() (mm.Pager, bool) }

// TestPager: a regular file on a mount with a page cache offers its
// pages to mappings: the frame holds the file's bytes, a page past the
// end is ErrBus, a store through a writable hold reaches the disk by
// Sync, and the mapping keeps an unlinked file until Done. Without a
// page cache there is no pager (the caller copies).
func TestPager(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "hello"), []byte("hello from mke2fs\n"), 0o644)
	img := filepath.Join(t.TempDir(), "img")
	tool(t, "mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "32M")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := &memDev{b: b}
	fr := &mm.HeapPhys{}
	cache := pagecache.New(fr, 1<<20)
	disk, err := ext4.Mount(dev, ext4.Options{Pages: cache})
	if err != nil {
		t.Fatal(err)
	}
	fs := New(disk, Options{Dev: linux.MakeDev(254, 0)})
	root, _ := fs.Root()
	in, err := root.(vfs.Dir).Lookup("hello")
	if err != nil {
		t.Fatal(err)
	}
	pf, ok := in.(pagerFile)
	if !ok {
		t.Fatal("a regular file has no Pager")
	}
	p, ok := pf.Pager()
	if !ok {
		t.Fatal("no pager with a page cache")
	}
	pa, err := p.HoldPage(0, false)
	if err != nil || !strings.HasPrefix(string(fr.Page(pa)[:]), "hello from mke2fs\n") {
		t.Fatalf("page 0: %v", err)
	}
	if _, err := p.HoldPage(1, false); !errors.Is(err, mm.ErrBus) {
		t.Fatalf("past the end: %v", err)
	}
	pw, err := p.HoldPage(0, true)
	if err != nil || pw != pa {
		t.Fatalf("writable hold: %#x, %v", pw, err)
	}
	copy(fr.Page(pa)[:], "HELLO")
	if err := p.Sync(); err != nil {
		t.Fatal(err)
	}
	out := tool(t, "debugfs", "-R", "cat /hello", replayed(t, dev))
	if !strings.Contains(out, "\nHELLO from mke2fs\n") {
		t.Fatalf("on the disk after Sync: %q", out)
	}
	if err := root.(vfs.Dir).Unlink("hello"); err != nil {
		t.Fatal(err)
	}
	p.ReleasePage(0, pa, false)
	p.ReleasePage(0, pw, true)
	got := make([]byte, 5)
	if n, err := disk.ReadAt(uint32(in.Attr().Ino), got, 0); n != 5 || string(got) != "HELLO" {
		t.Fatalf("unlinked file while a mapping keeps it: %q, %v", got[:n], err)
	}
	p.Done()
	if err := fs.Sync(); err != nil {
		t.Fatal(err)
	}
	live := fr.Live()
	if live != 0 {
		t.Fatalf("%d frames left after the last mapping of a deleted file", live)
	}
	fsck(t, dev)

	_, _, _, plain := setup(t)
	root, _ = plain.Root()
	in, _ = root.(vfs.Dir).Lookup("hello")
	if _, ok := in.(pagerFile).Pager(); ok {
		t.Fatal("a pager without a page cache")
	}
}
