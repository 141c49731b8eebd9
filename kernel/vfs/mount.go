package vfs

// Mounting and unmounting: the kernel's own mounts at boot (Mount),
// mount(2) and umount2(2) (MountFS, Unmount), the file system types
// mount(2) can make, and the table /proc/mounts shows.

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// mount(2) flags beyond those in package linux that mount accepts
// (include/uapi/linux/mount.h).
const (
	msNoatime     = 0x400
	msNodiratime  = 0x800
	msMove        = 0x2000
	msRec         = 0x4000
	msSilent      = 0x8000
	msUnbindable  = 1 << 17
	msPrivate     = 1 << 18
	msSlave       = 1 << 19
	msShared      = 1 << 20
	msRelatime    = 1 << 21
	msStrictatime = 1 << 24
	msLazytime    = 1 << 25

	msPropagation = msUnbindable | msPrivate | msSlave | msShared
	// msAccepted are the flags a new mount may carry (the per-mount
	// ones are kept in Mount.mntFlags, see mntflags.go).
	msAccepted = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC |
		msNoatime | msNodiratime | msSilent | msRelatime | msStrictatime | msLazytime
)

// FileSystem is one file system instance made by an FSType.
type FileSystem struct {
	Root Inode
	// Sync makes every change so far durable (syncfs, sync, umount);
	// nil when there is nothing to write back.
	Sync func() error
	// Checkpoint, after a Sync, writes home what a journal holds in
	// memory (sync and syncfs, not fsync: Linux's sync writes the block
	// device's dirty metadata back too), so that memory comes back. Nil
	// for file systems without a journal.
	Checkpoint func() error
	// DropCaches drops the clean metadata the file system caches itself
	// (drop_caches: Linux's drops the block device's clean buffers). Nil
	// when it caches none.
	DropCaches func()
	// Release runs once the file system is unmounted and unused, after
	// a last Sync: it stops background work and leaves the disk clean.
	// Nil when there is none.
	Release func() error
	// Remount is told when its only mount becomes read-only (after a
	// Sync) or read-write again, so that a disk file system can leave
	// its disk clean meanwhile. Nil when that changes nothing.
	Remount func(ro bool) error
	// Trim discards the free blocks of the byte range [start,
	// start+length) in free runs of at least minLen bytes and returns
	// the bytes discarded (FITRIM); CanTrim says whether the device
	// takes discards. Nil for file systems without FITRIM (ENOTTY).
	Trim    func(start, length, minLen uint64) (uint64, error)
	CanTrim func() bool
	// Options are the file system's own options in force, comma-separated
	// (ext4's "discard"), shown after the mount's in /proc/mounts and as
	// the super options of mountinfo, as Linux's show_options does.
	Options string

	// mounts counts the mounts that use the instance: a block device
	// mounted again shares it, as Linux shares the superblock, and it is
	// released with the last.
	mounts atomic.Int32
	// shared is set, for good, once a second mount uses the instance.
	// Each mount keeps its own dentries, so a name one changes can be
	// stale in the other's cache: look-ups then ask the file system every
	// time, and changes to directories are serialized by mutate across
	// the mounts, as the per-dentry locks no longer can (dirLock).
	// Before that, changes take mutate for reading, so that the mount
	// that shares the instance can wait for those under way.
	shared atomic.Bool
	mutate sync.RWMutex
}

// Source is what mount(2)'s source names.
type Source struct {
	Name string // as given, for /proc/mounts
	Rdev uint64 // the block device, for a type that needs one
}

// FSType is a kind of file system mount(2) can make.
type FSType struct {
	// Device: the source is the path of a block device (ENOTBLK if not).
	Device bool
	// Make makes an instance; data is mount(2)'s option string.
	Make func(src Source, readOnly bool, data string) (*FileSystem, error)
}

// RegisterFSType makes fsType known to mount(2).
func (v *VFS) RegisterFSType(name string, t FSType) {
	v.mu.Lock()
	v.fsTypes[name] = t
	v.mu.Unlock()
}

// SetPinned gives the VFS a way to find out whether a process's working
// or root directory lies in a mount, which makes it busy for umount.
func (v *VFS) SetPinned(f func(*Mount) bool) {
	v.mu.Lock()
	v.pinned = f
	v.mu.Unlock()
}

// Contains reports whether d lies in the mount m.
func (m *Mount) Contains(d *Dentry) bool { return d != nil && d.mount == m }

// Sync makes m's file system's changes durable (fsync of a file without
// its own Sync; SyncFS adds the rest of syncfs and sync).
func (m *Mount) Sync() error {
	if m.fs == nil || m.fs.Sync == nil {
		return nil
	}
	return m.fs.Sync()
}

// Trimmer returns the mount's FITRIM and whether its device discards,
// or nil when the file system has no FITRIM.
func (m *Mount) Trimmer() (trim func(start, length, minLen uint64) (uint64, error), canDiscard bool) {
	if m.fs == nil || m.fs.Trim == nil {
		return nil, false
	}
	return m.fs.Trim, m.fs.CanTrim != nil && m.fs.CanTrim()
}

// SyncFS writes back m's file system whole (syncfs, sync): a Sync, then
// the journal's checkpoint.
func (m *Mount) SyncFS() error {
	err := m.Sync()
	if err == nil && m.fs != nil && m.fs.Checkpoint != nil {
		err = m.fs.Checkpoint()
	}
	return err
}

// DropCaches drops every mounted file system's clean metadata cache
// (drop_caches), once for a file system mounted twice.
func (v *VFS) DropCaches() {
	v.mu.RLock()
	ms := append([]*Mount(nil), v.table...)
	v.mu.RUnlock()
	done := map[*FileSystem]bool{}
	for _, m := range ms {
		if fs := m.fs; fs != nil && fs.DropCaches != nil && !done[fs] {
			done[fs] = true
			fs.DropCaches()
		}
	}
}

// SyncAll writes back every mounted file system (sync(2)).
func (v *VFS) SyncAll() error {
	v.mu.RLock()
	ms := append([]*Mount(nil), v.table...)
	v.mu.RUnlock()
	var first error
	for _, m := range ms {
		if err := m.SyncFS(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// RemountReadOnly makes every mount read-only, last mounted first, and
// leaves each disk file system as a clean unmount does (its journal with
// nothing to replay), whatever is open for writing: what the kernel does
// before it powers off, as Linux's emergency remount (SysRq u) does.
// Writes after it fail with EROFS. It returns the first error.
func (v *VFS) RemountReadOnly() error {
	v.mu.Lock()
	ms := make([]*Mount, 0, len(v.table))
	for i := len(v.table) - 1; i >= 0; i-- {
		if m := v.table[i]; !m.readOnly {
			m.readOnly = true
			ms = append(ms, m)
		}
	}
	v.mu.Unlock()
	var first error
	done := map[*FileSystem]bool{}
	for _, m := range ms {
		err := m.Sync()
		if fs := m.fs; err == nil && fs != nil && fs.Remount != nil && !done[fs] {
			done[fs] = true
			err = fs.Remount(true)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Mount mounts the file system whose root directory is root on the
// directory path names, like mount(2) with flags MS_RDONLY honoured.
// Mounting on a mount point stacks the new file system on top. It is
// how the kernel mounts /dev and /proc at boot.
func (v *VFS) Mount(c *Ctx, dir *Dentry, path string, root Inode, fsType string, flags uint32) error {
	if _, ok := root.(Dir); !ok {
		return linux.ENOTDIR
	}
	if !c.Cred.Superuser() {
		return linux.EPERM
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	w := walker{v: v, c: c}
	t, err := w.lookup(w.start(dir, path), path, true)
	if err != nil {
		return err
	}
	m := &Mount{fsType: fsType, source: fsType, readOnly: flags&linux.MS_RDONLY != 0}
	m.mntFlags.Store(mountFlags(flags, 0, false))
	return v.attach(t, m, root)
}

// attach hangs m, whose root directory is root, on t. t's dirMu keeps
// rmdir and rename from removing t meanwhile (they check busy under it).
// Preconditions: v.mu is held for writing.
func (v *VFS) attach(t *Dentry, m *Mount, root Inode) error {
	if !t.IsDir() {
		return linux.ENOTDIR
	}
	if t.parent() == nil {
		return linux.EBUSY // the top of the tree has nowhere to hang a mount
	}
	t.dirMu.Lock()
	defer t.dirMu.Unlock()
	if t.dead.Load() {
		return linux.ENOENT
	}
	v.mounts++
	m.id = v.mounts
	m.vfs = v
	m.point = t
	r := newDentry("", nil, root, m)
	r.covers.Store(t)
	m.root = r
	t.mounted.Store(r)
	v.table = append(v.table, m)
	return nil
}

// MountFS is mount(2): it makes a file system of type fsType from source
// (a block device path for a type that needs one) and mounts it on the
// directory target. Flags are mount(2)'s with MS_MGC_VAL removed; data is
// the option string. MS_REMOUNT changes MS_RDONLY and the per-mount
// flags; propagation changes are accepted on a mount point and change
// nothing (there is one mount namespace); MS_MOVE moves a mount (move);
// bind mounts are EINVAL.
func (v *VFS) MountFS(c *Ctx, dir *Dentry, source, target, fsType string, flags uint32, data string) error {
	v.mu.RLock()
	w := walker{v: v, c: c}
	t, err := w.lookup(w.start(dir, target), target, true)
	if err != nil {
		v.mu.RUnlock()
		return err
	}
	typ, known := v.fsTypes[fsType]
	var src *Dentry
	if known && typ.Device && flags&(linux.MS_REMOUNT|linux.MS_BIND|msMove|msPropagation) == 0 {
		if source == "" {
			err = linux.ENOENT
		} else {
			src, err = w.lookup(w.start(dir, source), source, true)
		}
	}
	v.mu.RUnlock()
	if !c.Cred.Superuser() {
		return linux.EPERM
	}
	switch {
	case flags&msPropagation != 0:
		if t.mount.root != t {
			return linux.EINVAL
		}
		return nil
	case flags&linux.MS_REMOUNT != 0:
		return v.remount(t, flags)
	case flags&msMove != 0:
		return v.move(c, dir, source, target)
	case flags&linux.MS_BIND != 0:
		return linux.EINVAL
	case flags&^msAccepted != 0:
		return linux.EINVAL
	case !known:
		return linux.ENODEV
	case err != nil:
		return err
	case !t.IsDir():
		return linux.ENOTDIR
	}
	s := Source{Name: source}
	if typ.Device {
		if src.Type() != linux.S_IFBLK {
			return linux.ENOTBLK
		}
		s.Rdev = src.inode.Attr().Rdev
		if done, err := v.mountAgain(c, dir, target, fsType, source, s.Rdev, flags); done {
			return err
		}
		if !v.claim(s.Rdev) {
			return linux.EBUSY
		}
		defer v.unclaim(s.Rdev)
	} else if s.Name == "" {
		s.Name = "none"
	}
	ro := flags&linux.MS_RDONLY != 0
	// Made without the namespace lock: a disk file system reads its
	// metadata (and may replay a journal), and a devtmpfs registers its
	// devices with v.
	fs, err := typ.Make(s, ro, data)
	if err != nil {
		return err
	}
	if _, ok := fs.Root.(Dir); !ok {
		release(fs)
		return linux.ENOTDIR
	}
	m := &Mount{fsType: fsType, source: s.Name, dev: s.Rdev, fs: fs, readOnly: ro}
	m.mntFlags.Store(mountFlags(flags, 0, false))
	fs.mounts.Store(1)
	v.mu.Lock()
	w = walker{v: v, c: c}
	t, err = w.lookup(w.start(dir, target), target, true)
	if err == nil {
		err = v.attach(t, m, fs.Root)
	}
	v.mu.Unlock()
	if err != nil {
		release(fs)
	}
	return err
}

// move is mount(2) with MS_MOVE: the mount whose root source names is
// taken, with every mount inside it, from where it hangs and hung on the
// directory target. The target may be the top of the tree: switch_root
// moves the real root onto the initramfs's / and then chroots into it,
// as Linux's initramfs tools do (a process whose root is the old one
// keeps seeing the old one, as on Linux). A source that is not a mount's
// root, or is the tree's first mount, is EINVAL; a target inside the
// mount moved is ELOOP.
func (v *VFS) move(c *Ctx, dir *Dentry, source, target string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := walker{v: v, c: c}
	s, err := w.lookup(w.start(dir, source), source, true)
	if err != nil {
		return err
	}
	t, err := w.lookup(w.start(dir, target), target, true)
	if err != nil {
		return err
	}
	t = followMounts(t) // onto the top of a stack, as a mount goes
	m := s.mount
	if m.root != s || m.point == nil {
		return linux.EINVAL
	}
	if !t.IsDir() {
		return linux.ENOTDIR
	}
	for in := t.mount; in != nil; in = in.point.mount {
		if in == m {
			return linux.ELOOP
		}
		if in.point == nil {
			break
		}
	}
	// As attach: t's dirMu keeps rmdir and rename from removing t.
	t.dirMu.Lock()
	defer t.dirMu.Unlock()
	if t.dead.Load() {
		return linux.ENOENT
	}
	// The moved root's name and parent change as a rename's do: path
	// walks that build names (getcwd, /proc/mounts) retry across it.
	v.seqMu.Lock()
	v.seq.Add(1)
	m.point.mounted.Store(nil)
	m.point = t
	s.covers.Store(t)
	t.mounted.Store(s)
	v.seq.Add(1)
	v.seqMu.Unlock()
	return nil
}

// mountAgain mounts the file system already mounted from block device
// rdev on target as well, when it is, sharing the instance as Linux
// shares the superblock (get_tree_bdev): the same type and the same
// read-only state, or EBUSY (Linux will not summarily change it). done
// is false when the device is not mounted.
func (v *VFS) mountAgain(c *Ctx, dir *Dentry, target, fsType, source string, rdev uint64, flags uint32) (done bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var m0 *Mount
	for _, m := range v.table {
		if m.dev == rdev && m.fs != nil {
			m0 = m
			break
		}
	}
	if m0 == nil {
		return false, nil
	}
	if m0.fsType != fsType || m0.readOnly != (flags&linux.MS_RDONLY != 0) {
		return true, linux.EBUSY
	}
	w := walker{v: v, c: c}
	t, err := w.lookup(w.start(dir, target), target, true)
	if err != nil {
		return true, err
	}
	// Changes to directories under way hold mutate for reading: once
	// they are done, every one sees shared.
	fs := m0.fs
	fs.mutate.Lock()
	fs.shared.Store(true)
	fs.mutate.Unlock()
	m := &Mount{fsType: fsType, source: source, dev: rdev, fs: fs, readOnly: m0.readOnly}
	m.mntFlags.Store(mountFlags(flags, 0, false))
	fs.mounts.Add(1)
	if err := v.attach(t, m, fs.Root); err != nil {
		fs.mounts.Add(-1)
		return true, err
	}
	return true, nil
}

// claim marks block device rdev as being mounted, false if it already
// is (one mount per device: a second is EBUSY).
func (v *VFS) claim(rdev uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, m := range v.table {
		if m.dev == rdev {
			return false
		}
	}
	if v.claiming[rdev] {
		return false
	}
	if v.claiming == nil {
		v.claiming = make(map[uint64]bool)
	}
	v.claiming[rdev] = true
	return true
}

func (v *VFS) unclaim(rdev uint64) {
	v.mu.Lock()
	delete(v.claiming, rdev)
	v.mu.Unlock()
}

// remount changes whether the mount whose root is t is read-only, and
// its per-mount flags (nosuid, nodev, noexec, the access-time mode: an
// access-time mode not named stays); going read-only writes its changes
// back first. A file open for writing in it keeps it writable (EBUSY), as
// sb_prepare_remount_readonly does.
func (v *VFS) remount(t *Dentry, flags uint32) error {
	m := t.mount
	if m.root != t {
		return linux.EINVAL
	}
	ro := flags&linux.MS_RDONLY != 0
	if ro && !m.readOnly && m.writers.Load() > 0 {
		return linux.EBUSY
	}
	if ro {
		if err := m.Sync(); err != nil {
			return err
		}
	}
	if fs := m.fs; fs != nil && fs.Remount != nil && ro != m.readOnly && fs.mounts.Load() <= 1 {
		if err := fs.Remount(ro); err != nil {
			return err
		}
	}
	v.mu.Lock()
	m.readOnly = ro
	m.mntFlags.Store(mountFlags(flags, m.mntFlags.Load(), true))
	v.mu.Unlock()
	return nil
}

// busy reports whether m cannot be unmounted: files are open in it, a
// process works in it, or another mount hangs on it.
// Preconditions: v.mu is held.
func (v *VFS) busy(m *Mount) bool {
	if m.files.Load() > 0 {
		return true
	}
	for _, o := range v.table {
		if o != m && o.point != nil && o.point.mount == m {
			return true
		}
	}
	return v.pinned != nil && v.pinned(m)
}

// Unmount is umount2(2): it detaches the file system mounted at path.
// One in use is EBUSY unless flags has MNT_DETACH, which detaches it
// lazily: files and directories in use inside it stay usable, and its
// file system is released with the last open file. Flags may also hold
// MNT_FORCE (no different here) and UMOUNT_NOFOLLOW.
func (v *VFS) Unmount(c *Ctx, dir *Dentry, path string, flags uint32) error {
	if flags&^(linux.MNT_FORCE|linux.MNT_DETACH|linux.UMOUNT_NOFOLLOW) != 0 {
		return linux.EINVAL
	}
	v.mu.Lock()
	w := walker{v: v, c: c}
	t, err := w.lookup(w.start(dir, path), path, flags&linux.UMOUNT_NOFOLLOW == 0)
	if err == nil && !c.Cred.Superuser() {
		err = linux.EPERM
	}
	if err != nil {
		v.mu.Unlock()
		return err
	}
	m := t.mount
	if m.root != t || m.point == nil {
		v.mu.Unlock()
		return linux.EINVAL
	}
	busy := v.busy(m)
	if busy && flags&linux.MNT_DETACH == 0 {
		v.mu.Unlock()
		return linux.EBUSY
	}
	m.point.mounted.Store(nil) // t is the top of any stack: walks follow mounts to it
	for i, o := range v.table {
		if o == m {
			v.table = append(v.table[:i:i], v.table[i+1:]...)
			break
		}
	}
	m.detached.Store(true)
	// Watches end with the file system, not with one of its mounts.
	last := m.fs == nil || m.fs.mounts.Load() <= 1
	v.mu.Unlock()
	if last {
		unmounted(m)
	}
	if m.fs == nil {
		return nil
	}
	// From here the mount is gone whatever the disk says, and umount(2)
	// says 0, as on Linux: a failed last write-back was logged by the
	// file system and its driver, and an error here would tell the
	// caller that the unmount it cannot undo did not happen (a failing
	// disk could then never be unmounted "successfully").
	if busy {
		// Still used: what is written so far is made durable now, the
		// rest when the last open file goes (closed).
		m.Sync()
		return nil
	}
	m.release()
	return nil
}

// closed is called when an open file in m goes away.
func (m *Mount) closed() {
	if m.files.Add(-1) == 0 && m.detached.Load() && m.fs != nil {
		m.release()
	}
}

// release syncs and releases m's file system, once, if no other mount
// uses it; else it only syncs.
func (m *Mount) release() (err error) {
	m.releaseOnce.Do(func() {
		if m.fs.mounts.Add(-1) > 0 {
			err = m.Sync()
			return
		}
		err = release(m.fs)
	})
	return err
}

func release(fs *FileSystem) error {
	var err error
	if fs.Sync != nil {
		err = fs.Sync()
	}
	if fs.Release != nil {
		if e := fs.Release(); err == nil {
			err = e
		}
	}
	return err
}

// Mounts is /proc/mounts: one line per mount, in mount order.
func (v *VFS) Mounts() []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	w := walker{v: v, c: &Ctx{}}
	var b bytes.Buffer
	for _, m := range v.table {
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", mountEscape(m.source), mountEscape(w.path(m.root)), m.fsType, withFSOptions(m.options(), m.fs))
	}
	return b.Bytes()
}

// MountInfo is /proc/<pid>/mountinfo (proc(5)): IDs, the device, the
// mount point, options, type and source.
func (v *VFS) MountInfo() []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	w := walker{v: v, c: &Ctx{}}
	var b bytes.Buffer
	for _, m := range v.table {
		parent := m.id
		if m.point != nil {
			parent = m.point.mount.id
		}
		dev := m.root.inode.Attr().Dev
		fmt.Fprintf(&b, "%d %d %d:%d / %s %s - %s %s %s\n", m.id, parent, linux.DevMajor(dev), linux.DevMinor(dev),
			mountEscape(w.path(m.root)), m.options(), m.fsType, mountEscape(m.source), withFSOptions(m.superOptions(), m.fs))
	}
	return b.Bytes()
}

// withFSOptions appends the file system's own options to a mount's.
func withFSOptions(opts string, fs *FileSystem) string {
	if fs != nil && fs.Options != "" {
		return opts + "," + fs.Options
	}
	return opts
}

// mountEscape writes space, tab, newline and backslash as octal escapes,
// as Linux does in /proc/mounts.
var mountEscaper = strings.NewReplacer(" ", `\040`, "\t", `\011`, "\n", `\012`, `\`, `\134`)

func mountEscape(s string) string { return mountEscaper.Replace(s) }
