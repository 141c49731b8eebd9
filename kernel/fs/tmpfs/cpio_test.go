package tmpfs_test

import (
	"fmt"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/cpio"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

type member struct {
	name     string
	mode     uint32
	uid, gid uint32
	mtime    int64
	data     string
}

// newc encodes members as a newc archive (the format of cpio -H newc).
func newc(ms []member) []byte {
	var b strings.Builder
	pad := func() {
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	for i, m := range append(ms, member{name: "TRAILER!!!"}) {
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			i+1, m.mode, m.uid, m.gid, 1, m.mtime, len(m.data), 0, 0, 0, 0, len(m.name)+1, 0)
		b.WriteString(m.name)
		b.WriteByte(0)
		pad()
		b.WriteString(m.data)
		pad()
	}
	return []byte(b.String())
}

func TestFromCPIO(t *testing.T) {
	archive := newc([]member{
		{name: ".", mode: linux.S_IFDIR | 0o755, mtime: 100},
		{name: "bin", mode: linux.S_IFDIR | 0o755, mtime: 200},
		{name: "bin/busybox", mode: linux.S_IFREG | 0o755, uid: 1, gid: 2, mtime: 300, data: "\x7fELF binary"},
		{name: "bin/sh", mode: linux.S_IFLNK | 0o777, mtime: 400, data: "busybox"},
		{name: "./etc/deep/motd", mode: linux.S_IFREG | 0o644, mtime: 500, data: "hello"},
		{name: "dev/console", mode: linux.S_IFCHR | 0o600, mtime: 600},
		{name: "etc/motd2", mode: linux.S_IFREG | 0o644, data: "first"},
		{name: "etc/motd2", mode: linux.S_IFREG | 0o600, data: "second"},
		{name: "bin", mode: linux.S_IFDIR | 0o700, uid: 5, mtime: 250},
		{name: "tmp", mode: linux.S_IFDIR | 0o1777, mtime: 700},
		{name: "init", mode: linux.S_IFREG | 0o755, data: "#!/bin/sh\n"},
	})
	entries, err := cpio.Parse(archive)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tmpfs.FromCPIO(entries, tmpfs.Options{Dev: 7})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vfs.New(fs.Root(), "rootfs")
	if err != nil {
		t.Fatal(err)
	}
	c := &vfs.Ctx{}
	stat := func(p string) vfs.Attr {
		t.Helper()
		a, err := v.Stat(c, nil, p, linux.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		return a
	}
	read := func(p string) string {
		t.Helper()
		f, err := v.Open(c, nil, p, linux.O_RDONLY, 0)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		defer f.DecRef()
		buf := make([]byte, 100)
		n, _ := f.Read(buf, nil)
		return string(buf[:n])
	}
	if a := stat("/"); a.Mode != linux.S_IFDIR|0o755 || a.Mtime.Sec != 100 {
		t.Errorf("root: mode %#o mtime %d", a.Mode, a.Mtime.Sec)
	}
	if a := stat("/bin"); a.Mode != linux.S_IFDIR|0o700 || a.UID != 5 || a.Mtime.Sec != 250 {
		t.Errorf("/bin (given twice): mode %#o uid %d mtime %d", a.Mode, a.UID, a.Mtime.Sec)
	}
	if a := stat("/bin/busybox"); a.Mode != linux.S_IFREG|0o755 || a.UID != 1 || a.GID != 2 ||
		a.Mtime.Sec != 300 || a.Size != 11 || a.Dev != 7 {
		t.Errorf("/bin/busybox: %+v", a)
	}
	if got := read("/bin/busybox"); got != "\x7fELF binary" {
		t.Errorf("/bin/busybox holds %q", got)
	}
	if got, _ := v.Readlink(c, nil, "/bin/sh", 0); got != "busybox" {
		t.Errorf("/bin/sh -> %q", got)
	}
	if got := read("/bin/sh"); got != "\x7fELF binary" {
		t.Errorf("through /bin/sh: %q", got)
	}
	if a := stat("/etc/deep"); a.Mode != linux.S_IFDIR|0o755 {
		t.Errorf("implied directory mode %#o", a.Mode)
	}
	if got := read("/etc/deep/motd"); got != "hello" {
		t.Errorf("motd %q", got)
	}
	if a := stat("/dev/console"); a.Mode != linux.S_IFCHR|0o600 || a.Mtime.Sec != 600 {
		t.Errorf("console node %+v", a)
	}
	if a := stat("/etc/motd2"); a.Mode != linux.S_IFREG|0o600 || read("/etc/motd2") != "second" {
		t.Errorf("the later member did not replace the earlier: mode %#o %q", a.Mode, read("/etc/motd2"))
	}
	if a := stat("/tmp"); a.Mode != linux.S_IFDIR|0o1777 || a.Mtime.Sec != 700 {
		t.Errorf("/tmp %+v", a)
	}
	// File over a directory with contents: refused.
	bad := newc([]member{
		{name: "d", mode: linux.S_IFDIR | 0o755},
		{name: "d/f", mode: linux.S_IFREG},
		{name: "d", mode: linux.S_IFREG},
	})
	entries, _ = cpio.Parse(bad)
	if _, err := tmpfs.FromCPIO(entries, tmpfs.Options{}); err == nil {
		t.Error("a file replacing a non-empty directory was accepted")
	}
	bad = newc([]member{{name: "f", mode: linux.S_IFREG}, {name: "f/g", mode: linux.S_IFREG}})
	entries, _ = cpio.Parse(bad)
	if _, err := tmpfs.FromCPIO(entries, tmpfs.Options{}); err == nil {
		t.Error("a member under a file was accepted")
	}
}
