package ext4

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// Rename moves srcName in srcDir to dstName in dstDir, replacing what
// dstName named unless flags has linux.RENAME_NOREPLACE; with
// linux.RENAME_EXCHANGE the two names trade places. A directory moved to
// another parent gets its ".." changed and the parents' link counts
// follow.
//
// It runs in a handle (handle.go) holding the inode locks of the two
// directories, of the file moved and of the one it replaces or trades
// places with (inodeLocks: the directories' first, in stripe order, the
// others added once their names are looked up, or all again in order
// and the names looked up again). A directory that moves to another
// parent runs holding FS.mu for writing: whether the target lies below
// it is known only from the chain of ".." up to the root, which the
// handle does not lock, and two such renames side by side could each
// pass that check and make a loop. So does a rename whose replaced file
// goes and is too big to free within the running transaction's room,
// or has an xattr block (removeLocked's rule).
func (fs *FS) Rename(srcDir uint32, srcName string, dstDir uint32, dstName string, flags uint32) error {
	if flags&^(linux.RENAME_NOREPLACE|linux.RENAME_EXCHANGE) != 0 ||
		flags == linux.RENAME_NOREPLACE|linux.RENAME_EXCHANGE {
		return linux.EINVAL
	}
	for _, n := range []string{srcName, dstName} {
		if n == "." || n == ".." || n == "" {
			return linux.EINVAL
		}
		if len(n) > maxNameLen {
			return linux.ENAMETOOLONG
		}
	}
	return fs.shared(func() error {
		l := fs.lockInodes(srcDir, dstDir)
		var want [2]uint32
		err := fs.rename(srcDir, srcName, dstDir, dstName, flags, func(src, dst uint32) error {
			if l.add(src) && l.add(dst) {
				return nil
			}
			want = [2]uint32{src, dst}
			return errRelock
		})
		l.unlock()
		if !errors.Is(err, errRelock) {
			return err
		}
		l = fs.lockInodes(srcDir, dstDir, want[0], want[1])
		defer l.unlock()
		return fs.rename(srcDir, srcName, dstDir, dstName, flags, func(src, dst uint32) error {
			if l.holds(src) && l.holds(dst) {
				return nil
			}
			return errExclusive // the names changed meanwhile
		})
	}, func() error {
		return fs.rename(srcDir, srcName, dstDir, dstName, flags, nil)
	})
}

// rename is Rename's work, holding FS.mu for writing or, in a handle,
// the inode locks of srcDir and dstDir; there lock takes those of the
// inodes the two names name (dst 0: none), before anything is read of
// them or changed, and what a handle cannot do returns errExclusive
// before anything changed.
func (fs *FS) rename(srcDir uint32, srcName string, dstDir uint32, dstName string, flags uint32, lock func(src, dst uint32) error) error {
	sd, err := fs.dirForChange(srcDir)
	if err != nil {
		return err
	}
	dd := sd
	if dstDir != srcDir {
		if dd, err = fs.dirForChange(dstDir); err != nil {
			return err
		}
	}
	sloc, err := fs.findEntry(sd, srcName)
	if err != nil {
		return err
	}
	dloc, derr := fs.findEntry(dd, dstName)
	if lock != nil {
		dino := uint32(0)
		if derr == nil {
			dino = dloc.d.ino
		}
		if err := lock(sloc.d.ino, dino); err != nil {
			return err
		}
	}
	src, err := fs.iget(sloc.d.ino)
	if err != nil {
		return err
	}
	var dst *inode
	switch err := derr; {
	case err == nil:
		if flags&linux.RENAME_NOREPLACE != 0 {
			return linux.EEXIST
		}
		if dloc.d.ino == src.num {
			return nil // two names of one file: nothing to do
		}
		if dst, err = fs.iget(dloc.d.ino); err != nil {
			return err
		}
	case errors.Is(err, linux.ENOENT):
		if flags&linux.RENAME_EXCHANGE != 0 {
			return linux.ENOENT
		}
		dloc = nil
	default:
		return err
	}
	exchange := flags&linux.RENAME_EXCHANGE != 0
	if lock != nil {
		if sd != dd && (src.isDir() || exchange && dst.isDir()) {
			return errExclusive // a directory to another parent
		}
		// A replaced file that goes (a directory always) is freed here:
		// a big one with more credits, as an unlink's (removeLocked).
		frees := dst != nil && !exchange && (dst.links <= 1 || dst.isDir())
		if frees && (dst.blocks > handleMaxFree || dst.fileACL != 0) {
			n, ok := fs.freeCredits(dst)
			if !ok || !fs.hextend(n) {
				return errExclusive
			}
			defer fs.hshrink(n)
		}
	}
	if src.isDir() && srcDir != dstDir {
		if err := fs.checkNotAncestor(src.num, dd.num); err != nil {
			return err
		}
	}
	if dst != nil && dst.isDir() && exchange && srcDir != dstDir {
		if err := fs.checkNotAncestor(dst.num, sd.num); err != nil {
			return err
		}
	}
	now := fs.now()
	if exchange {
		return fs.exchange(sd, dd, src, dst, srcName, dloc, now)
	}
	if dst != nil {
		if src.isDir() {
			if !dst.isDir() {
				return linux.ENOTDIR
			}
			empty, err := fs.isEmptyDir(dst)
			if err != nil {
				return err
			}
			if !empty {
				return linux.ENOTEMPTY
			}
		} else if dst.isDir() {
			return linux.EISDIR
		}
		if err := fs.setEntryIno(dd, dloc, src.num, fileTypeOf(uint32(src.mode))); err != nil {
			return err
		}
	} else if err := fs.addEntry(dd, dstName, src.num, fileTypeOf(uint32(src.mode))); err != nil {
		return err
	}
	// Adding may have changed the source block (same directory): find the
	// name again.
	if sloc, err = fs.findEntry(sd, srcName); err != nil {
		return err
	}
	if err := fs.removeEntry(sd, sloc); err != nil {
		return err
	}
	var errs []error
	if src.isDir() && srcDir != dstDir {
		errs = append(errs, fs.setDotDot(src, dd.num))
		fs.decLinks(sd)
		fs.incLinks(dd)
	}
	src.ctime = now
	errs = append(errs, fs.iput(src))
	if dst != nil {
		if dst.isDir() {
			dst.links = 0
			fs.decLinks(dd)
		} else {
			dst.links--
		}
		dst.ctime = now
		errs = append(errs, fs.settle(dst))
	}
	sd.mtime, sd.ctime = now, now
	errs = append(errs, fs.iput(sd))
	if dd != sd {
		dd.mtime, dd.ctime = now, now
		errs = append(errs, fs.iput(dd))
	}
	return errors.Join(errs...)
}

func (fs *FS) exchange(sd, dd, src, dst *inode, srcName string, dloc *dirLoc, now linux.Timespec) error {
	if err := fs.setEntryIno(dd, dloc, src.num, fileTypeOf(uint32(src.mode))); err != nil {
		return err
	}
	sloc, err := fs.findEntry(sd, srcName)
	if err != nil {
		return err
	}
	if err := fs.setEntryIno(sd, sloc, dst.num, fileTypeOf(uint32(dst.mode))); err != nil {
		return err
	}
	var errs []error
	if sd != dd {
		if src.isDir() {
			errs = append(errs, fs.setDotDot(src, dd.num))
		}
		if dst.isDir() {
			errs = append(errs, fs.setDotDot(dst, sd.num))
		}
		if src.isDir() && !dst.isDir() {
			fs.decLinks(sd)
			fs.incLinks(dd)
		} else if dst.isDir() && !src.isDir() {
			fs.decLinks(dd)
			fs.incLinks(sd)
		}
	}
	src.ctime, dst.ctime = now, now
	sd.mtime, sd.ctime = now, now
	errs = append(errs, fs.iput(src), fs.iput(dst), fs.iput(sd))
	if dd != sd {
		dd.mtime, dd.ctime = now, now
		errs = append(errs, fs.iput(dd))
	}
	return errors.Join(errs...)
}

// setDotDot points directory in's ".." at parent.
func (fs *FS) setDotDot(in *inode, parent uint32) error {
	loc, err := fs.findEntry(in, "..")
	if err != nil {
		return err
	}
	return fs.setEntryIno(in, loc, parent, ftDir)
}

// checkNotAncestor fails with EINVAL if directory dir is ino or lies
// below it: a directory cannot move into itself.
func (fs *FS) checkNotAncestor(ino, dir uint32) error {
	cur := dir
	for steps := 0; steps < 1<<16; steps++ {
		if cur == ino {
			return linux.EINVAL
		}
		if cur == RootIno {
			return nil
		}
		in, err := fs.iget(cur)
		if err != nil {
			return err
		}
		loc, err := fs.findEntry(in, "..")
		if err != nil {
			return err
		}
		cur = loc.d.ino
	}
	return corrupt("directory %d: the chain of .. does not reach the root", dir)
}

// SetAttr mask bits: which fields of an Attr change.
const (
	SetMode = 1 << iota
	SetUID
	SetGID
	SetSize
	SetAtime
	SetMtime
	SetCtime
)

// Attr carries new attribute values for SetAttr.
type Attr struct {
	Mode         uint32 // permission bits (07777)
	UID, GID     uint32
	Size         uint64
	Atime, Mtime linux.Timespec
	Ctime        linux.Timespec
}

// SetAttr changes the attributes of ino that mask names. Permission
// checks are the caller's.
//
// It runs in a handle holding the inode's lock: one that leaves the size
// alone (chmod, chown, utimes) changes only the inode's fields, and a
// size change runs as Truncate does (sharedTruncate).
func (fs *FS) SetAttr(ino uint32, mask uint32, a Attr) error {
	set := func() error { return fs.setAttr(ino, mask, a) }
	if mask&SetSize != 0 {
		return fs.sharedTruncate(ino, a.Size, set)
	}
	return fs.sharedInode(ino, set, set)
}

// setAttr is SetAttr's work, holding FS.mu for writing or, in a handle
// that changes no size, ino's lock.
func (fs *FS) setAttr(ino uint32, mask uint32, a Attr) error {
	if err := fs.writable(); err != nil {
		return err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return err
	}
	var errs []error
	if mask&SetSize != 0 {
		if in.fileType() != linux.S_IFREG {
			return linux.EINVAL
		}
		if a.Size != in.size {
			in.mtime = fs.now()
		}
		errs = append(errs, fs.truncateData(in, a.Size))
	}
	if mask&SetMode != 0 {
		in.mode = in.mode&uint16(linux.S_IFMT) | uint16(a.Mode&0o7777)
	}
	if mask&SetUID != 0 {
		in.uid = a.UID
	}
	if mask&SetGID != 0 {
		in.gid = a.GID
	}
	if mask&SetAtime != 0 {
		in.atime = a.Atime
	}
	if mask&SetMtime != 0 {
		in.mtime = a.Mtime
	}
	in.ctime = fs.now()
	if mask&SetCtime != 0 {
		in.ctime = a.Ctime
	}
	return errors.Join(append(errs, fs.iput(in))...)
}

// TouchAtime moves ino's access time to now after a read when stale
// says so (the VFS's access-time rule for the mount, given the access,
// modification and change times and now). It changes nothing else, not
// even the change time; a read-only file system keeps its times.
//
// When the access time is left (or made) such that stale says no, it
// returns the count of inode writes (Changes) at that point and the
// second, from the access time, at which it would go stale by age: until
// either moves the caller need not ask again. Otherwise seq is 0.
//
// It runs in a handle holding the inode's lock (handle.go): the first
// read of every file written since its last read moves its access time
// under relatime, which a mail server's readers do for each message.
func (fs *FS) TouchAtime(ino uint32, stale func(atime, mtime, ctime, now linux.Timespec) bool) (seq uint64, until int64, err error) {
	touch := func() (err error) {
		seq, until, err = fs.touchAtime(ino, stale)
		return err
	}
	err = fs.sharedInode(ino, touch, touch)
	return seq, until, err
}

// touchAtime is TouchAtime's work, holding FS.mu for writing or, in a
// handle, ino's lock, so that no write of the inode comes between the
// look at its times and the count returned.
func (fs *FS) touchAtime(ino uint32, stale func(atime, mtime, ctime, now linux.Timespec) bool) (seq uint64, until int64, err error) {
	if fs.ro {
		return 0, 0, nil
	}
	in, err := fs.iget(ino)
	if err != nil {
		return 0, 0, err
	}
	now := fs.now()
	if stale(in.atime, in.mtime, in.ctime, now) {
		in.atime = now
		if err := fs.iput(in); err != nil {
			return 0, 0, err
		}
		if stale(in.atime, in.mtime, in.ctime, now) {
			return 0, 0, nil // a modification time in the future
		}
	}
	return fs.changes.Load(), in.atime.Sec + 24*3600, nil
}

// Statfs describes the file system's space, as statfs(2) reports it.
type Statfs struct {
	BlockSize uint32
	Blocks    uint64
	Free      uint64 // free blocks
	Avail     uint64 // free blocks less those kept for root
	Files     uint64
	FilesFree uint64
	NameLen   uint32
}

// Statfs returns the file system's counts.
func (fs *FS) Statfs() Statfs {
	fs.rbegin()
	defer fs.rend()
	s := Statfs{
		BlockSize: fs.blockSize, Blocks: fs.sb.blocksCount, Free: uint64(max(fs.freeBlocks.Load(), 0)),
		Files: uint64(fs.sb.inodesCount), FilesFree: uint64(max(fs.freeInodes.Load(), 0)), NameLen: maxNameLen,
	}
	// As Linux's: neither root's blocks nor the metadata reserve are
	// available.
	if held := fs.sb.rBlocksCount + uint64(fs.resvBlocks); s.Free > held {
		s.Avail = s.Free - held
	}
	return s
}
