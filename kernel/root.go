package main

// The root file system: the initramfs unpacked into a tmpfs, or a disk
// (root= on the command line), with the kernel's own file systems
// mounted on it; and the disks left clean when the machine powers off.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/cpio"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/initramfs"
	"shortbread/kernel/machine"
	"shortbread/kernel/power"
	"shortbread/kernel/proc"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// mountFileSystems builds the file system tree: the disk root= names
// when it is given, else the initramfs. With root= the initramfs, if
// there is one, stays out of the tree, as Linux's does when it holds no
// /init (the self tests still read it).
func (k *kernel) mountFileSystems() {
	archive := k.loadInitramfs()
	var err error
	switch root := k.opts["root"]; {
	case root != "":
		err = k.mountDiskRoot(root)
	case archive != nil:
		err = k.mountRoot(archive)
	default:
		return
	}
	if err != nil {
		k.log.Errorf("root file system: %v", err)
	}
}

// loadInitramfs finds the boot module named "initramfs" and reads it; it
// returns the archive, or nil.
func (k *kernel) loadInitramfs() []byte {
	for _, m := range k.boot.Modules {
		k.log.Debugf("boot module %q at %#x-%#x", m.Cmdline, m.Start, m.End)
		if m.Cmdline != "initramfs" {
			continue
		}
		data := make([]byte, m.End-m.Start)
		if err := machine.ReadPhys(data, uint64(m.Start)); err != nil {
			k.log.Errorf("initramfs: %v", err)
			return nil
		}
		fs, err := initramfs.New(data)
		if err != nil {
			k.log.Errorf("initramfs: %v", err)
			return nil
		}
		k.initramfs = fs
		k.log.Infof("initramfs: %d entries, %d KiB, crc32 %08x", fs.Len(), len(data)>>10, checksum(data))
		return data
	}
	if k.opts["root"] == "" {
		k.log.Warnf("initramfs: no module named initramfs")
	}
	return nil
}

// mountRoot makes a tmpfs filled from the initramfs the root, with
// empty /dev, /proc, /sys and /tmp, and the kernel's file systems.
func (k *kernel) mountRoot(archive []byte) error {
	entries, err := cpio.Parse(archive)
	if err != nil {
		return err
	}
	limit, _ := tmpfsSize("") // the root's size is Linux's rootfs default, half of memory
	root, err := tmpfs.FromCPIO(entries, tmpfs.Options{Dev: linux.MakeDev(0, 1), Phys: proc.FileFrames{}, Available: proc.FileFrames{}.Available, Clock: wallclock.Now, Limit: limit})
	if err != nil {
		return err
	}
	v, err := vfs.New(root.Root(), "rootfs")
	if err != nil {
		return err
	}
	c := &vfs.Ctx{}
	for _, d := range []string{"/dev", "/tmp", "/proc", "/sys"} {
		if err := v.Mkdir(c, nil, d, 0o755); err != nil && !errors.Is(err, linux.EEXIST) {
			return fmt.Errorf("mkdir %s: %w", d, err)
		}
	}
	v.Chmod(c, nil, "/tmp", 0o1777, 0)
	return k.mountKernelFS(v, false)
}

// mountDiskRoot mounts the disk root= names as the root: read-only
// unless rw was given (Linux's default, so that init can check it
// first), as rootfstype= (ext4 by default, which reads ext2 and ext3
// too) with rootflags= as its options.
func (k *kernel) mountDiskRoot(name string) error {
	node, err := k.rootDevice(name)
	if err != nil {
		return err
	}
	fsType := k.opts["rootfstype"]
	if fsType == "" {
		fsType = "ext4"
	}
	var flags uint32
	if k.rootRO {
		flags |= linux.MS_RDONLY
	}
	src := vfs.Source{Name: "/dev/" + node.Name, Rdev: linux.MakeDev(node.Major, node.Minor)}
	fs, err := k.mountExt4(fsType, src, k.rootRO, k.opts["rootflags"])
	if err != nil {
		return fmt.Errorf("unable to mount %s as %s: %w", src.Name, fsType, err)
	}
	v, err := vfs.NewFS(fs, fsType, src.Name, src.Rdev, flags)
	if err != nil {
		if fs.Release != nil {
			fs.Release()
		}
		return err
	}
	mode := "read-write"
	if k.rootRO {
		mode = "read-only"
	}
	k.log.Infof("root: %s (%d:%d), %s, mounted %s", src.Name, node.Major, node.Minor, fsType, mode)
	return k.mountKernelFS(v, true)
}

// rootDevice finds the block device root= names: /dev/NAME or
// MAJOR:MINOR. One not found is an error that lists the devices there
// are, as Linux's does.
func (k *kernel) rootDevice(name string) (blk.Node, error) {
	nodes := k.blocks.Nodes()
	if dev, ok := strings.CutPrefix(name, "/dev/"); ok {
		for _, n := range nodes {
			if n.Name == dev {
				return n, nil
			}
		}
	} else if maj, min, ok := strings.Cut(name, ":"); ok {
		major, err1 := strconv.ParseUint(maj, 10, 32)
		minor, err2 := strconv.ParseUint(min, 10, 32)
		if err1 == nil && err2 == nil {
			if n, ok := k.blocks.Find(uint32(major), uint32(minor)); ok {
				return n, nil
			}
		}
	}
	var have []string
	for _, n := range nodes {
		have = append(have, fmt.Sprintf("%s (%d:%d)", n.Name, n.Major, n.Minor))
	}
	if len(have) == 0 {
		have = append(have, "none")
	}
	return blk.Node{}, fmt.Errorf("no block device %q (root= takes /dev/NAME or MAJOR:MINOR); block devices: %s", name, strings.Join(have, ", "))
}

// mountKernelFS mounts the kernel's file systems on the root v and makes
// v the tree processes see: devtmpfs on /dev (its console is the
// console terminal) with devpts on /dev/pts and a tmpfs on /dev/shm for
// POSIX shared memory and named semaphores, proc on /proc and sysfs on
// /sys, where Linux systems' init mounts them. On a disk (onDisk) a
// missing mount point is skipped with a warning rather than made: the
// kernel writes nothing to the disk on its own.
func (k *kernel) mountKernelFS(v *vfs.VFS, onDisk bool) error {
	c := &vfs.Ctx{}
	k.newTerminals()
	dev := k.newDevfs(linux.MakeDev(0, 5))
	mount := func(path string, do func() error) error {
		err := do()
		if err != nil && onDisk && errors.Is(err, linux.ENOENT) {
			k.log.Warnf("root: no %s to mount on; not mounted", path)
			return nil
		}
		if err != nil {
			return fmt.Errorf("mount %s: %w", path, err)
		}
		return nil
	}
	devMounted := false
	if err := mount("/dev", func() error {
		err := v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
		devMounted = err == nil
		return err
	}); err != nil {
		return err
	}
	if devMounted {
		if err := mount("/dev/pts", func() error { return k.mountPts(v, c) }); err != nil {
			return err
		}
	}
	// Device nodes anywhere (a disk's own /dev) open the kernel's devices.
	dev.Register(v)
	if err := mount("/proc", func() error { return v.Mount(c, nil, "/proc", k.newProc(v).Root(), "proc", 0) }); err != nil {
		return err
	}
	if err := mount("/sys", func() error { return v.Mount(c, nil, "/sys", k.newSys().Root(), "sysfs", 0) }); err != nil {
		return err
	}
	k.registerFSTypes(v)
	if devMounted {
		if err := v.MountFS(c, nil, "tmpfs", "/dev/shm", "tmpfs", linux.MS_NOSUID|linux.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err) // shm_open and sem_open need it
		}
	}
	k.vfs = v
	proc.SetVFS(v)
	return nil
}

// leaveDisksClean makes every mount read-only and writes back what the
// block device files hold, so that the disks are left as a clean
// unmount leaves them (nothing for a journal to replay): what the kernel
// does before it powers off or resets, whether init or reboot(2) asked.
func (k *kernel) leaveDisksClean() {
	if k.vfs == nil {
		return
	}
	if err := k.vfs.RemountReadOnly(); err != nil {
		k.log.Warnf("power-off: a file system failed its last write-back: %v", err)
	}
	devfs.WritebackBlocks()
}

// powerOff leaves the disks clean and powers off with status.
func (k *kernel) powerOff(status uint8) {
	k.leaveDisksClean()
	power.Off(k.tables, status)
}
