package vfs_test

import (
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func TestMetaApply(t *testing.T) {
	now := linux.Timespec{Sec: 50}
	m := vfs.Meta{Mode: linux.S_IFREG | 0o644, UID: 1, GID: 2, Atime: linux.Timespec{Sec: 1}, Mtime: linux.Timespec{Sec: 2}}
	m.Apply(&vfs.SetAttr{Mask: vfs.SetMode | vfs.SetGID | vfs.SetAtime, Mode: linux.S_IFDIR | 0o4755, GID: 9, Atime: vfs.Now}, now)
	want := vfs.Meta{Mode: linux.S_IFREG | 0o4755, UID: 1, GID: 9, Atime: now, Mtime: linux.Timespec{Sec: 2}, Ctime: now}
	if m != want {
		t.Fatalf("Apply: got %+v, want %+v (type bits kept, UTIME_NOW is now, ctime set)", m, want)
	}
}
