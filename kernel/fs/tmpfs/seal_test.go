package tmpfs

import (
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Seals: a file made in a directory takes none; an unlinked sealable
// file takes them, and each forbids what it names and nothing more.
func TestSeals(t *testing.T) {
	fs := New(Options{})
	named := mustCreate(t, fs.Root().(vfs.Dir), "f", linux.S_IFREG|0o644).(*file)
	if got := named.Seals(); got != linux.F_SEAL_SEAL {
		t.Errorf("a created file's seals: %#x, want F_SEAL_SEAL", got)
	}
	if err := named.AddSeals(linux.F_SEAL_WRITE); !errors.Is(err, linux.EPERM) {
		t.Errorf("sealing a created file: %v, want EPERM", err)
	}

	f := fs.NewUnlinked(0o777, vfs.Owner{}, true).(*file)
	f.Opened()
	defer f.Closed()
	if a := f.Attr(); a.Nlink != 0 || a.Mode != linux.S_IFREG|0o777 {
		t.Errorf("unlinked file: nlink %d mode %#o", a.Nlink, a.Mode)
	}
	if err := f.AddSeals(0x20); !errors.Is(err, linux.EINVAL) {
		t.Errorf("unknown seal: %v, want EINVAL", err)
	}
	if _, err := f.WriteAt(make([]byte, 3*pageSize), 0); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	perm := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, linux.EPERM) {
			t.Errorf("%s: %v, want EPERM", what, err)
		}
	}
	must(f.AddSeals(linux.F_SEAL_SHRINK))
	perm("shrink under F_SEAL_SHRINK", f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: pageSize}))
	must(f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: 4 * pageSize}))
	must(f.AddSeals(linux.F_SEAL_GROW))
	perm("grow under F_SEAL_GROW", f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: 5 * pageSize}))
	if n, err := f.WriteAt([]byte("xy"), 4*pageSize-1); n != 1 || err != nil {
		t.Errorf("write across the end under F_SEAL_GROW: %d, %v; want the byte before the end", n, err)
	}
	_, err := f.WriteAt([]byte("xy"), 4*pageSize-10+pageSize)
	perm("write in the last page past the end under F_SEAL_GROW", err)
	perm("fallocate past the end under F_SEAL_GROW", f.Allocate(linux.FALLOC_FL_KEEP_SIZE, 4*pageSize, 1))
	if n, err := f.WriteAt([]byte("in"), 10); n != 2 || err != nil {
		t.Errorf("write inside under F_SEAL_GROW: %d, %v", n, err)
	}
	must(f.AddSeals(linux.F_SEAL_WRITE))
	_, err = f.WriteAt([]byte("x"), 0)
	perm("write under F_SEAL_WRITE", err)
	_, _, err = f.Append([]byte("x"))
	perm("append under F_SEAL_WRITE", err)
	perm("punch under F_SEAL_WRITE", f.Allocate(linux.FALLOC_FL_PUNCH_HOLE|linux.FALLOC_FL_KEEP_SIZE, 0, 1))
	buf := make([]byte, 2)
	if n, _ := f.ReadAt(buf, 10); n != 2 || string(buf) != "in" {
		t.Errorf("read under seals: %q", buf[:n])
	}
	must(f.AddSeals(linux.F_SEAL_SEAL))
	perm("a seal after F_SEAL_SEAL", f.AddSeals(linux.F_SEAL_SHRINK))
	want := uint32(linux.F_SEAL_SEAL | linux.F_SEAL_SHRINK | linux.F_SEAL_GROW | linux.F_SEAL_WRITE)
	if got := f.Seals(); got != want {
		t.Errorf("seals %#x, want %#x", got, want)
	}

	plain := fs.NewUnlinked(0o777, vfs.Owner{}, false).(*file)
	if err := plain.AddSeals(linux.F_SEAL_WRITE); !errors.Is(err, linux.EPERM) {
		t.Errorf("sealing a file made without sealing: %v, want EPERM", err)
	}
}
