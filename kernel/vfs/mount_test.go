package vfs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// mounted returns a kernelSys whose root holds /mnt with a second tmpfs
// mounted on it.
func mounted(t *testing.T, flags uint32) (*kernelSys, *tmpfs.FS) {
	k := newKernelSys(t)
	must(t, "mkdir /mnt", k.mkdir("mnt", 0o755))
	create(t, k, "mnt/hidden", "under the mount")
	fs2 := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 43), Clock: testClock(), Mode: 0o755})
	must(t, "mount", k.v.Mount(&k.ctx, nil, "/mnt", fs2.Root(), "tmpfs", flags))
	return k, fs2
}

func TestMountCrossing(t *testing.T) {
	k, _ := mounted(t, 0)
	_, err := k.stat("/mnt/hidden")
	wantErr(t, "the covered directory's files are hidden", err, linux.ENOENT)
	root, _ := k.stat("/")
	mnt, _ := k.stat("/mnt")
	if mnt.Dev != linux.MakeDev(0, 43) || mnt.Mode != linux.S_IFDIR|0o755 {
		t.Errorf("mount point shows dev %#x mode %#o", mnt.Dev, mnt.Mode)
	}
	create(t, k, "/mnt/inside", "data")
	in, _ := k.stat("/mnt/inside")
	if in.Dev != linux.MakeDev(0, 43) {
		t.Errorf("file in the mount has dev %#x", in.Dev)
	}
	up, err := k.stat("/mnt/..")
	if err != nil || up.Ino != root.Ino || up.Dev != root.Dev {
		t.Errorf("/mnt/.. is %+v, want the root", up)
	}
	must(t, "mkdir", k.mkdir("/mnt/sub", 0o755))
	must(t, "chdir", k.chdir("/mnt/sub"))
	cwd, _ := k.getcwd()
	if cwd != "/mnt/sub" {
		t.Errorf("getcwd inside the mount %q", cwd)
	}
	must(t, "chdir ../..", k.chdir("../.."))
	cwd, _ = k.getcwd()
	if cwd != "/" {
		t.Errorf("getcwd after leaving the mount %q", cwd)
	}
	k.symlink("/mnt/inside", "abs")
	if got := readAll(k, "abs"); got != "data" {
		t.Errorf("absolute symlink into the mount reads %q", got)
	}

	// ".." in the mount root's listing is the mount root itself, as on Linux.
	fd, _ := k.open("/mnt", linux.O_RDONLY, 0)
	names := map[string]uint64{}
	buf := make([]byte, 4096)
	n, _ := k.getdents(fd, buf)
	for off := 0; off < n; {
		d, l := linux.DecodeDirent64(buf[off:n])
		names[d.Name] = d.Ino
		off += l
	}
	k.close(fd)
	if names["."] != mnt.Ino || names[".."] != mnt.Ino {
		t.Errorf("mount root lists . %d and .. %d, want %d", names["."], names[".."], mnt.Ino)
	}

	wantErr(t, "rename across mounts", k.rename("/mnt/inside", "/outside"), linux.EXDEV)
	wantErr(t, "link across mounts", k.link("/mnt/inside", "/outside"), linux.EXDEV)
	wantErr(t, "rmdir the mount point", k.rmdir("/mnt"), linux.EBUSY)
	wantErr(t, "rename the mount point", k.rename("/mnt", "/mnt2"), linux.EBUSY)
	k.mkdir("/empty", 0o755)
	wantErr(t, "rename over the mount point", k.rename("/empty", "/mnt"), linux.EBUSY)
	wantErr(t, "rename into the mount", k.rename("/empty", "/mnt/empty"), linux.EXDEV)
}

func TestUnmount(t *testing.T) {
	k, _ := mounted(t, 0)
	create(t, k, "/mnt/f", "in mount")
	fd, err := k.open("/mnt/f", linux.O_RDONLY, 0)
	must(t, "open", err)
	must(t, "chdir", k.chdir("/mnt"))
	wantErr(t, "unmount a non-mount", k.v.Unmount(&k.ctx, nil, "/", 0), linux.EINVAL)
	wantErr(t, "unmount with an open file", k.v.Unmount(&k.ctx, nil, "/mnt", 0), linux.EBUSY)
	must(t, "unmount", k.v.Unmount(&k.ctx, nil, "/mnt", linux.MNT_DETACH))
	if got := readAll(k, "/mnt/hidden"); got != "under the mount" {
		t.Errorf("after unmount /mnt/hidden reads %q", got)
	}
	// Lazily detached: the open file and the cwd still work.
	buf := make([]byte, 16)
	n, _ := k.read(fd, buf)
	if string(buf[:n]) != "in mount" {
		t.Errorf("open file after unmount reads %q", buf[:n])
	}
	if got := readAll(k, "f"); got != "in mount" {
		t.Errorf("cwd after unmount: %q", got)
	}
	k.close(fd)
	nonroot := k.ctx
	nonroot.Cred = vfs.Cred{UID: 1000, EUID: 1000}
	fs3 := tmpfs.New(tmpfs.Options{})
	if err := k.v.Mount(&nonroot, nil, "/mnt", fs3.Root(), "tmpfs", 0); !errors.Is(err, linux.EPERM) {
		t.Errorf("mount by a user: %v", err)
	}
	if err := k.v.Mount(&k.ctx, nil, "/mnt/hidden", fs3.Root(), "tmpfs", 0); !errors.Is(err, linux.ENOTDIR) {
		t.Errorf("mount on a file: %v", err)
	}
}

func TestStackedMounts(t *testing.T) {
	k, _ := mounted(t, 0)
	create(t, k, "/mnt/first", "")
	top := tmpfs.New(tmpfs.Options{Mode: 0o700})
	must(t, "mount on a mount point", k.v.Mount(&k.ctx, nil, "/mnt", top.Root(), "tmpfs", 0))
	a, _ := k.stat("/mnt")
	wantN(t, "top mount's mode", a.Mode, nil, linux.S_IFDIR|0o700)
	_, err := k.stat("/mnt/first")
	wantErr(t, "lower mount hidden", err, linux.ENOENT)
	must(t, "unmount top", k.v.Unmount(&k.ctx, nil, "/mnt", 0))
	_, err = k.stat("/mnt/first")
	wantErr(t, "lower mount back", err, 0)
	must(t, "unmount lower", k.v.Unmount(&k.ctx, nil, "/mnt", 0))
	_, err = k.stat("/mnt/hidden")
	wantErr(t, "covered directory back", err, 0)
}

func TestReadOnlyMount(t *testing.T) {
	k, fs2 := mounted(t, linux.MS_RDONLY)
	_ = fs2
	_, err := k.open("/mnt/new", linux.O_CREAT|linux.O_RDWR, 0o644)
	wantErr(t, "create", err, linux.EROFS)
	wantErr(t, "mkdir", k.mkdir("/mnt/d", 0o755), linux.EROFS)
	wantErr(t, "chmod", k.chmod("/mnt", 0o700), linux.EROFS)
	wantErr(t, "utimensat", k.utimensat("/mnt", nil, 0), linux.EROFS)
	wantErr(t, "access W_OK", k.access("/mnt", linux.W_OK), linux.EROFS)
	wantErr(t, "access R_OK", k.access("/mnt", linux.R_OK), 0)
	fd, err := k.open("/mnt", linux.O_RDONLY, 0)
	must(t, "open for reading", err)
	k.close(fd)
}

func TestChroot(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("jail", 0o755)
	k.mkdir("jail/etc", 0o755)
	create(t, k, "jail/etc/passwd", "inside")
	create(t, k, "secret", "outside")
	must(t, "symlink", k.symlink("/etc/passwd", "jail/abs"))
	must(t, "symlink", k.symlink("../../../secret", "jail/rel"))
	jail, err := k.v.Lookup(&k.ctx, nil, "/jail", 0)
	must(t, "lookup", err)
	k.ctx.Root, k.ctx.Cwd = jail, jail
	if got := readAll(k, "/etc/passwd"); got != "inside" {
		t.Errorf("absolute path in the jail reads %q", got)
	}
	if got := readAll(k, "/../../secret"); got != "<No such file or directory>" {
		t.Errorf("escape with .. reads %q", got)
	}
	if got := readAll(k, "abs"); got != "inside" {
		t.Errorf("absolute symlink in the jail reads %q", got)
	}
	if got := readAll(k, "rel"); got != "<No such file or directory>" {
		t.Errorf("relative symlink escaping the jail reads %q", got)
	}
	k.chdir("etc")
	cwd, _ := k.getcwd()
	if cwd != "/etc" {
		t.Errorf("getcwd in the jail %q", cwd)
	}
	// A cwd outside the root is "(unreachable)", as Linux reports it.
	k.ctx.Cwd = k.v.Root()
	cwd, _ = k.getcwd()
	if cwd != "(unreachable)/" {
		t.Errorf("getcwd outside the root %q", cwd)
	}
}

// fakeFS is a file system type for TestMountFS that counts syncs and
// releases and records remounts.
type fakeFS struct {
	syncs, releases int
	remounts        []bool
	made            []vfs.Source
	failIO          bool // its disk fails: Sync and Release say EIO
}

func (f *fakeFS) typ(device bool) vfs.FSType {
	return vfs.FSType{Device: device, Make: func(src vfs.Source, ro bool, data string) (*vfs.FileSystem, error) {
		if data == "bad" {
			return nil, linux.EINVAL
		}
		f.made = append(f.made, src)
		fs := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 50+uint32(len(f.made))), Mode: 0o755})
		opts := ""
		if device {
			opts = "discard" // a disk file system's own option
		}
		return &vfs.FileSystem{Root: fs.Root(), Options: opts,
			Sync:    func() error { f.syncs++; return f.err() },
			Remount: func(ro bool) error { f.remounts = append(f.remounts, ro); return nil },
			Release: func() error { f.releases++; return f.err() }}, nil
	}}
}

func (f *fakeFS) err() error {
	if f.failIO {
		return linux.EIO
	}
	return nil
}

// TestUnmountFailedDisk: a file system whose last write-back fails is
// unmounted all the same, and umount(2) says so (0), as on Linux: the
// mount is gone, and what the disk lost was the file system's to log.
func TestUnmountFailedDisk(t *testing.T) {
	k := newKernelSys(t)
	var disk fakeFS
	k.v.RegisterFSType("diskfs", disk.typ(true))
	must(t, "mkdir /mnt", k.mkdir("/mnt", 0o755))
	must(t, "mknod /vdb", k.mknod("/vdb", linux.S_IFBLK|0o600, linux.MakeDev(254, 16)))
	c := &k.ctx
	must(t, "mount", k.v.MountFS(c, nil, "/vdb", "/mnt", "diskfs", 0, ""))
	disk.failIO = true
	wantErr(t, "syncfs of the failing disk", k.v.SyncAll(), linux.EIO)
	must(t, "unmount of the failing disk", k.v.Unmount(c, nil, "/mnt", 0))
	if disk.releases != 1 {
		t.Errorf("%d releases, want 1", disk.releases)
	}
	if got := string(k.v.Mounts()); strings.Contains(got, "/mnt") {
		t.Errorf("still mounted:\n%s", got)
	}
	must(t, "mount again", k.v.MountFS(c, nil, "/vdb", "/mnt", "diskfs", 0, ""))
}

func TestMountFS(t *testing.T) {
	k := newKernelSys(t)
	var mem, disk, disk2 fakeFS
	k.v.RegisterFSType("memfs", mem.typ(false))
	k.v.RegisterFSType("diskfs", disk.typ(true))
	k.v.RegisterFSType("diskfs2", disk2.typ(true))
	must(t, "mkdir /mnt", k.mkdir("/mnt", 0o755))
	must(t, "mkdir /m2", k.mkdir("/m2", 0o755))
	must(t, "mknod /vdb", k.mknod("/vdb", linux.S_IFBLK|0o600, linux.MakeDev(254, 16)))
	must(t, "mknod /tty", k.mknod("/tty", linux.S_IFCHR|0o600, linux.MakeDev(5, 0)))
	c := &k.ctx

	wantErr(t, "unknown type", k.v.MountFS(c, nil, "none", "/mnt", "nosuchfs", 0, ""), linux.ENODEV)
	wantErr(t, "no target", k.v.MountFS(c, nil, "none", "/nope", "memfs", 0, ""), linux.ENOENT)
	wantErr(t, "file source", k.v.MountFS(c, nil, "/tty", "/mnt", "diskfs", 0, ""), linux.ENOTBLK)
	wantErr(t, "missing source", k.v.MountFS(c, nil, "/nodev", "/mnt", "diskfs", 0, ""), linux.ENOENT)
	wantErr(t, "bind", k.v.MountFS(c, nil, "/m2", "/mnt", "", linux.MS_BIND, ""), linux.EINVAL)
	wantErr(t, "options refused", k.v.MountFS(c, nil, "none", "/mnt", "memfs", 0, "bad"), linux.EINVAL)
	user := *c
	user.Cred = vfs.Cred{UID: 1000, EUID: 1000}
	wantErr(t, "mount by a user", k.v.MountFS(&user, nil, "none", "/mnt", "memfs", 0, ""), linux.EPERM)

	must(t, "mount memfs", k.v.MountFS(c, nil, "none", "/mnt", "memfs", 0, ""))
	must(t, "mount diskfs", k.v.MountFS(c, nil, "/vdb", "/m2", "diskfs", linux.MS_RDONLY, ""))
	if len(disk.made) != 1 || disk.made[0].Rdev != linux.MakeDev(254, 16) {
		t.Errorf("diskfs made from %+v", disk.made)
	}
	wantErr(t, "device mounted again read-write over read-only", k.v.MountFS(c, nil, "/vdb", "/mnt", "diskfs", 0, ""), linux.EBUSY)
	wantErr(t, "device mounted again as another type", k.v.MountFS(c, nil, "/vdb", "/mnt", "diskfs2", linux.MS_RDONLY, ""), linux.EBUSY)
	want := "tmpfs / tmpfs rw,relatime 0 0\nnone /mnt memfs rw,relatime 0 0\n/vdb /m2 diskfs ro,relatime,discard 0 0\n"
	if got := string(k.v.Mounts()); got != want {
		t.Errorf("mounts:\n%s\nwant:\n%s", got, want)
	}
	// mountinfo: the mount's options, then after the type and source the
	// super block's, with the file system's own.
	if got := string(k.v.MountInfo()); !strings.Contains(got, " /m2 ro,relatime - diskfs /vdb ro,discard\n") ||
		!strings.Contains(got, " /mnt rw,relatime - memfs none rw\n") {
		t.Errorf("mountinfo:\n%s", got)
	}
	wantErr(t, "write to a read-only mount", k.mkdir("/m2/d", 0o755), linux.EROFS)

	fd, err := k.open("/mnt/f", linux.O_CREAT|linux.O_RDWR, 0o644)
	must(t, "create", err)
	wantErr(t, "busy", k.v.Unmount(c, nil, "/mnt", 0), linux.EBUSY)
	wantErr(t, "not a mount point", k.v.Unmount(c, nil, "/m2/..", 0), linux.EINVAL)
	wantErr(t, "bad flags", k.v.Unmount(c, nil, "/mnt", 0x100), linux.EINVAL)
	must(t, "lazy unmount", k.v.Unmount(c, nil, "/mnt", linux.MNT_DETACH))
	if mem.releases != 0 || mem.syncs != 1 {
		t.Errorf("busy lazy unmount: %d syncs, %d releases; want 1, 0", mem.syncs, mem.releases)
	}
	k.close(fd)
	if mem.releases != 1 {
		t.Errorf("last close after a lazy unmount: %d releases, want 1", mem.releases)
	}
	must(t, "unmount diskfs", k.v.Unmount(c, nil, "/m2", 0))
	if disk.releases != 1 || disk.syncs != 1 {
		t.Errorf("unmount: %d syncs, %d releases; want 1, 1", disk.syncs, disk.releases)
	}
	if got := string(k.v.Mounts()); got != "tmpfs / tmpfs rw,relatime 0 0\n" {
		t.Errorf("mounts after unmounting: %q", got)
	}
	must(t, "mount the device again", k.v.MountFS(c, nil, "/vdb", "/m2", "diskfs", 0, ""))
	must(t, "sync", k.v.SyncAll())
	if disk.syncs != 2 {
		t.Errorf("sync: %d syncs, want 2", disk.syncs)
	}
	// Remounts of its only mount reach the file system (a disk file
	// system leaves its disk clean while read-only), after a sync.
	must(t, "remount ro", k.v.MountFS(c, nil, "none", "/m2", "", linux.MS_REMOUNT|linux.MS_RDONLY, ""))
	must(t, "remount ro again", k.v.MountFS(c, nil, "none", "/m2", "", linux.MS_REMOUNT|linux.MS_RDONLY, ""))
	must(t, "remount rw", k.v.MountFS(c, nil, "none", "/m2", "", linux.MS_REMOUNT, ""))
	if fmt.Sprint(disk.remounts) != "[true false]" || disk.syncs != 4 {
		t.Errorf("remounts told %v with %d syncs; want [true false], 4", disk.remounts, disk.syncs)
	}

	// The device mounted a second time shares the instance, as Linux
	// shares the superblock: a change through one mount shows through
	// the other, cached names included.
	must(t, "mount the device a second time", k.v.MountFS(c, nil, "/vdb", "/mnt", "diskfs", 0, ""))
	if len(disk.made) != 2 {
		t.Errorf("a second mount made a new instance: %d made", len(disk.made))
	}
	fd, err = k.open("/mnt/x", linux.O_CREAT|linux.O_RDWR, 0o644)
	must(t, "create through the second", err)
	k.close(fd)
	if _, err := k.stat("/m2/x"); err != nil {
		t.Errorf("created through one, seen through the other: %v", err)
	}
	must(t, "unlink through the first", k.unlink("/m2/x"))
	if _, err := k.stat("/mnt/x"); !errors.Is(err, linux.ENOENT) {
		t.Errorf("removed through one, stat through the other: %v, want ENOENT", err)
	}
	must(t, "mkdir through the first", k.mkdir("/m2/d", 0o755))
	must(t, "rmdir through the second", k.rmdir("/mnt/d"))
	wantErr(t, "mkdir in it through the first", k.mkdir("/m2/d/e", 0o755), linux.ENOENT)
	// Shared, the instance stays writable for the other mount.
	must(t, "remount one of two ro", k.v.MountFS(c, nil, "none", "/mnt", "", linux.MS_REMOUNT|linux.MS_RDONLY, ""))
	if len(disk.remounts) != 2 {
		t.Errorf("remount of one of two mounts told the file system: %v", disk.remounts)
	}
	must(t, "unmount the second", k.v.Unmount(c, nil, "/mnt", 0))
	if disk.releases != 1 {
		t.Errorf("unmounting one of two mounts: %d releases, want 1 (the earlier one)", disk.releases)
	}
	must(t, "the first still works", k.mkdir("/m2/d", 0o755))
	must(t, "unmount the first", k.v.Unmount(c, nil, "/m2", 0))
	if disk.releases != 2 {
		t.Errorf("unmounting the last mount: %d releases, want 2", disk.releases)
	}

	// A file system with nothing to write back (tmpfs) unmounted lazily
	// while in use.
	k.v.RegisterFSType("plain", vfs.FSType{Make: func(vfs.Source, bool, string) (*vfs.FileSystem, error) {
		return &vfs.FileSystem{Root: tmpfs.New(tmpfs.Options{}).Root()}, nil
	}})
	must(t, "mount plain", k.v.MountFS(c, nil, "none", "/mnt", "plain", 0, ""))
	fd, err = k.open("/mnt/f", linux.O_CREAT|linux.O_RDWR, 0o644)
	must(t, "create", err)
	must(t, "lazy unmount of plain", k.v.Unmount(c, nil, "/mnt", linux.MNT_DETACH))
	k.close(fd)
}

// TestDiskRoot: a root made by a file system type (root= on the kernel
// command line) is shown as mount(2) would show it, is remounted
// read-write and back like any mount, cannot be unmounted, and
// RemountReadOnly (power-off) makes it and the mounts on it read-only,
// each file system told once, the last mounted first.
func TestDiskRoot(t *testing.T) {
	var disk, disk2 fakeFS
	fs, err := disk.typ(true).Make(vfs.Source{Name: "/dev/vda1", Rdev: linux.MakeDev(254, 1)}, true, "")
	must(t, "make", err)
	v, err := vfs.NewFS(fs, "ext4", "/dev/vda1", linux.MakeDev(254, 1), linux.MS_RDONLY|linux.MS_NOSUID)
	must(t, "NewFS", err)
	k := &kernelSys{t: t, v: v, fdt: vfs.NewFDTable(vfs.DefaultNOFILE)}
	k.ctx = vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
	t.Cleanup(k.fdt.CloseAll)
	c := &k.ctx
	if got, want := string(v.Mounts()), "/dev/vda1 / ext4 ro,nosuid,relatime,discard 0 0\n"; got != want {
		t.Errorf("mounts %q, want %q", got, want)
	}
	wantErr(t, "write to the read-only root", k.mkdir("/mnt", 0o755), linux.EROFS)
	must(t, "remount / rw", v.MountFS(c, nil, "none", "/", "", linux.MS_REMOUNT, ""))
	must(t, "mkdir /mnt", k.mkdir("/mnt", 0o755))
	wantErr(t, "unmount the root", v.Unmount(c, nil, "/", 0), linux.EINVAL)
	v.RegisterFSType("diskfs", disk2.typ(true))
	must(t, "mknod /vdb", k.mknod("/vdb", linux.S_IFBLK|0o600, linux.MakeDev(254, 16)))
	must(t, "mount /vdb", v.MountFS(c, nil, "/vdb", "/mnt", "diskfs", 0, ""))
	fd, err := k.open("/mnt/f", linux.O_CREAT|linux.O_RDWR, 0o644)
	must(t, "create", err)

	must(t, "RemountReadOnly", v.RemountReadOnly())
	if fmt.Sprint(disk.remounts) != "[false true]" || fmt.Sprint(disk2.remounts) != "[true]" {
		t.Errorf("remounts told %v and %v; want [false true] and [true]", disk.remounts, disk2.remounts)
	}
	if disk2.syncs != 1 {
		t.Errorf("the mount on /mnt synced %d times, want 1", disk2.syncs)
	}
	wantErr(t, "create after power-off's remount", k.mkdir("/d", 0o755), linux.EROFS)
	wantErr(t, "create in /mnt after it", k.mkdir("/mnt/d", 0o755), linux.EROFS)
	if got := string(v.Mounts()); !strings.HasPrefix(got, "/dev/vda1 / ext4 ro,") || !strings.Contains(got, "/vdb /mnt diskfs ro,") {
		t.Errorf("mounts after RemountReadOnly:\n%s", got)
	}
	k.close(fd)
	must(t, "RemountReadOnly again", v.RemountReadOnly())
	if len(disk.remounts)+len(disk2.remounts) != 3 {
		t.Errorf("a second RemountReadOnly told the file systems again: %v %v", disk.remounts, disk2.remounts)
	}
}

// TestMoveMount: MS_MOVE takes a mount, with the mounts inside it, to
// another directory, and onto the top of the tree as switch_root does,
// after which a process that chroots into it sees it as /; a source that
// is no mount's root is EINVAL, a target inside the mount ELOOP.
func TestMoveMount(t *testing.T) {
	k := newKernelSys(t)
	c := &k.ctx
	for _, d := range []string{"/new", "/other", "/other/deep"} {
		must(t, "mkdir "+d, k.mkdir(d, 0o755))
	}
	disk := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 60), Clock: testClock(), Mode: 0o755})
	must(t, "mount /new", k.v.Mount(c, nil, "/new", disk.Root(), "ext4", 0))
	must(t, "mkdir /new/dev", k.mkdir("/new/dev", 0o755))
	create(t, k, "/new/file", "on the disk")
	inner := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 61), Clock: testClock(), Mode: 0o755})
	must(t, "mount /new/dev", k.v.Mount(c, nil, "/new/dev", inner.Root(), "devtmpfs", 0))

	wantErr(t, "move a directory that is no mount", k.v.MountFS(c, nil, "/other", "/new", "", 0x2000, ""), linux.EINVAL)
	wantErr(t, "move the first mount", k.v.MountFS(c, nil, "/", "/other", "", 0x2000, ""), linux.EINVAL)
	wantErr(t, "move into itself", k.v.MountFS(c, nil, "/new", "/new/dev", "", 0x2000, ""), linux.ELOOP)
	wantErr(t, "move onto a missing target", k.v.MountFS(c, nil, "/new", "/nope", "", 0x2000, ""), linux.ENOENT)

	must(t, "chdir /new", k.chdir("/new"))
	must(t, "move /new to /other/deep", k.v.MountFS(c, nil, "/new", "/other/deep", "", 0x2000, ""))
	if got := readAll(k, "/other/deep/file"); got != "on the disk" {
		t.Errorf("the moved mount's file reads %q", got)
	}
	if st, err := k.stat("/other/deep/dev"); err != nil || st.Dev != linux.MakeDev(0, 61) {
		t.Errorf("the mount inside did not move with it: %+v %v", st, err)
	}
	if _, err := k.stat("/new/file"); !errors.Is(err, linux.ENOENT) {
		t.Errorf("the old mount point still shows the mount: %v", err)
	}
	if cwd, _ := k.getcwd(); cwd != "/other/deep" {
		t.Errorf("getcwd inside the moved mount %q, want /other/deep", cwd)
	}
	if got := string(k.v.Mounts()); !strings.Contains(got, "ext4 /other/deep ext4") || !strings.Contains(got, "devtmpfs /other/deep/dev devtmpfs") {
		t.Errorf("mounts after the move:\n%s", got)
	}

	// switch_root: cd into the new root, move it onto /, chroot(".").
	must(t, "move onto /", k.v.MountFS(c, nil, ".", "/", "", 0x2000, ""))
	root, err := k.v.Chdir(c, nil, ".", 0)
	must(t, "chdir .", err)
	c.Root = root
	if got := readAll(k, "/file"); got != "on the disk" {
		t.Errorf("after the switch, /file reads %q", got)
	}
	if st, err := k.stat("/.."); err != nil || st.Dev != linux.MakeDev(0, 60) {
		t.Errorf("/.. leaves the new root: %+v %v", st, err)
	}
	if cwd, _ := k.getcwd(); cwd != "/" {
		t.Errorf("getcwd at the new root %q", cwd)
	}
	if got := string(k.v.Mounts()); !strings.Contains(got, "ext4 / ext4") || !strings.Contains(got, "devtmpfs /dev devtmpfs") {
		t.Errorf("mounts after the switch:\n%s", got)
	}
	// A process still rooted at the old root sees the old one.
	old := *c
	old.Root, old.Cwd = nil, nil
	if _, err := k.v.Stat(&old, nil, "/other", 0); err != nil {
		t.Errorf("the old root's /other: %v", err)
	}
}
