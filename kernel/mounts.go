package main

// The file system types mount(2) can make: tmpfs, proc, sysfs,
// devtmpfs, devpts, mqueue, and ext2/3/4 on a disk.

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/ext4"
	"shortbread/kernel/fs/ext4/ext4vfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/ipc/mqueue"
	"shortbread/kernel/machine"
	"shortbread/kernel/proc"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// anonMinor numbers the file systems mount(2) makes with no device
// (major 0, as Linux's anonymous devices); the kernel's own use 1 to 7.
var anonMinor atomic.Uint32

func init() { anonMinor.Store(16) }

// ext4Commit is how often a read-write ext4 mount commits its journal
// (Linux's commit=5 default).
const ext4Commit = 5 * time.Second

func (k *kernel) newDevfs(dev uint64) *devfs.FS {
	d := devfs.New(devfs.Options{Dev: dev, Console: k.console, ControllingTerminal: proc.ControllingTerminal,
		PTMX:   func(c *vfs.Ctx, _ uint32) (vfs.File, error) { return k.pts.OpenMaster(c) },
		Blocks: k.blocks, Cache: k.cache})
	if k.rtc != nil {
		d.AddRTC("rtc0", linux.MakeDev(devfs.RTCMajor, 0), k.rtc)
	}
	return d
}

func (k *kernel) registerFSTypes(v *vfs.VFS) {
	v.RegisterFSType("tmpfs", vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		opts, err := mountOptions(data, "size", "nr_inodes", "nr_blocks", "mode", "uid", "gid")
		if err != nil {
			return nil, err
		}
		limit, err := tmpfsSize(opts["size"])
		if err != nil {
			return nil, err
		}
		o := tmpfs.Options{Dev: linux.MakeDev(0, anonMinor.Add(1)), Phys: proc.FileFrames{},
			Available: proc.FileFrames{}.Available, Clock: wallclock.Now, Limit: limit}
		// nr_inodes= is accepted and not enforced: inodes cost Go
		// memory, bounded with the kernel's heap.
		for key, field := range map[string]*uint32{"mode": &o.Mode, "uid": &o.UID, "gid": &o.GID} {
			if s, ok := opts[key]; ok {
				base := 10
				if key == "mode" {
					base = 8
				}
				n, err := strconv.ParseUint(s, base, 32)
				if err != nil {
					return nil, linux.EINVAL
				}
				*field = uint32(n)
			}
		}
		return &vfs.FileSystem{Root: tmpfs.New(o).Root()}, nil
	}})
	v.RegisterFSType("proc", vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		if _, err := mountOptions(data, "hidepid", "gid", "subset"); err != nil {
			return nil, err
		}
		return &vfs.FileSystem{Root: k.newProc(v).Root()}, nil
	}})
	v.RegisterFSType("sysfs", vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		if _, err := mountOptions(data); err != nil {
			return nil, err
		}
		return &vfs.FileSystem{Root: k.newSys().Root()}, nil
	}})
	v.RegisterFSType("devtmpfs", vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		if _, err := mountOptions(data, "mode", "size", "nr_inodes"); err != nil {
			return nil, err
		}
		d := k.newDevfs(linux.MakeDev(0, anonMinor.Add(1)))
		d.Register(v)
		return &vfs.FileSystem{Root: d.Root()}, nil
	}})
	v.RegisterFSType("devpts", k.devptsType())
	// One instance, the queues mq_open names (kernel/ipc/mqueue/fs.go).
	mqueue.SetDev(linux.MakeDev(0, anonMinor.Add(1)))
	v.RegisterFSType("mqueue", vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		if _, err := mountOptions(data); err != nil {
			return nil, err
		}
		return &vfs.FileSystem{Root: mqueue.Root()}, nil
	}})
	for _, name := range []string{"ext4", "ext3", "ext2"} {
		v.RegisterFSType(name, vfs.FSType{Device: true, Make: func(src vfs.Source, ro bool, data string) (*vfs.FileSystem, error) {
			return k.mountExt4(name, src, ro, data)
		}})
	}
}

// mountExt4 mounts the ext2/3/4 file system on the disk src names as
// fsType; a read-write one commits its journal every ext4Commit (or
// commit=N seconds) until it is unmounted.
func (k *kernel) mountExt4(fsType string, src vfs.Source, ro bool, data string) (*vfs.FileSystem, error) {
	opts, err := mountOptions(data, "commit", "data", "discard", "nodiscard", "errors")
	if err != nil {
		return nil, err
	}
	errorsOpt, errorsGiven := opts["errors"]
	switch errorsOpt {
	case "continue", "remount-ro", "panic", "":
	default:
		return nil, linux.EINVAL
	}
	if errorsGiven && errorsOpt == "" {
		return nil, linux.EINVAL
	}
	_, commitGiven := opts["commit"]
	if _, dataGiven := opts["data"]; fsType == "ext2" && (commitGiven || dataGiven) {
		return nil, linux.EINVAL // the journal's options, refused as ext2 (Linux's MOPT_NO_EXT2)
	}
	// discard or nodiscard: the last one given counts, as on Linux.
	discard := false
	for _, o := range strings.Split(data, ",") {
		if o == "discard" || o == "nodiscard" {
			discard = o == "discard"
		}
	}
	interval := ext4Commit
	if s, ok := opts["commit"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, linux.EINVAL
		}
		if n > 0 {
			interval = time.Duration(n) * time.Second
		}
	}
	data, dataGiven := opts["data"]
	if dataGiven && data != "ordered" {
		return nil, linux.EINVAL // the journal has ordered mode only
	}
	node, ok := k.blocks.Find(linux.DevMajor(src.Rdev), linux.DevMinor(src.Rdev))
	if !ok {
		return nil, linux.ENXIO
	}
	disk := node.Dev
	fs, err := ext4.Mount(blk.Bytes{D: disk}, ext4.Options{ReadOnly: ro, Clock: wallclock.Now, Discard: discard,
		As: fsType, JournalOptions: interval != ext4Commit || dataGiven, Pages: k.cache, Spin: vfs.LockSpinning})
	if err != nil {
		k.log.Warnf("ext4: mount %s: %v", disk.Name(), err)
		return nil, linux.EINVAL // what Linux says of a disk it cannot mount
	}
	name := disk.Name()
	x := ext4vfs.New(fs, ext4vfs.Options{Dev: src.Rdev, Logf: func(format string, args ...any) {
		k.log.Warnf("ext4 "+name+": "+format, args...)
	}, Errors: errorsOpt, Panic: func(what string) {
		// errors=panic (the option, or the superblock's s_errors), as
		// Linux's "panic forced after error": the crash report follows.
		panic("ext4 " + name + ": panic forced after error: " + what)
	}})
	root, err := x.Root()
	if err != nil {
		return nil, err
	}
	// The options in force as Linux shows them (in its order): discard
	// only where the disk takes discards (Linux drops it with a warning
	// elsewhere), errors= other than the superblock's, a commit interval
	// other than the default, and data= when it was given.
	var shown []string
	if discard && x.CanDiscard() {
		shown = append(shown, "discard")
	}
	if e := x.Errors(); e != fs.ErrorsBehavior() {
		shown = append(shown, "errors="+e) // shown when not the superblock's, as Linux does
	}
	if interval != ext4Commit {
		shown = append(shown, "commit="+strconv.Itoa(int(interval/time.Second)))
	}
	if dataGiven {
		shown = append(shown, "data="+data)
	}
	stop := make(chan struct{})
	if !ro {
		go x.Committer(stop, interval)
	}
	// A mounted partition is in use, as an open one is: BLKRRPART on
	// its disk says EBUSY until the unmount.
	part, _ := disk.(*blk.Partition)
	if part != nil {
		part.Opened()
	}
	release := func() error {
		close(stop)
		err := x.Unmount() // its files' pages leave the page cache
		if part != nil {
			part.Closed()
		}
		if err != nil {
			// umount(2) succeeds all the same (vfs.Unmount).
			k.log.Warnf("ext4 %s: unmounted, but the disk failed the last write-back: %v", name, err)
		}
		return err
	}
	return &vfs.FileSystem{Root: root, Sync: x.Sync, Checkpoint: x.Checkpoint, DropCaches: x.DropCaches, Remount: x.Remount, Trim: x.Trim, CanTrim: x.CanDiscard,
		Options: strings.Join(shown, ","), Release: release}, nil
}

// mountOptions parses mount(2)'s comma-separated option string, allowing
// only the keys given (EINVAL for others, as Linux's file systems do).
// tmpfsSize is the page limit of a tmpfs mounted with size=s: bytes,
// with a k, m or g suffix, or a percentage of memory; "" means Linux's
// default, half of memory, and 0 no limit. The limit keeps a tmpfs
// filled to the brim from taking the memory programs need: without one
// a fuzzing process filled /tmp until the page faults of every other
// process failed, and the out-of-memory killer had only programs that
// held nothing to kill.
func tmpfsSize(s string) (uint64, error) {
	total := machine.ReadMemStats().TotalFrames
	if s == "" {
		return max(total/2, 1), nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || n > 100 {
			return 0, linux.EINVAL
		}
		return max(total*n/100, 1), nil
	}
	mult := uint64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > (1<<63)/mult {
		return 0, linux.EINVAL
	}
	return (n*mult + 4095) / 4096, nil
}

func mountOptions(data string, allowed ...string) (map[string]string, error) {
	opts := map[string]string{}
	for _, o := range strings.Split(data, ",") {
		if o == "" {
			continue
		}
		key, val, _ := strings.Cut(o, "=")
		ok := false
		for _, a := range allowed {
			ok = ok || a == key
		}
		if !ok {
			return nil, linux.EINVAL
		}
		opts[key] = val
	}
	return opts, nil
}
