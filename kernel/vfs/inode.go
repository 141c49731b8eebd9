package vfs

import "shortbread/kernel/abi/linux"

// Inode is a file system object: a regular file, directory, symlink or
// special file. Every inode reports and changes its attributes; what else
// it can do is shown by the interfaces below that it also implements,
// chosen by its file type: a directory is a Dir, a symlink a Symlink, a
// regular file a Regular, and a device (or any file with its own
// behaviour, like a procfs file) an Opener.
//
// Inode methods may be called concurrently; a file system locks its own
// data. Errors are linux.Errno values.
type Inode interface {
	// Attr returns the inode's attributes.
	Attr() Attr
	// SetAttr changes the attributes named by s.Mask. The file system
	// sets ctime to now for every change, applies Size to a regular file
	// (freeing or zero-filling the data) and resolves UTIME_NOW with its
	// own clock. Permission checks are the VFS's.
	SetAttr(s *SetAttr) error
}

// Attr holds an inode's attributes: the fields of stat(2).
type Attr struct {
	Dev     uint64 // device of the file system (linux.MakeDev)
	Ino     uint64
	Mode    uint32 // file type and permission bits (linux.S_IF*, 07777)
	Nlink   uint32
	UID     uint32
	GID     uint32
	Rdev    uint64 // device number of a device node
	Size    int64
	Blocks  int64 // 512-byte units allocated
	Blksize int32 // preferred I/O size
	Atime   linux.Timespec
	Mtime   linux.Timespec
	Ctime   linux.Timespec
	Btime   linux.Timespec // creation; zero when the file system does not know it
}

// Type returns the file type bits of the mode (linux.S_IFMT).
func (a *Attr) Type() uint32 { return a.Mode & linux.S_IFMT }

// Stat returns the attributes as struct stat.
func (a *Attr) Stat() linux.Stat {
	return linux.Stat{
		Dev: a.Dev, Ino: a.Ino, Nlink: uint64(a.Nlink), Mode: a.Mode, UID: a.UID, GID: a.GID,
		Rdev: a.Rdev, Size: a.Size, Blksize: int64(a.Blksize), Blocks: a.Blocks,
		Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime,
	}
}

// Statx returns the attributes as struct statx for a request mask. Like
// Linux it fills every basic field whatever the mask asks, and the birth
// time when asked for and known.
func (a *Attr) Statx(mask uint32) linux.Statx {
	result := uint32(linux.STATX_BASIC_STATS)
	x := linux.Statx{
		Blksize: uint32(a.Blksize), Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Mode: uint16(a.Mode), Ino: a.Ino, Size: uint64(a.Size), Blocks: uint64(a.Blocks),
		Atime: a.Atime, Ctime: a.Ctime, Mtime: a.Mtime,
		RdevMajor: linux.DevMajor(a.Rdev), RdevMinor: linux.DevMinor(a.Rdev),
		DevMajor: linux.DevMajor(a.Dev), DevMinor: linux.DevMinor(a.Dev),
	}
	if mask&linux.STATX_BTIME != 0 && a.Btime != (linux.Timespec{}) {
		result |= linux.STATX_BTIME
		x.Btime = a.Btime
	}
	x.Mask = result
	return x
}

// SetAttr masks: which fields of a SetAttr to apply.
const (
	SetMode  = 1 << iota // permission bits (07777); the type never changes
	SetUID               // owner
	SetGID               // group
	SetSize              // truncate or extend a regular file
	SetAtime             // access time; Nsec == linux.UTIME_NOW means now
	SetMtime             // modification time; Nsec == linux.UTIME_NOW means now
)

// SetAttr is a change of attributes, as chmod, chown, truncate and
// utimensat ask for it.
type SetAttr struct {
	Mask  uint32
	Mode  uint32
	UID   uint32
	GID   uint32
	Size  int64
	Atime linux.Timespec
	Mtime linux.Timespec
}

// Meta is the attribute state an in-memory file system keeps per inode
// (tmpfs, devfs): type and permission bits, owner and times. The inode's
// own lock guards it.
type Meta struct {
	Mode                uint32 // the type bits never change
	UID, GID            uint32
	Atime, Mtime, Ctime linux.Timespec
}

// Apply makes the changes s asks for, all but a size, and sets ctime to
// now: chmod, chown and utimensat (where UTIME_NOW stands for now).
func (m *Meta) Apply(s *SetAttr, now linux.Timespec) {
	if s.Mask&SetMode != 0 {
		m.Mode = m.Mode&linux.S_IFMT | s.Mode&0o7777
	}
	if s.Mask&SetUID != 0 {
		m.UID = s.UID
	}
	if s.Mask&SetGID != 0 {
		m.GID = s.GID
	}
	if s.Mask&SetAtime != 0 {
		m.Atime = orNow(s.Atime, now)
	}
	if s.Mask&SetMtime != 0 {
		m.Mtime = orNow(s.Mtime, now)
	}
	m.Ctime = now
}

func orNow(t, now linux.Timespec) linux.Timespec {
	if t.Nsec == linux.UTIME_NOW {
		return now
	}
	return t
}

// Now is the time value a SetAttr uses to ask for the file system's
// current time.
var Now = linux.Timespec{Nsec: linux.UTIME_NOW}

// Owner is who owns a new inode.
type Owner struct {
	UID, GID uint32
}

// NoNewNames is implemented by a directory in which no name can be made:
// Linux's /proc, whose look-up of a missing name fails with ENOENT
// instead of leaving a place to create, so that mkdir, mknod, symlink
// and link there fail with ENOENT before any later check (EXDEV, EPERM).
type NoNewNames interface{ NoNewNames() }

// Dir is a directory inode. Names are single path components: never
// empty, ".", "..", longer than NAME_MAX or holding '/'. The VFS has
// already checked permissions, that the names are free or taken as each
// call needs, and file types, and it serializes the calls that change
// one directory (Rename holds both directories); calls that change
// different directories run in parallel, and a file system still locks
// against concurrent Lookup and ReadDir.
type Dir interface {
	Inode
	// Lookup returns the inode named name, or ENOENT.
	Lookup(name string) (Inode, error)
	// Create makes a new inode of the file type in mode (S_IFREG,
	// S_IFDIR, S_IFCHR, S_IFBLK, S_IFIFO or S_IFSOCK; rdev for devices)
	// under a name that does not exist yet.
	Create(name string, mode uint32, rdev uint64, owner Owner) (Inode, error)
	// Symlink makes a symbolic link holding target under a new name.
	Symlink(name, target string, owner Owner) (Inode, error)
	// Link gives the existing non-directory target a new name here.
	// A target from another file system fails with EXDEV.
	Link(name string, target Inode) error
	// Unlink removes a name of a non-directory.
	Unlink(name string) error
	// Rmdir removes an empty directory (ENOTEMPTY otherwise).
	Rmdir(name string) error
	// Rename moves oldName to newName in newDir, a directory of the same
	// file system, replacing what newName names (ENOTEMPTY for a
	// non-empty directory); flags are renameat2's RENAME_NOREPLACE and
	// RENAME_EXCHANGE. The VFS has checked the file types agree.
	Rename(oldName string, newDir Dir, newName string, flags uint32) error
	// ReadDir calls emit for the entries other than "." and "..", in a
	// stable order, starting at position pos (0 for the first entry),
	// until emit returns false or the entries end. Each entry's Next is
	// the position that resumes after it; positions stay valid while
	// other entries come and go. Entries may share a position only as
	// DirEntry.Shared says.
	ReadDir(pos int64, emit func(DirEntry) bool) error
}

// InodeMaker is implemented by a Dir that can make a new inode before
// the VFS locks the directory, so that the directory's lock covers only
// the insertion of the name: creates in one directory from several CPUs
// then queue only for that.
type InodeMaker interface {
	// NewInode makes an inode as Create would, without a name; nothing
	// refers to it until AddInode, and one that never gets a name is
	// dropped by the garbage collector.
	NewInode(mode uint32, rdev uint64, owner Owner) (Inode, error)
	// AddInode gives ino, made by NewInode of this directory, the name
	// name, which does not exist yet: the rest of Create.
	AddInode(name string, ino Inode) error
}

// DirEntry is one name in a directory listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Type uint8 // linux.DT_*
	Next int64 // position of the entry after this one
	// Shared says the entry after this one has the same position (names
	// whose hashes collide, where positions are hashes: ext4): Next is
	// then this entry's own position. An open directory remembers the
	// names it returned at its position, so that a listing resumed
	// there skips them (Linux keeps the rest of a collision chain in
	// the open file for this).
	Shared bool
}

// Volatile is implemented by a Dir whose names change without the VFS
// being told (procfs). The VFS then asks Lookup on every walk instead of
// trusting its dentry cache.
type Volatile interface {
	Dir
	Volatile()
}

// Symlink is a symbolic link inode.
type Symlink interface {
	Inode
	Readlink() (string, error)
}

// CallerSymlink is a Symlink whose target depends on who follows or
// reads it, like /proc/self.
type CallerSymlink interface {
	Symlink
	ReadlinkFor(c *Ctx) (string, error)
}

// Regular is a regular file's data. Offsets are never negative; reads
// past the end return 0 bytes and writes past it extend the file,
// leaving a hole that reads as zeros.
type Regular interface {
	Inode
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Append writes p at the end of the file atomically with respect to
	// other writers and returns the new end.
	Append(p []byte) (n int, end int64, err error)
}

// ExactReader is implemented by Files and Regular inodes whose reads
// write every byte of p[:n] they report (n) from the file's data: the
// read(2) path then hands its lent buffer out without clearing it first
// (OpenFile.ReadsExactly), which it must do for any other file in case
// one reports bytes it never wrote.
type ExactReader interface {
	ReadsExactly()
}

// CachedReader is implemented by Files and Regular inodes that can
// serve a read from memory without waiting (a block device's or a
// file's page cache): ReadCached
// copies into dst, in order, the bytes at off it holds, stopping at the
// first it would have to wait or read the disk for, and returns how
// many and whether that is all that was asked (or all up to the end).
// dst is the kernel's view of a program's buffers, kept mapped by a
// lock page faults take: ReadCached must not wait, fault or do I/O.
type CachedReader interface {
	ReadCached(dst [][]byte, off int64) (n int, all bool)
}

// OpenCounter is implemented by inodes that must know whether an open
// file refers to them: an in-memory file system frees an unlinked file's
// data when its last open file goes (an open file, O_PATH ones too, keeps
// a file whose names are all gone usable, as on Linux). Opened is called
// for every open file made of the inode, Closed when it is released.
type OpenCounter interface {
	Opened()
	Closed()
}

// Reaper is implemented by inodes whose data is freed when their last
// name and last open file are gone: an open that found such an inode
// before an unlink took its last name, and counted itself (Opened) only
// after the data went, must fail with ENOENT, as if the lookup had come
// after the unlink, rather than reach a file whose contents are gone.
type Reaper interface {
	Reaped() bool
}

// Holder is implemented by inodes whose release after their last name
// is removed takes work (freeing an in-memory file's data): unlink holds
// the inode across the removal and drops it once the directory is
// unlocked, so that the release runs outside the directory's lock, as
// Linux's do_unlinkat holds the inode and puts it after unlocking.
type Holder interface {
	Hold()
	Drop()
}

// Opener is implemented by inodes other than directories that supply
// their own open-file behaviour, like device nodes and procfs files. A
// device node without one is looked up in the VFS's device table by its
// Rdev.
type Opener interface {
	Open(flags uint32) (File, error)
}

// CallerOpener is an Opener whose answer depends on who opens, beyond
// the permission bits the VFS checks: a /proc file that only a caller
// allowed to inspect its process may read.
type CallerOpener interface {
	OpenFor(c *Ctx, flags uint32) (File, error)
}
