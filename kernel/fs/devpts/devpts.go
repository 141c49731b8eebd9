// Package devpts is the file system of pseudo-terminal slaves, mounted
// on /dev/pts: opening its ptmx node (or /dev/ptmx, character device 5:2)
// makes a new pair and puts the slave here as /dev/pts/N (character
// device 136:N) until the master closes; the index is free for a new pair
// once both sides are closed. The pairs themselves are package tty's.
//
// There is one instance: every mount of devpts shows the same slaves, as
// Linux's did before 4.7 without "newinstance" (each of Linux's mounts is
// now its own instance, and /dev/ptmx opens the one at the "pts" next to
// it; with one /dev the difference cannot be seen). Mount options mode=,
// uid=, gid= and ptmxmode= are honoured; newinstance and max= are
// accepted.
package devpts

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// Device numbers (Documentation/admin-guide/devices.txt).
const (
	SlaveMajor = tty.SlaveMajor // /dev/pts/N
	PTMX       = 5<<8 | 2       // /dev/ptmx and /dev/pts/ptmx, linux.MakeDev(5, 2)
)

const (
	maxPtys = 4096 // Linux's kernel.pty.max default

	// Inode numbers as Linux's devpts gives them: slave N is N+3.
	rootIno  = 1
	ptmxIno  = 2
	slaveIno = 3

	slaveMode = 0o600      // mode= default
	dirMode   = 0o755      // the root directory's
	ptmxMode  = 0          // ptmxmode= default
	anyID     = ^uint32(0) // no uid= or gid= option: slaves get the opener's
)

// Options configure the instance.
type Options struct {
	Dev     uint64           // st_dev of the file system
	Signals tty.Signaller    // delivers the terminals' signals
	Clock   func() time.Time // nil means time.Now
}

// FS is the devpts instance.
type FS struct {
	o    Options
	root *root
	ptmx *node

	mu     sync.Mutex
	slaves map[int]*node // the /dev/pts/N nodes, while their master is open; protected by mu
	used   map[int]bool  // indices of pairs not yet released; protected by mu
	mode   uint32        // new slaves' permission bits (mode=); protected by mu
	uid    uint32        // new slaves' owner (uid=), anyID for the opener; protected by mu
	gid    uint32        // new slaves' group (gid=), anyID for the opener's; protected by mu
}

// New returns an empty devpts.
func New(o Options) *FS {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	fs := &FS{o: o, slaves: map[int]*node{}, used: map[int]bool{}, mode: slaveMode, uid: anyID, gid: anyID}
	fs.root = &root{node: fs.newNode(rootIno, linux.S_IFDIR|dirMode, 0, vfs.Owner{})}
	fs.ptmx = fs.newNode(ptmxIno, linux.S_IFCHR|ptmxMode, PTMX, vfs.Owner{})
	fs.ptmx.open = func(c *vfs.Ctx, _ uint32) (vfs.File, error) { return fs.OpenMaster(c) }
	return fs
}

// Root returns the root directory, to mount on /dev/pts.
func (fs *FS) Root() vfs.Inode { return fs.root }

// SetOptions applies mount(2)'s option string: mode=, ptmxmode= (octal),
// uid=, gid= (decimal); newinstance and max= are accepted; others fail
// with EINVAL.
func (fs *FS) SetOptions(data string) error {
	fs.mu.Lock()
	mode, uid, gid, pmode := fs.mode, fs.uid, fs.gid, uint32(0)
	fs.mu.Unlock()
	setPmode := false
	for _, o := range strings.Split(data, ",") {
		if o == "" {
			continue
		}
		key, val, _ := strings.Cut(o, "=")
		switch key {
		case "mode", "ptmxmode":
			n, err := strconv.ParseUint(val, 8, 32)
			if err != nil || n > 0o7777 {
				return linux.EINVAL
			}
			if key == "mode" {
				mode = uint32(n)
			} else {
				pmode, setPmode = uint32(n), true
			}
		case "uid", "gid":
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil || uint32(n) == anyID {
				return linux.EINVAL
			}
			if key == "uid" {
				uid = uint32(n)
			} else {
				gid = uint32(n)
			}
		case "max":
			if _, err := strconv.ParseUint(val, 10, 32); err != nil {
				return linux.EINVAL
			}
		case "newinstance":
		default:
			return linux.EINVAL
		}
	}
	fs.mu.Lock()
	fs.mode, fs.uid, fs.gid = mode, uid, gid
	fs.mu.Unlock()
	if setPmode {
		fs.ptmx.mu.Lock()
		fs.ptmx.Mode = linux.S_IFCHR | pmode
		fs.ptmx.mu.Unlock()
	}
	return nil
}

// OpenMaster makes a new pair and returns its master; the slave appears
// as /dev/pts/N, owned by the caller. ENOSPC when every index is taken.
func (fs *FS) OpenMaster(c *vfs.Ctx) (vfs.File, error) {
	owner := vfs.Owner{}
	if c != nil {
		owner = vfs.Owner{UID: c.Cred.EUID, GID: c.Cred.EGID}
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	index := -1
	for i := range maxPtys {
		if !fs.used[i] {
			index = i
			break
		}
	}
	if index < 0 {
		return nil, linux.ENOSPC
	}
	if fs.uid != anyID {
		owner.UID = fs.uid
	}
	if fs.gid != anyID {
		owner.GID = fs.gid
	}
	fs.used[index] = true
	p := tty.NewPty(index, fs.o.Signals, func() { fs.release(index) })
	n := fs.newNode(uint64(index)+slaveIno, linux.S_IFCHR|fs.mode, linux.MakeDev(SlaveMajor, uint32(index)), owner)
	n.open = func(*vfs.Ctx, uint32) (vfs.File, error) { return p.OpenSlave() }
	n.pty = p
	fs.slaves[index] = n
	return &master{MasterFile: p.MasterFile(), fs: fs}, nil
}

// master is an open master: its close also takes the slave's node away.
type master struct {
	*tty.MasterFile
	fs *FS
}

func (m *master) Release() {
	m.fs.mu.Lock()
	delete(m.fs.slaves, m.P.Index)
	m.fs.mu.Unlock()
	m.MasterFile.Release()
}

// release frees a pair's index once both sides are closed.
func (fs *FS) release(index int) {
	fs.mu.Lock()
	delete(fs.used, index)
	fs.mu.Unlock()
}

// Pairs returns how many pairs are not yet released (for tests and
// /proc).
func (fs *FS) Pairs() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.used)
}

// MasterOf returns the pair behind an open master of this package.
func MasterOf(f *vfs.OpenFile) (*tty.Pty, bool) {
	m, ok := f.Impl().(*master)
	if !ok {
		return nil, false
	}
	return m.P, true
}

// OpenPeer opens the slave of open master f (TIOCGPTPEER) as an open
// file of the slave's node; flags are the access mode and status flags.
func OpenPeer(f *vfs.OpenFile, flags uint32) (*vfs.OpenFile, error) {
	m, ok := f.Impl().(*master)
	if !ok {
		return nil, linux.ENOTTY
	}
	return m.fs.openPeer(m.P, flags)
}

func (fs *FS) openPeer(p *tty.Pty, flags uint32) (*vfs.OpenFile, error) {
	fs.mu.Lock()
	n := fs.slaves[p.Index]
	fs.mu.Unlock()
	if n == nil || n.pty != p {
		return nil, linux.EIO
	}
	f, err := p.OpenSlave()
	if err != nil {
		return nil, err
	}
	return vfs.NewFile(n, f, flags), nil
}

// node is every devpts inode.
type node struct {
	fs   *FS
	ino  uint64
	rdev uint64
	open func(c *vfs.Ctx, flags uint32) (vfs.File, error)
	pty  *tty.Pty // a slave's pair

	mu       sync.Mutex
	vfs.Meta // protected by mu
}

func (fs *FS) now() linux.Timespec {
	t := fs.o.Clock()
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

func (fs *FS) newNode(ino uint64, mode uint32, rdev uint64, owner vfs.Owner) *node {
	now := fs.now()
	return &node{fs: fs, ino: ino, rdev: rdev,
		Meta: vfs.Meta{Mode: mode, UID: owner.UID, GID: owner.GID, Atime: now, Mtime: now, Ctime: now}}
}

func (n *node) Attr() vfs.Attr {
	n.mu.Lock()
	defer n.mu.Unlock()
	return vfs.Attr{Dev: n.fs.o.Dev, Ino: n.ino, Mode: n.Mode, Nlink: 1, UID: n.UID, GID: n.GID,
		Rdev: n.rdev, Blksize: 1024, Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime}
}

func (n *node) SetAttr(s *vfs.SetAttr) error {
	if s.Mask&vfs.SetSize != 0 {
		return linux.EINVAL
	}
	now := n.fs.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.Apply(s, now)
	return nil
}

// OpenFor opens the ptmx node (a new pair) or a slave.
func (n *node) OpenFor(c *vfs.Ctx, flags uint32) (vfs.File, error) {
	if n.open == nil {
		return nil, linux.ENXIO
	}
	return n.open(c, flags)
}

// Open is OpenFor with no caller (the kernel's own opens).
func (n *node) Open(flags uint32) (vfs.File, error) { return n.OpenFor(nil, flags) }

// root is the directory: ptmx and the slaves of open masters.
type root struct{ *node }

// Attr counts the directory's links.
func (r *root) Attr() vfs.Attr {
	a := r.node.Attr()
	a.Nlink = 2
	return a
}

// Volatile: slaves come and go without the VFS being told.
func (r *root) Volatile() {}

func (r *root) Lookup(name string) (vfs.Inode, error) {
	if name == "ptmx" {
		return r.fs.ptmx, nil
	}
	i, err := strconv.Atoi(name)
	if err != nil || i < 0 || strconv.Itoa(i) != name {
		return nil, linux.ENOENT
	}
	r.fs.mu.Lock()
	defer r.fs.mu.Unlock()
	if n := r.fs.slaves[i]; n != nil {
		return n, nil
	}
	return nil, linux.ENOENT
}

// ReadDir lists ptmx, then the slaves by index; a slave's position is
// its index plus one, so positions survive pairs coming and going.
func (r *root) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	if pos <= 0 {
		if !emit(vfs.DirEntry{Name: "ptmx", Ino: ptmxIno, Type: linux.DT_CHR, Next: 1}) {
			return nil
		}
		pos = 1
	}
	r.fs.mu.Lock()
	idx := make([]int, 0, len(r.fs.slaves))
	for i := range r.fs.slaves {
		if int64(i)+1 >= pos {
			idx = append(idx, i)
		}
	}
	r.fs.mu.Unlock()
	sort.Ints(idx)
	for _, i := range idx {
		if !emit(vfs.DirEntry{Name: strconv.Itoa(i), Ino: uint64(i) + slaveIno, Type: linux.DT_CHR, Next: int64(i) + 2}) {
			break
		}
	}
	return nil
}

func (r *root) Create(string, uint32, uint64, vfs.Owner) (vfs.Inode, error) { return nil, linux.EACCES }
func (r *root) Symlink(string, string, vfs.Owner) (vfs.Inode, error)        { return nil, linux.EACCES }
func (r *root) Link(string, vfs.Inode) error                                { return linux.EPERM }
func (r *root) Unlink(string) error                                         { return linux.EPERM }
func (r *root) Rmdir(string) error                                          { return linux.EPERM }
func (r *root) Rename(string, vfs.Dir, string, uint32) error                { return linux.EPERM }

// StatFS reports devpts's magic number and no blocks.
func (r *root) StatFS() vfs.StatFS {
	return vfs.StatFS{Type: vfs.DevptsMagic, Bsize: 4096, Namelen: 255}
}
