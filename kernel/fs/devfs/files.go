package devfs

import (
	"io"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// The memory devices behave as drivers/char/mem.c and
// drivers/char/random.c make them: every lseek succeeds and returns 0.

// nullFile is /dev/null: reads end at once, writes vanish.
type nullFile struct{ vfs.SeekStream }

func (nullFile) Read(vfs.Blocking, []byte, int64) (int, error)        { return 0, nil }
func (nullFile) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) { return len(p), nil }
func (nullFile) Release()                                             {}

// zeroFile is /dev/zero: reads give zeros, writes vanish.
type zeroFile struct{ vfs.SeekStream }

func (zeroFile) Read(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	clear(p)
	return len(p), nil
}
func (zeroFile) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) { return len(p), nil }
func (zeroFile) Release()                                             {}

// fullFile is /dev/full: reads give zeros, writes fail with ENOSPC.
type fullFile struct{ vfs.SeekStream }

func (fullFile) Read(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	clear(p)
	return len(p), nil
}
func (fullFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.ENOSPC }
func (fullFile) Release()                                       {}

// randomFile is /dev/random and /dev/urandom: reads come from the
// configured source; writes are accepted (Linux mixes them into its pool).
type randomFile struct {
	vfs.SeekStream
	r io.Reader
}

func (fs *FS) openRandom(*vfs.Ctx, uint32) (vfs.File, error) { return randomFile{r: fs.o.Random}, nil }

func (f randomFile) Read(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	if _, err := io.ReadFull(f.r, p); err != nil {
		return 0, linux.EIO
	}
	return len(p), nil
}
func (randomFile) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) { return len(p), nil }
func (randomFile) Release()                                             {}

// openTTY opens /dev/tty: the caller's controlling terminal.
func (fs *FS) openTTY(c *vfs.Ctx, flags uint32) (vfs.File, error) {
	if fs.o.ControllingTerminal == nil || c == nil || c.PID == 0 {
		return nil, linux.ENXIO
	}
	return fs.o.ControllingTerminal(c.PID, flags)
}

// openConsole opens /dev/console: the console terminal.
func (fs *FS) openConsole(*vfs.Ctx, uint32) (vfs.File, error) {
	if fs.o.Console == nil {
		return nil, linux.ENXIO
	}
	return tty.NewFile(fs.o.Console), nil
}

// openPTMX opens /dev/ptmx: a new pseudo-terminal.
func (fs *FS) openPTMX(c *vfs.Ctx, flags uint32) (vfs.File, error) {
	if fs.o.PTMX == nil {
		return nil, linux.ENXIO
	}
	return fs.o.PTMX(c, flags)
}

// dir is a devfs directory: a fixed list of names.
type dir struct {
	*node
	names []string
	nodes []inode
	index map[string]int
}

// inode is a devfs node or directory.
type inode interface {
	vfs.Inode
	base() *node
}

func (d *dir) add(name string, n inode) {
	d.index[name] = len(d.names)
	d.names = append(d.names, name)
	d.nodes = append(d.nodes, n)
}

func (d *dir) get(name string) inode { return d.nodes[d.index[name]] }

// Attr reports the directory's size as tmpfs counts it.
func (d *dir) Attr() vfs.Attr {
	a := d.node.Attr()
	a.Nlink = 2
	for _, n := range d.nodes {
		if _, ok := n.(*dir); ok {
			a.Nlink++
		}
	}
	a.Size = int64(2+len(d.names)) * 20
	return a
}

func (d *dir) Lookup(name string) (vfs.Inode, error) {
	i, ok := d.index[name]
	if !ok {
		return nil, linux.ENOENT
	}
	return d.nodes[i], nil
}

func (d *dir) Create(string, uint32, uint64, vfs.Owner) (vfs.Inode, error) { return nil, linux.EPERM }
func (d *dir) Symlink(string, string, vfs.Owner) (vfs.Inode, error)        { return nil, linux.EPERM }
func (d *dir) Link(string, vfs.Inode) error                                { return linux.EPERM }
func (d *dir) Unlink(string) error                                         { return linux.EPERM }
func (d *dir) Rmdir(string) error                                          { return linux.EPERM }
func (d *dir) Rename(string, vfs.Dir, string, uint32) error                { return linux.EPERM }

// ReadDir lists the names in the order New made them.
func (d *dir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	for i := max(pos, 0); i < int64(len(d.names)); i++ {
		a := d.nodes[i].Attr()
		if !emit(vfs.DirEntry{Name: d.names[i], Ino: a.Ino, Type: linux.DirentType(a.Mode), Next: i + 1}) {
			break
		}
	}
	return nil
}

// rootDir is /dev: the fixed names, then the block devices there are
// now. Volatile, so the VFS asks again each time instead of trusting
// a cached name or absence.
type rootDir struct {
	*dir
	fs *FS
}

func (r *rootDir) Volatile() {}

func (r *rootDir) Lookup(name string) (vfs.Inode, error) {
	if i, ok := r.index[name]; ok {
		return r.nodes[i], nil
	}
	if n, ok := r.fs.blockLookup(name); ok {
		return n, nil
	}
	return nil, linux.ENOENT
}

func (r *rootDir) Attr() vfs.Attr {
	a := r.dir.Attr()
	list, _ := r.fs.blockList()
	a.Size += int64(len(list)) * 20
	return a
}

// ReadDir lists the fixed names, then the block devices.
func (r *rootDir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	fixed := int64(len(r.names))
	if pos < fixed {
		stop := false
		r.dir.ReadDir(pos, func(e vfs.DirEntry) bool {
			stop = !emit(e)
			return !stop
		})
		if stop {
			return nil
		}
		pos = fixed
	}
	list, inodes := r.fs.blockList()
	for i := pos - fixed; i < int64(len(list)); i++ {
		if !emit(vfs.DirEntry{Name: list[i].Name, Ino: inodes[i].ino, Type: linux.DirentType(linux.S_IFBLK), Next: fixed + i + 1}) {
			break
		}
	}
	return nil
}
