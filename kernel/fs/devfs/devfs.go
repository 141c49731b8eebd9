// Package devfs is the file system mounted on /dev: the memory devices
// (null, zero, full, random, urandom), the terminals (tty, console, ptmx), the
// usual symlinks into /proc/self/fd and empty directories to mount shm
// and pts on. Device numbers are Linux's (Documentation/admin-guide/
// devices.txt), so that programs checking st_rdev see what they expect,
// and Register puts the devices in the VFS's device table, so a node
// made by mknod or shipped in the initramfs opens the same device.
//
// Besides the block devices (Options.Blocks, which change with
// BLKRRPART), the set of names is fixed: creating, linking, renaming or removing in
// /dev fails with EPERM. Attributes (chmod, chown, utimensat) can change.
package devfs

import (
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// Options configure /dev.
type Options struct {
	Dev     uint64           // st_dev of the file system (Linux's devtmpfs is 0:5)
	Random  io.Reader        // source for random and urandom; nil means a ChaCha8 stream seeded by the runtime
	Console *tty.TTY         // behind console; nil makes opening it fail with ENXIO
	Clock   func() time.Time // nil means time.Now
	// ControllingTerminal opens /dev/tty for process pid: its
	// controlling terminal, ENXIO when it has none. Nil: ENXIO.
	ControllingTerminal func(pid int, flags uint32) (vfs.File, error)
	// PTMX opens /dev/ptmx: a new pseudo-terminal master (package
	// devpts). Nil: ENXIO.
	PTMX   func(c *vfs.Ctx, flags uint32) (vfs.File, error)
	Blocks *blk.Disks // the disks and partitions listed; nil for none
	// Cache is the page cache block files go through; nil: none, every
	// access goes to the disk.
	Cache *pagecache.Cache
}

// Device numbers, as Linux assigns them, encoded like linux.MakeDev
// (major<<8 | minor for these small numbers).
const (
	Null    = 1<<8 | 3
	Zero    = 1<<8 | 5
	Full    = 1<<8 | 7
	Random  = 1<<8 | 8
	URandom = 1<<8 | 9
	TTY     = 5<<8 | 0
	Console = 5<<8 | 1
	PTMX    = 5<<8 | 2
)

// FS is one /dev.
type FS struct {
	o       Options
	nextIno atomic.Uint64
	root    *dir
	top     *rootDir
	devices []*node // the device nodes, for Register
	blocks  blockNodes
}

// New returns a /dev with the standard devices.
func New(o Options) *FS {
	if o.Random == nil {
		o.Random = newChaCha()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	fs := &FS{o: o}
	fs.root = &dir{node: fs.newNode(linux.S_IFDIR|0o755, 0), index: map[string]int{}}
	for _, d := range []struct {
		name string
		mode uint32
		rdev uint64
		open func(c *vfs.Ctx, flags uint32) (vfs.File, error)
	}{
		{"null", 0o666, Null, func(*vfs.Ctx, uint32) (vfs.File, error) { return nullFile{}, nil }},
		{"zero", 0o666, Zero, func(*vfs.Ctx, uint32) (vfs.File, error) { return zeroFile{}, nil }},
		{"full", 0o666, Full, func(*vfs.Ctx, uint32) (vfs.File, error) { return fullFile{}, nil }},
		{"random", 0o666, Random, fs.openRandom},
		{"urandom", 0o666, URandom, fs.openRandom},
		{"tty", 0o666, TTY, fs.openTTY},
		{"console", 0o600, Console, fs.openConsole},
		{"ptmx", 0o666, PTMX, fs.openPTMX},
	} {
		n := fs.newNode(linux.S_IFCHR|d.mode, d.rdev)
		n.open = d.open
		fs.devices = append(fs.devices, n)
		fs.root.add(d.name, n)
	}
	for _, l := range [][2]string{
		{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
	} {
		n := fs.newNode(linux.S_IFLNK|0o777, 0)
		n.target = l[1]
		fs.root.add(l[0], n)
	}
	for _, name := range []string{"pts", "shm"} {
		fs.root.add(name, &dir{node: fs.newNode(linux.S_IFDIR|0o755, 0), index: map[string]int{}})
	}
	fs.root.get("shm").base().Mode = linux.S_IFDIR | 0o1777
	fs.top = &rootDir{dir: fs.root, fs: fs}
	return fs
}

// chacha is the default random source: a ChaCha8 generator seeded from
// the runtime's random state, which needs no system call at read time
// (crypto/rand would ask the machine layer for getrandom). The kernel
// should inject a hardware source (RDRAND, RDSEED) for real entropy.
type chacha struct {
	mu sync.Mutex
	c  *rand.ChaCha8 // protected by mu
}

func newChaCha() *chacha {
	var seed [32]byte
	for i := 0; i < len(seed); i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			seed[i+j] = byte(v >> (8 * j))
		}
	}
	return &chacha{c: rand.NewChaCha8(seed)}
}

func (r *chacha) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.Read(p)
}

// Root returns the root directory, to mount on /dev.
func (fs *FS) Root() vfs.Inode { return fs.top }

// Register enters the devices in v's device table.
func (fs *FS) Register(v *vfs.VFS) {
	for _, n := range fs.devices {
		v.RegisterDevice(n.Mode&linux.S_IFMT, n.rdev, n)
	}
	fs.registerBlocks(v)
}

// node is every devfs inode: attributes, and what it is.
type node struct {
	fs       *FS
	ino      uint64
	rdev     uint64
	mu       sync.Mutex
	vfs.Meta // protected by mu
	open     func(c *vfs.Ctx, flags uint32) (vfs.File, error)
	target   string // a symlink's
}

func (fs *FS) now() linux.Timespec {
	t := fs.o.Clock()
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

func (fs *FS) newNode(mode uint32, rdev uint64) *node {
	now := fs.now()
	return &node{fs: fs, ino: fs.nextIno.Add(1), rdev: rdev,
		Meta: vfs.Meta{Mode: mode, Atime: now, Mtime: now, Ctime: now}}
}

func (n *node) base() *node { return n }

func (n *node) Attr() vfs.Attr {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := vfs.Attr{
		Dev: n.fs.o.Dev, Ino: n.ino, Mode: n.Mode, Nlink: 1, UID: n.UID, GID: n.GID, Rdev: n.rdev,
		Blksize: 4096, Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime,
	}
	if n.Mode&linux.S_IFMT == linux.S_IFLNK {
		a.Size = int64(len(n.target))
	}
	return a
}

func (n *node) SetAttr(s *vfs.SetAttr) error {
	if s.Mask&vfs.SetSize != 0 {
		if n.Mode&linux.S_IFMT == linux.S_IFDIR {
			return linux.EISDIR
		}
		return linux.EINVAL
	}
	now := n.fs.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.Apply(s, now)
	return nil
}

// OpenFor opens a device node for the caller c.
func (n *node) OpenFor(c *vfs.Ctx, flags uint32) (vfs.File, error) {
	if n.open == nil {
		return nil, linux.ENXIO
	}
	return n.open(c, flags)
}

// Open opens a device node for the kernel (a node made by mknod, found
// in the device table).
func (n *node) Open(flags uint32) (vfs.File, error) { return n.OpenFor(&vfs.Ctx{}, flags) }

// Readlink returns a symlink's target.
func (n *node) Readlink() (string, error) { return n.target, nil }
