package ext4

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// The exported operations. Each takes FS.mu for its whole length and
// names inodes by number; nothing decoded outlives the call.

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

// linkMax is the most links a file may have; a directory past it counts
// 1 (dir_nlink), as Linux's EXT4_LINK_MAX.
const linkMax = 65000

func (fs *FS) begin() { fs.mu.Lock(); fs.cache.trim(fs) }

func (fs *FS) end() {
	fs.maybeCommit()
	fs.mu.Unlock()
}

func (fs *FS) writable() error {
	if fs.ro {
		return linux.EROFS
	}
	return nil
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
	fs.begin()
	defer fs.end()
	in, err := fs.iget(ino)
	if err != nil {
		return Stat{}, err
	}
	return fs.stat(in), nil
}

// Lookup returns the inode that name names in directory dir.
func (fs *FS) Lookup(dir uint32, name string) (uint32, error) {
	fs.begin()
	defer fs.end()
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
	fs.begin()
	defer fs.end()
	d, err := fs.iget(dir)
	if err != nil {
		return nil, err
	}
	return fs.readDir(d)
}

// ReadAt reads file ino's data at off.
func (fs *FS) ReadAt(ino uint32, p []byte, off int64) (int, error) {
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
func (fs *FS) WriteAt(ino uint32, p []byte, off int64) (int, error) {
	fs.begin()
	defer fs.end()
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

// Truncate sets regular file ino's size.
func (fs *FS) Truncate(ino uint32, size uint64) error {
	fs.begin()
	defer fs.end()
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
}

// Readlink returns symlink ino's target.
func (fs *FS) Readlink(ino uint32) (string, error) {
	fs.begin()
	defer fs.end()
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

// newInode allocates and initializes an inode; the caller links it.
func (fs *FS) newInode(parent uint32, mode uint32, uid, gid uint32) (*inode, error) {
	ino, err := fs.allocInode(parent, mode&linux.S_IFMT == linux.S_IFDIR)
	if err != nil {
		return nil, err
	}
	in := &inode{num: ino, raw: make([]byte, fs.sb.inodeSize)}
	in.mode = uint16(mode)
	in.uid, in.gid = uid, gid
	now := fs.now()
	in.atime, in.mtime, in.ctime, in.crtime = now, now, now, now
	fs.genCounter++
	in.generation = uint32(now.Nsec) ^ fs.genCounter*0x9E3779B9
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

func (fs *FS) checkFree(d *inode, name string) error {
	if len(name) > maxNameLen {
		return linux.ENAMETOOLONG
	}
	if name == "" || name == "." || name == ".." {
		return linux.EEXIST
	}
	if _, err := fs.findEntry(d, name); err == nil {
		return linux.EEXIST
	} else if !errors.Is(err, linux.ENOENT) {
		return err
	}
	return nil
}

// touchDir sets a directory's mtime and ctime and writes it.
func (fs *FS) touchDir(d *inode) error {
	d.mtime = fs.now()
	d.ctime = d.mtime
	return fs.iput(d)
}

// Create makes a regular file, device node, FIFO or socket named name in
// dir; mode holds its type and permissions.
func (fs *FS) Create(dir uint32, name string, mode, uid, gid, major, minor uint32) (uint32, error) {
	fs.begin()
	defer fs.end()
	switch mode & linux.S_IFMT {
	case linux.S_IFREG, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFIFO, linux.S_IFSOCK:
	default:
		return 0, linux.EINVAL
	}
	d, err := fs.dirForChange(dir)
	if err != nil {
		return 0, err
	}
	if err := fs.checkFree(d, name); err != nil {
		return 0, err
	}
	in, err := fs.newInode(dir, mode, uid, gid)
	if err != nil {
		return 0, err
	}
	if t := mode & linux.S_IFMT; t == linux.S_IFCHR || t == linux.S_IFBLK {
		in.setRdev(major, minor)
	}
	in.links = 1
	return in.num, fs.linkNew(d, name, in)
}

// linkNew writes a new inode and enters it in d; on failure to enter it
// the inode is freed again.
func (fs *FS) linkNew(d *inode, name string, in *inode) error {
	if err := fs.iput(in); err != nil {
		fs.freeInode(in.num, in.isDir())
		return err
	}
	if err := fs.addEntry(d, name, in.num, fileTypeOf(uint32(in.mode))); err != nil {
		in.links = 0
		return errors.Join(err, fs.evict(in))
	}
	return fs.touchDir(d)
}

// Mkdir makes directory name in dir.
func (fs *FS) Mkdir(dir uint32, name string, perm, uid, gid uint32) (uint32, error) {
	fs.begin()
	defer fs.end()
	d, err := fs.dirForChange(dir)
	if err != nil {
		return 0, err
	}
	if err := fs.checkFree(d, name); err != nil {
		return 0, err
	}
	if d.links >= linkMax && fs.sb.roCompat&roCompatDirNlink == 0 {
		return 0, linux.EMLINK
	}
	in, err := fs.newInode(dir, linux.S_IFDIR|perm&0o7777, uid, gid)
	if err != nil {
		return 0, err
	}
	in.links = 2
	fm, err := fs.mapping(in)
	if err == nil {
		var pblk uint64
		if pblk, _, err = fs.mapNew(fm, 0, 1); err == nil {
			if fm.em != nil {
				err = fs.writeExtents(in, fm.em)
			}
			b := fs.cache.zero(fs, pblk)
			fs.putDirent(b, in.num, 12, ".", ftDir)
			span := len(b) - 12
			if fs.hasCsum() {
				span -= dirTailSize
			}
			fs.putDirent(b[12:], d.num, span, "..", ftDir)
			in.size = uint64(fs.blockSize)
			err = errors.Join(err, fs.writeDirBlock(in, pblk, b))
		}
	}
	if err != nil {
		in.links = 0
		return 0, errors.Join(err, fs.evict(in))
	}
	if err := fs.linkNew(d, name, in); err != nil {
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

// Symlink makes symlink name in dir pointing at target.
func (fs *FS) Symlink(dir uint32, name, target string, uid, gid uint32) (uint32, error) {
	fs.begin()
	defer fs.end()
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
	if err := fs.checkFree(d, name); err != nil {
		return 0, err
	}
	in, err := fs.newInode(dir, linux.S_IFLNK|0o777, uid, gid)
	if err != nil {
		return 0, err
	}
	in.links = 1
	if len(target) < 60 {
		in.flags &^= flagExtents
		in.block = [60]byte{}
		copy(in.block[:], target)
		in.size = uint64(len(target))
	} else if _, err := fs.writeData(in, []byte(target), 0); err != nil {
		in.links = 0
		return 0, errors.Join(err, fs.evict(in))
	}
	return in.num, fs.linkNew(d, name, in)
}

// Link enters inode ino in dir as name.
func (fs *FS) Link(dir uint32, name string, ino uint32) error {
	fs.begin()
	defer fs.end()
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
	if err := fs.checkFree(d, name); err != nil {
		return err
	}
	if err := fs.addEntry(d, name, ino, fileTypeOf(uint32(in.mode))); err != nil {
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

func (fs *FS) remove(dir uint32, name string, wantDir bool) error {
	fs.begin()
	defer fs.end()
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
	in, err := fs.iget(loc.d.ino)
	if err != nil {
		return err
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
	return errors.Join(fs.touchDir(d), fs.settle(in))
}

// settle writes an inode that just lost a link: freed if that was its
// last and no open file holds it; put on the orphan list if one does, so
// that a crash before the last close still frees it at the next mount.
func (fs *FS) settle(in *inode) error {
	if in.links > 0 {
		return fs.iput(in)
	}
	if fs.held[in.num] == 0 {
		return fs.evict(in)
	}
	// The orphan list threads through i_dtime from s_last_orphan.
	in.dtime = le.Uint32(fs.sb.raw[0xE8:])
	le.PutUint32(fs.sb.raw[0xE8:], in.num)
	return errors.Join(fs.iput(in), fs.writeSuperLocked())
}

// unorphan takes ino off the orphan list, reporting whether it was on it.
func (fs *FS) unorphan(ino uint32) (bool, error) {
	prev := (*inode)(nil)
	cur := le.Uint32(fs.sb.raw[0xE8:])
	for steps := uint32(0); cur != 0 && steps < fs.sb.inodesCount; steps++ {
		in, err := fs.iget(cur)
		if err != nil {
			return false, err
		}
		if cur == ino {
			if prev == nil {
				le.PutUint32(fs.sb.raw[0xE8:], in.dtime)
				return true, fs.writeSuperLocked()
			}
			prev.dtime = in.dtime
			return true, fs.iput(prev)
		}
		prev, cur = in, in.dtime
	}
	return false, nil
}

// processOrphans frees the inodes a crash left on the orphan list (their
// last name gone while a file was open), as Linux does at mount.
func (fs *FS) processOrphans() error {
	for steps := uint32(0); steps < fs.sb.inodesCount; steps++ {
		ino := le.Uint32(fs.sb.raw[0xE8:])
		if ino == 0 {
			return nil
		}
		in, err := fs.iget(ino)
		if err != nil {
			return err
		}
		if in.dtime > fs.sb.inodesCount {
			return corrupt("orphan inode %d links to %d", ino, in.dtime)
		}
		le.PutUint32(fs.sb.raw[0xE8:], in.dtime)
		if err := fs.writeSuperLocked(); err != nil {
			return err
		}
		if in.links == 0 {
			if err := fs.evict(in); err != nil {
				return err
			}
		} else {
			in.dtime = 0
			if err := fs.iput(in); err != nil {
				return err
			}
		}
	}
	return corrupt("the orphan list loops")
}

// Hold keeps inode ino from being freed when its last name goes, while a
// file is open on it; Release lets it go, freeing it if it has no names.
func (fs *FS) Hold(ino uint32) {
	fs.begin()
	defer fs.end()
	if fs.held == nil {
		fs.held = make(map[uint32]int)
	}
	fs.held[ino]++
}

// Release undoes one Hold.
func (fs *FS) Release(ino uint32) error {
	fs.begin()
	defer fs.end()
	if fs.held[ino] <= 1 {
		delete(fs.held, ino)
	} else {
		fs.held[ino]--
		return nil
	}
	if fs.ro {
		return nil
	}
	was, err := fs.unorphan(ino)
	if err != nil || !was {
		return err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return err
	}
	if in.links == 0 {
		return fs.evict(in)
	}
	return fs.iput(in)
}

// evict frees an inode with no links: its data, its xattr block, and the
// inode itself (marked deleted, as e2fsck expects).
func (fs *FS) evict(in *inode) error {
	var errs []error
	t := in.fileType()
	if t == linux.S_IFREG || t == linux.S_IFDIR || t == linux.S_IFLNK && !fs.isFastSymlink(in) {
		errs = append(errs, fs.truncateData(in, 0))
	}
	if in.fileACL != 0 {
		errs = append(errs, fs.dropXattrBlock(in))
	}
	in.dtime = uint32(fs.clock().Unix())
	in.size = 0
	errs = append(errs, fs.iput(in), fs.freeInode(in.num, t == linux.S_IFDIR))
	return errors.Join(errs...)
}

// dropXattrBlock releases in's extended-attribute block: one reference
// fewer, freed with the last.
func (fs *FS) dropXattrBlock(in *inode) error {
	blk := in.fileACL
	if err := fs.checkDataBlock(in, blk); err != nil {
		return err
	}
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return err
	}
	if le.Uint32(b) != 0xEA020000 {
		return corrupt("inode %d xattr block %d magic %#x", in.num, blk, le.Uint32(b))
	}
	in.fileACL = 0
	in.blocks -= min(in.blocks, uint64(fs.blockSize/512))
	refs := le.Uint32(b[4:])
	if refs <= 1 {
		return fs.freeRun(blk, 1)
	}
	le.PutUint32(b[4:], refs-1)
	if fs.hasCsum() {
		le.PutUint32(b[0x10:], 0)
		var nb [8]byte
		le.PutUint64(nb[:], blk)
		le.PutUint32(b[0x10:], crc32c(crc32c(fs.csumSeed, nb[:]), b))
	}
	return fs.cache.write(fs, blk, b)
}

// Now returns the file system clock's time, as timestamps record it.
func (fs *FS) Now() linux.Timespec { return fs.now() }

// Append writes p at the end of regular file ino, atomically with respect
// to other writers, and returns the new end.
func (fs *FS) Append(ino uint32, p []byte) (int, int64, error) {
	fs.begin()
	defer fs.end()
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
// or later, in order, stopping at the end of the block in which it has
// max entries. An entry's position (DirEntry.Off) is its byte offset in
// the directory: entries never move, so positions stay valid while
// others come and go.
func (fs *FS) ReadDirAt(dir uint32, pos int64, max int) ([]DirEntry, error) {
	fs.begin()
	defer fs.end()
	d, err := fs.iget(dir)
	if err != nil {
		return nil, err
	}
	if pos < 0 {
		return nil, linux.EINVAL
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
