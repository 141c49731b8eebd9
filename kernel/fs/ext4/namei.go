package ext4

import (
	"errors"
	"sync"

	"shortbread/kernel/abi/linux"
)

// Creating and removing names: Create, Mkdir, Symlink, Link, Unlink,
// Rmdir (Rename is in rename.go). Like every exported operation each
// takes FS.mu for its whole length (for reading only when they run as
// handles: handle.go) and names inodes by number; nothing decoded
// outlives the call.

// linkMax is the most links a file may have; a directory past it counts
// 1 (dir_nlink), as Linux's EXT4_LINK_MAX.
const linkMax = 65000

// begin and end bracket an operation that may change the file system:
// FS.mu held for writing, and at the end a commit if the running
// transaction is large enough.
func (fs *FS) begin() { fs.mu.Lock(); fs.cache.trim(fs) }

func (fs *FS) end() {
	fs.maybeCommit()
	fs.mu.Unlock()
}

// rbegin and rend bracket an operation that only reads metadata: FS.mu
// held for reading, so that such operations run side by side. One may
// read blocks into the cache (cache.get) and nothing else: no trim (a
// reader beside it may hold a block's slice), no commit.
func (fs *FS) rbegin() { fs.mu.RLock() }

func (fs *FS) rend() { fs.mu.RUnlock() }

// rbeginInode is rbegin for an operation that reads inode ino (and,
// a directory, its entries): it holds the inode's lock for reading too,
// since handles change inodes holding FS.mu only for reading
// (handle.go). It returns the end.
func (fs *FS) rbeginInode(ino uint32) func() {
	fs.mu.RLock()
	l := fs.ilock(ino)
	fs.rlockInode(l)
	return func() {
		l.RUnlock()
		fs.mu.RUnlock()
	}
}

func (fs *FS) writable() error {
	if fs.ro || fs.metaErr.Load() != nil {
		return linux.EROFS
	}
	return nil
}

// newInode allocates and initializes an inode; the caller links it.
// take is allocInode's.
func (fs *FS) newInode(parent uint32, mode uint32, uid, gid uint32, take func(uint32) bool) (*inode, error) {
	ino, gen, err := fs.allocInode(parent, mode&linux.S_IFMT == linux.S_IFDIR, take)
	if err != nil {
		return nil, err
	}
	in := &inode{num: ino, raw: make([]byte, fs.sb.inodeSize)}
	in.mode = uint16(mode)
	in.uid, in.gid = uid, gid
	now := fs.now()
	in.atime, in.mtime, in.ctime, in.crtime = now, now, now, now
	in.generation = uint32(now.Nsec) ^ gen*0x9E3779B9
	if fs.sb.inodeSize > 128 {
		in.extraIsize = fs.sb.wantExtraIsize
		if in.extraIsize < fs.sb.minExtraIsize {
			in.extraIsize = fs.sb.minExtraIsize
		}
		if in.extraIsize == 0 {
			in.extraIsize = min(32, fs.sb.inodeSize-128)
		}
	}
	switch mode & linux.S_IFMT {
	case linux.S_IFREG, linux.S_IFDIR, linux.S_IFLNK:
		if fs.sb.incompat&incompatExtents != 0 {
			in.flags |= flagExtents
			putExtentHeader(in.block[:], 0, 4, 0)
		}
	}
	return in, nil
}

func (fs *FS) dirForChange(dir uint32) (*inode, error) {
	if err := fs.writable(); err != nil {
		return nil, err
	}
	d, err := fs.iget(dir)
	if err != nil {
		return nil, err
	}
	if !d.isDir() {
		return nil, linux.ENOTDIR
	}
	if d.links == 0 {
		return nil, linux.ENOENT
	}
	return d, nil
}

// checkFree checks that name can be entered in d and returns where it
// would go (lookupEntry), for addEntryAt.
func (fs *FS) checkFree(d *inode, name string) (*dirSlot, error) {
	if len(name) > maxNameLen {
		return nil, linux.ENAMETOOLONG
	}
	if name == "" || name == "." || name == ".." {
		return nil, linux.EEXIST
	}
	_, slot, err := fs.lookupEntry(d, name, !fs.noSlot)
	if err == nil {
		return nil, linux.EEXIST
	} else if !errors.Is(err, linux.ENOENT) {
		return nil, err
	}
	return slot, nil
}

// touchDir sets a directory's mtime and ctime and writes it.
func (fs *FS) touchDir(d *inode) error {
	d.mtime = fs.now()
	d.ctime = d.mtime
	return fs.iput(d)
}

// Create makes a regular file, device node, FIFO or socket named name in
// dir; mode holds its type and permissions.
// In a handle (handle.go) it makes the new inode holding only its lock,
// taken as it is allocated, and then takes the directory's to enter it.
func (fs *FS) Create(dir uint32, name string, mode, uid, gid, major, minor uint32) (uint32, error) {
	var ino uint32
	err := fs.shared(func() error {
		var err error
		ino, err = fs.createHandle(dir, name, mode, uid, gid, major, minor)
		return err
	}, func() error {
		var err error
		ino, err = fs.create(dir, name, mode, uid, gid, major, minor)
		return err
	})
	return ino, err
}

// createHandle is Create in a handle. The inode is allocated and written
// before the directory's lock is taken, so that two creates in one
// directory hold its lock only to look the name up and enter it. What
// the exclusive create reports in another order (a bad name or type,
// no inode free) runs there instead.
func (fs *FS) createHandle(dir uint32, name string, mode, uid, gid, major, minor uint32) (uint32, error) {
	switch mode & linux.S_IFMT {
	case linux.S_IFREG, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFIFO, linux.S_IFSOCK:
	default:
		return 0, errExclusive
	}
	return fs.makeHandle(dir, name, mode, uid, gid, func(in *inode) error {
		if t := mode & linux.S_IFMT; t == linux.S_IFCHR || t == linux.S_IFBLK {
			in.setRdev(major, minor)
		}
		in.links = 1
		return nil
	}, nil)
}

// makeHandle makes a new inode of mode and names it name in dir, in a
// handle: fill sets the new inode's fields and data (before any
// directory lock is taken), and linked, if not nil, changes the
// directory d (its inode lock held) once the name is in it. A name
// that is not a plain component runs exclusive, whose checks come in
// Linux's order.
func (fs *FS) makeHandle(dir uint32, name string, mode, uid, gid uint32, fill func(*inode) error, linked func(d *inode) error) (uint32, error) {
	if len(name) > maxNameLen || name == "" || name == "." || name == ".." {
		return 0, errExclusive
	}
	// The new inode's lock, tried under its group's lock: a lock
	// another holds is passed over, never waited for (inode locks come
	// first), so that one just freed by a handle still at work on it
	// is not taken.
	var mine *sync.RWMutex
	in, err := fs.newInode(dir, mode, uid, gid, func(n uint32) bool {
		if m := fs.ilock(n); m.TryLock() {
			mine = m
			return true
		}
		return false
	})
	if err != nil {
		if mine != nil {
			mine.Unlock()
		}
		if errors.Is(err, errNoSpace) {
			return 0, errExclusive
		}
		return 0, err
	}
	if err := fill(in); err != nil {
		in.links = 0
		err = errors.Join(err, fs.evict(in))
		mine.Unlock()
		return 0, err
	}
	if err := fs.iput(in); err != nil {
		in.links = 0
		err = errors.Join(err, fs.evict(in))
		mine.Unlock()
		return 0, err
	}
	// Now the directory's lock, in stripe order. Where it comes first
	// and another holds it, the inode's is let go meanwhile: no one
	// else knows the inode yet.
	l := &dirLocks{fs: fs, dir: fs.ilock(dir), ino: mine}
	switch {
	case l.dir == mine:
		l.ino = nil
	case stripe(dir) > stripe(in.num):
		fs.lockInode(l.dir)
	case !l.dir.TryLock():
		mine.Unlock()
		fs.lockInode(l.dir)
		fs.lockInode(mine)
	}
	defer l.unlock()
	d, err := fs.dirForChange(dir)
	var slot *dirSlot
	if err == nil {
		slot, err = fs.checkFree(d, name)
	}
	if err == nil && linked != nil && in.isDir() && d.links >= linkMax && fs.sb.roCompat&roCompatDirNlink == 0 {
		err = linux.EMLINK
	}
	if err == nil {
		err = fs.addEntryAt(d, name, in.num, fileTypeOf(uint32(in.mode)), slot)
	}
	if err != nil {
		in.links = 0
		return 0, errors.Join(err, fs.evict(in))
	}
	if linked != nil {
		if err := linked(d); err != nil {
			return 0, err
		}
	}
	return in.num, fs.touchDir(d)
}

// create is Create holding FS.mu for writing.
func (fs *FS) create(dir uint32, name string, mode, uid, gid, major, minor uint32) (uint32, error) {
	switch mode & linux.S_IFMT {
	case linux.S_IFREG, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFIFO, linux.S_IFSOCK:
	default:
		return 0, linux.EINVAL
	}
	d, err := fs.dirForChange(dir)
	if err != nil {
		return 0, err
	}
	slot, err := fs.checkFree(d, name)
	if err != nil {
		return 0, err
	}
	in, err := fs.newInode(dir, mode, uid, gid, nil)
	if err != nil {
		return 0, err
	}
	if t := mode & linux.S_IFMT; t == linux.S_IFCHR || t == linux.S_IFBLK {
		in.setRdev(major, minor)
	}
	in.links = 1
	return in.num, fs.linkNew(d, name, in, slot)
}

// linkNew writes a new inode and enters it in d (at slot, from
// checkFree, if not nil); on failure to enter it the inode is freed
// again.
func (fs *FS) linkNew(d *inode, name string, in *inode, slot *dirSlot) error {
	if err := fs.iput(in); err != nil {
		fs.freeInode(in.num, in.isDir())
		return err
	}
	if err := fs.addEntryAt(d, name, in.num, fileTypeOf(uint32(in.mode)), slot); err != nil {
		in.links = 0
		return errors.Join(err, fs.evict(in))
	}
	return fs.touchDir(d)
}

// Mkdir makes directory name in dir. In a handle it makes the new
// directory, its first block included, holding only its lock, and then
// takes the parent's to enter it and count its link.
func (fs *FS) Mkdir(dir uint32, name string, perm, uid, gid uint32) (uint32, error) {
	var ino uint32
	err := fs.shared(func() error {
		var err error
		ino, err = fs.makeHandle(dir, name, linux.S_IFDIR|perm&0o7777, uid, gid, func(in *inode) error {
			return fs.fillDir(in, dir)
		}, func(d *inode) error {
			fs.incLinks(d)
			return nil
		})
		return err
	}, func() error {
		var err error
		ino, err = fs.mkdir(dir, name, perm, uid, gid)
		return err
	})
	return ino, err
}

// fillDir gives new directory in, made in parent, its first block with
// "." and "..", and its two links.
func (fs *FS) fillDir(in *inode, parent uint32) error {
	in.links = 2
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	pblk, _, err := fs.mapNew(fm, 0, 1)
	if err != nil {
		return err
	}
	if _, err := fs.saveExtents(fm); err != nil {
		return err
	}
	b := fs.cache.zero(fs, pblk)
	fs.putDirent(b, in.num, 12, ".", ftDir)
	span := len(b) - 12
	if fs.hasCsum() {
		span -= dirTailSize
	}
	fs.putDirent(b[12:], parent, span, "..", ftDir)
	in.size = uint64(fs.blockSize)
	return fs.writeDirBlock(in, pblk, b)
}

// mkdir is Mkdir holding FS.mu for writing.
func (fs *FS) mkdir(dir uint32, name string, perm, uid, gid uint32) (uint32, error) {
	d, err := fs.dirForChange(dir)
	if err != nil {
		return 0, err
	}
	slot, err := fs.checkFree(d, name)
	if err != nil {
		return 0, err
	}
	if d.links >= linkMax && fs.sb.roCompat&roCompatDirNlink == 0 {
		return 0, linux.EMLINK
	}
	in, err := fs.newInode(dir, linux.S_IFDIR|perm&0o7777, uid, gid, nil)
	if err != nil {
		return 0, err
	}
	if err := fs.fillDir(in, d.num); err != nil {
		in.links = 0
		return 0, errors.Join(err, fs.evict(in))
	}
	if err := fs.linkNew(d, name, in, slot); err != nil {
		return 0, err
	}
	fs.incLinks(d)
	return in.num, fs.iput(d)
}

func (fs *FS) incLinks(d *inode) {
	if d.isDir() && (d.links >= linkMax-1 || d.links == 1) {
		d.links = 1 // too many to count (dir_nlink)
		return
	}
	d.links++
}

func (fs *FS) decLinks(d *inode) {
	if d.isDir() && d.links <= 2 {
		return
	}
	d.links--
}

// Symlink makes symlink name in dir pointing at target. A fast symlink
// (a target short enough for the inode) is made in a handle, as Create
// makes a file.
func (fs *FS) Symlink(dir uint32, name, target string, uid, gid uint32) (uint32, error) {
	var ino uint32
	err := fs.shared(func() error {
		if len(target) == 0 || len(target) >= 60 {
			return errExclusive
		}
		var err error
		ino, err = fs.makeHandle(dir, name, linux.S_IFLNK|0o777, uid, gid, func(in *inode) error {
			in.links = 1
			fs.fastSymlink(in, target)
			return nil
		}, nil)
		return err
	}, func() error {
		var err error
		ino, err = fs.symlink(dir, name, target, uid, gid)
		return err
	})
	return ino, err
}

// fastSymlink stores target, shorter than 60 bytes, in the inode's
// block map.
func (fs *FS) fastSymlink(in *inode, target string) {
	in.flags &^= flagExtents
	in.block = [60]byte{}
	copy(in.block[:], target)
	in.size = uint64(len(target))
}

// symlink is Symlink holding FS.mu for writing.
func (fs *FS) symlink(dir uint32, name, target string, uid, gid uint32) (uint32, error) {
	if len(target) == 0 {
		return 0, linux.ENOENT
	}
	if len(target) >= int(fs.blockSize) {
		return 0, linux.ENAMETOOLONG
	}
	d, err := fs.dirForChange(dir)
	if err != nil {
		return 0, err
	}
	slot, err := fs.checkFree(d, name)
	if err != nil {
		return 0, err
	}
	in, err := fs.newInode(dir, linux.S_IFLNK|0o777, uid, gid, nil)
	if err != nil {
		return 0, err
	}
	in.links = 1
	if len(target) < 60 {
		fs.fastSymlink(in, target)
	} else if _, err := fs.writeData(in, []byte(target), 0); err != nil {
		in.links = 0
		return 0, errors.Join(err, fs.evict(in))
	}
	return in.num, fs.linkNew(d, name, in, slot)
}

// Link enters inode ino in dir as name. In a handle it holds the locks
// of the directory and the inode, taken in stripe order.
func (fs *FS) Link(dir uint32, name string, ino uint32) error {
	return fs.shared(func() error {
		l := fs.lockBoth(dir, ino)
		defer l.unlock()
		return fs.link(dir, name, ino)
	}, func() error {
		return fs.link(dir, name, ino)
	})
}

// link is Link's work, holding FS.mu for writing or, in a handle, the
// inode locks of dir and ino.
func (fs *FS) link(dir uint32, name string, ino uint32) error {
	d, err := fs.dirForChange(dir)
	if err != nil {
		return err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return err
	}
	if in.isDir() {
		return linux.EPERM
	}
	if in.links >= linkMax {
		return linux.EMLINK
	}
	if in.links == 0 {
		return linux.ENOENT
	}
	slot, err := fs.checkFree(d, name)
	if err != nil {
		return err
	}
	if err := fs.addEntryAt(d, name, ino, fileTypeOf(uint32(in.mode)), slot); err != nil {
		return err
	}
	in.links++
	in.ctime = fs.now()
	return errors.Join(fs.iput(in), fs.touchDir(d))
}

// Unlink removes name, not a directory, from dir.
func (fs *FS) Unlink(dir uint32, name string) error {
	return fs.remove(dir, name, false)
}

// Rmdir removes the empty directory name from dir.
func (fs *FS) Rmdir(dir uint32, name string) error {
	return fs.remove(dir, name, true)
}

// remove is Unlink and Rmdir. In a handle (handle.go) it takes the
// directory's lock, then the file's (the removed directory's), waited
// for in stripe order; out of order and held by another, both again in
// order and the name looked up again. The directory's is let go before
// the file is freed. A directory being removed has its lock held while
// it is checked empty and its links go: a create in it (makeHandle)
// takes that lock and then finds it gone.
func (fs *FS) remove(dir uint32, name string, wantDir bool) error {
	return fs.shared(func() error {
		l := fs.lockDir(dir)
		var first uint32
		err := fs.removeLocked(dir, name, wantDir, func(in *inode) error {
			if !l.take(dir, in.num) {
				first = in.num
				return errRelock
			}
			return nil
		}, l.releaseDir)
		l.unlock()
		if !errors.Is(err, errRelock) {
			return err
		}
		l = fs.lockBoth(dir, first)
		defer l.unlock()
		return fs.removeLocked(dir, name, wantDir, func(in *inode) error {
			if !l.try(in.num) {
				return errExclusive // renamed over meanwhile, and busy
			}
			return nil
		}, l.releaseDir)
	}, func() error {
		return fs.removeLocked(dir, name, wantDir, nil, nil)
	})
}

// errRelock says an unlink in a handle must take its locks again, in
// stripe order; nothing was changed.
var errRelock = errors.New("ext4: take the locks again in order")

// removeLocked is remove's work. lock, in a handle, takes the lock of
// the inode the name names, and is called before anything changes;
// done, in a handle, is called once the directory is changed, before
// the inode is settled.
func (fs *FS) removeLocked(dir uint32, name string, wantDir bool, lock func(*inode) error, done func()) error {
	d, err := fs.dirForChange(dir)
	if err != nil {
		return err
	}
	if name == "." || name == ".." {
		if wantDir {
			return linux.EINVAL
		}
		return linux.EISDIR
	}
	loc, err := fs.findEntry(d, name)
	if err != nil {
		return err
	}
	if lock != nil {
		// Its lock first, then its fields (iget). A file freed here
		// must fit a handle's credits, and own its xattr block (one
		// shared with other inodes is theirs too).
		if err := lock(&inode{num: loc.d.ino}); err != nil {
			return err
		}
	}
	in, err := fs.iget(loc.d.ino)
	if err != nil {
		return err
	}
	// What goes with its last link (a directory always) is freed: in a
	// handle only within its credits. A directory where a file was
	// asked for, or the reverse, fails below as it would exclusive.
	frees := in.links <= 1 && !in.isDir() || wantDir && in.isDir()
	if lock != nil && frees && (in.blocks > handleMaxFree || in.fileACL != 0) {
		// A big file: more credits, for every group it lies in.
		n, ok := fs.freeCredits(in)
		if !ok || !fs.hextend(n) {
			return errExclusive
		}
		defer fs.hshrink(n)
	}
	if wantDir != in.isDir() {
		if wantDir {
			return linux.ENOTDIR
		}
		return linux.EISDIR
	}
	if wantDir {
		empty, err := fs.isEmptyDir(in)
		if err != nil {
			return err
		}
		if !empty {
			return linux.ENOTEMPTY
		}
	}
	if err := fs.removeEntry(d, loc); err != nil {
		return err
	}
	if wantDir {
		fs.decLinks(d)
		in.links = 0
	} else if in.links > 0 {
		in.links--
	}
	in.ctime = fs.now()
	err = fs.touchDir(d)
	if done != nil {
		done()
	}
	return errors.Join(err, fs.settle(in))
}
