package ext4

// Operations on a file's attributes and contents, and directory
// listings. Like every exported method they take FS.mu for their length:
// for reading where they only read (Stat, Lookup, ReadDir, ReadDirAt,
// Readlink, with the inode's lock for reading) or run as a handle (a
// small WriteAt: handle.go), else for writing.

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// Stat is an inode's attributes.
type Stat struct {
	Ino                 uint32
	Mode                uint32 // type and permission bits (linux.S_IF*)
	Nlink               uint32
	UID, GID            uint32
	Size                uint64
	Blocks              uint64 // 512-byte units
	Atime, Mtime, Ctime linux.Timespec
	Btime               linux.Timespec
	RdevMajor           uint32
	RdevMinor           uint32
	Generation          uint32
	Flags               uint32
}

func (fs *FS) stat(in *inode) Stat {
	s := Stat{
		Ino: in.num, Mode: uint32(in.mode), Nlink: uint32(in.links), UID: in.uid, GID: in.gid,
		Size: in.size, Blocks: in.blocks, Atime: in.atime, Mtime: in.mtime, Ctime: in.ctime,
		Btime: in.crtime, Generation: in.generation, Flags: in.flags,
	}
	if t := in.fileType(); t == linux.S_IFCHR || t == linux.S_IFBLK {
		s.RdevMajor, s.RdevMinor = in.rdev()
	}
	return s
}

// Stat returns inode ino's attributes.
func (fs *FS) Stat(ino uint32) (Stat, error) {
	defer fs.rbeginInode(ino)()
	in, err := fs.iget(ino)
	if err != nil {
		return Stat{}, err
	}
	return fs.stat(in), nil
}

// Lookup returns the inode that name names in directory dir.
func (fs *FS) Lookup(dir uint32, name string) (uint32, error) {
	defer fs.rbeginInode(dir)()
	d, err := fs.iget(dir)
	if err != nil {
		return 0, err
	}
	loc, err := fs.findEntry(d, name)
	if err != nil {
		return 0, err
	}
	return loc.d.ino, nil
}

// ReadDir returns every entry of directory dir, "." and ".." included.
func (fs *FS) ReadDir(dir uint32) ([]DirEntry, error) {
	defer fs.rbeginInode(dir)()
	d, err := fs.iget(dir)
	if err != nil {
		return nil, err
	}
	return fs.readDir(d)
}

// ReadAt reads file ino's data at off: holding FS.mu for reading where
// the file's pages are open and sized (readShared), else for writing.
func (fs *FS) ReadAt(ino uint32, p []byte, off int64) (int, error) {
	if n, ok, err := fs.readShared(ino, p, off); ok {
		return n, err
	}
	fs.begin()
	defer fs.end()
	in, err := fs.iget(ino)
	if err != nil {
		return 0, err
	}
	if in.isDir() {
		return 0, linux.EISDIR
	}
	return fs.readData(in, p, off)
}

// WriteAt writes p into file ino at off, setting mtime and ctime.
// A small write runs in a handle (handle.go), holding the file's lock.
func (fs *FS) WriteAt(ino uint32, p []byte, off int64) (int, error) {
	var n int
	err := fs.sharedWrite(ino, len(p), func() (int, error) {
		var err error
		n, err = fs.writeAt(ino, p, off)
		return n, err
	})
	return n, err
}

// sharedWrite runs write, a write of size bytes to file ino, in a handle
// holding the file's lock where the write is small, else, or if the
// handle cannot finish it, holding FS.mu for writing. A write the handle
// cut short keeps what it wrote: the rest is the caller's to retry.
func (fs *FS) sharedWrite(ino uint32, size int, write func() (int, error)) error {
	return fs.shared(func() error {
		if size > handleMaxWrite {
			return errExclusive
		}
		l := fs.ilock(ino)
		fs.lockInode(l)
		defer l.Unlock()
		n, err := write()
		if n > 0 && errors.Is(err, errExclusive) {
			err = nil
		}
		return err
	}, func() error {
		_, err := write()
		return err
	})
}

func (fs *FS) writeAt(ino uint32, p []byte, off int64) (int, error) {
	if err := fs.writable(); err != nil {
		return 0, err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return 0, err
	}
	if in.fileType() != linux.S_IFREG {
		return 0, linux.EINVAL
	}
	n, err := fs.writeData(in, p, off)
	if n > 0 {
		in.mtime = fs.now()
		in.ctime = in.mtime
	}
	return n, errors.Join(err, fs.iput(in))
}

// Truncate sets regular file ino's size. It runs in a handle holding
// the file's lock where the blocks it frees fit the handle's credits
// (sharedTruncate).
func (fs *FS) Truncate(ino uint32, size uint64) error {
	return fs.sharedTruncate(ino, size, func() error {
		if err := fs.writable(); err != nil {
			return err
		}
		in, err := fs.iget(ino)
		if err != nil {
			return err
		}
		if in.fileType() != linux.S_IFREG {
			return linux.EINVAL
		}
		err = fs.truncateData(in, size)
		in.mtime = fs.now()
		in.ctime = in.mtime
		return errors.Join(err, fs.iput(in))
	})
}

// sharedTruncate runs set, which sets file ino's size to size (and
// perhaps more of its attributes), in a handle holding the file's lock,
// as an unlink frees a file: with more credits (freeCredits) where the
// file holds more than a small file's blocks; else, or where that is not
// known cheaply or the transaction has no room, holding FS.mu for
// writing. Everything a truncate does besides freeing blocks (the page
// its new end cuts through written back and its tail zeroed, the pages
// past it dropped, the tail of its last block zeroed on the disk) is
// the file's alone, which its lock guards; a write-back of its pages
// meanwhile holds their dataMap, from which the freed blocks are taken
// first (pages.go).
func (fs *FS) sharedTruncate(ino uint32, size uint64, set func() error) error {
	return fs.sharedInode(ino, func() error {
		in, err := fs.iget(ino)
		if err != nil {
			return err
		}
		if in.fileType() == linux.S_IFREG && size < in.size && (in.blocks > handleMaxFree || in.fileACL != 0) {
			n, ok := fs.freeCredits(in)
			if !ok || !fs.hextend(n) {
				return errExclusive
			}
			defer fs.hshrink(n)
		}
		return set()
	}, set)
}

// Readlink returns symlink ino's target.
func (fs *FS) Readlink(ino uint32) (string, error) {
	defer fs.rbeginInode(ino)()
	in, err := fs.iget(ino)
	if err != nil {
		return "", err
	}
	if in.fileType() != linux.S_IFLNK {
		return "", linux.EINVAL
	}
	if in.size > uint64(fs.blockSize) || in.size == 0 {
		return "", corrupt("symlink %d size %d", in.num, in.size)
	}
	if fs.isFastSymlink(in) {
		return string(in.block[:in.size]), nil
	}
	buf := make([]byte, in.size)
	n, err := fs.readData(in, buf, 0)
	return string(buf[:n]), err
}

// isFastSymlink reports whether a symlink's target lives in i_block: no
// data blocks beyond an xattr block.
func (fs *FS) isFastSymlink(in *inode) bool {
	ea := uint64(0)
	if in.fileACL != 0 {
		ea = uint64(fs.blockSize / 512)
	}
	return in.size < 60 && in.blocks <= ea && in.flags&flagExtents == 0
}

// Now returns the file system clock's time, as timestamps record it.
func (fs *FS) Now() linux.Timespec { return fs.now() }

// Append writes p at the end of regular file ino, atomically with respect
// to other writers, and returns the new end. As WriteAt, a small one runs
// in a handle, holding the file's lock from reading the size to setting
// it, so that appends to one file (an access log from every worker)
// neither interleave nor stop the rest of the file system.
func (fs *FS) Append(ino uint32, p []byte) (int, int64, error) {
	var n int
	var end int64
	err := fs.sharedWrite(ino, len(p), func() (int, error) {
		var err error
		n, end, err = fs.appendData(ino, p)
		return n, err
	})
	return n, end, err
}

func (fs *FS) appendData(ino uint32, p []byte) (int, int64, error) {
	if err := fs.writable(); err != nil {
		return 0, 0, err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return 0, 0, err
	}
	if in.fileType() != linux.S_IFREG {
		return 0, 0, linux.EINVAL
	}
	n, err := fs.writeData(in, p, int64(in.size))
	if n > 0 {
		in.mtime = fs.now()
		in.ctime = in.mtime
	}
	return n, int64(in.size), errors.Join(err, fs.iput(in))
}

// ReadDirAt returns the entries of directory dir whose position is pos
// or later, in order, stopping at the end of the block (or run of index
// leaves) in which it has max entries. An entry's position
// (DirEntry.Off) stays valid while others come and go: on a dir_index
// file system, for a directory with an index or of one block, it is
// made of the name's hash (a leaf split moves entries between blocks,
// and a one-block directory gets an index when it outgrows its block),
// as on Linux (htree.go); in other directories it is the entry's byte
// offset (entries there never move). Entries sharing a position (equal
// hashes) come out together, never split between two calls.
func (fs *FS) ReadDirAt(dir uint32, pos int64, max int) ([]DirEntry, error) {
	defer fs.rbeginInode(dir)()
	d, err := fs.iget(dir)
	if err != nil {
		return nil, err
	}
	if pos < 0 {
		return nil, linux.EINVAL
	}
	if fs.hashOrdered(d) {
		if fs.indexed(d) {
			return fs.readDirHashed(d, pos, max)
		}
		return fs.readDirOneBlock(d, pos)
	}
	var out []DirEntry
	bs := int64(fs.blockSize)
	full := false
	err = fs.forEachDirentFrom(d, uint32(min(pos/bs, 1<<32-1)), func(lblk uint32, b []byte, _ uint64, e dirent) (bool, error) {
		if full && e.off == 0 {
			return false, nil // the block that filled the list is done
		}
		off := int64(lblk)*bs + int64(e.off)
		if off < pos || e.ino == 0 {
			return true, nil
		}
		name := string(b[e.off+direntHeader : e.off+direntHeader+e.nameLen])
		out = append(out, DirEntry{Name: name, Ino: e.ino, Type: dtOf(e.ftype), Off: off})
		full = len(out) >= max
		return true, nil
	})
	return out, err
}
