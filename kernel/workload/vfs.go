// Package workload is a kernel-resident benchmark for the high-level
// language tax and the GC-headroom experiment: an in-memory file-system
// name space of vnode-like objects (about 320 bytes each, like the Biscuit
// paper's vnodes) and a fixed mix of kernel-style operations on it — path
// lookup, stat, open/read/close, create and unlink — run by one goroutine
// per CPU. It allocates like a kernel does (short-lived file objects and
// path buffers, long-lived vnodes), stores pointers into the heap (write
// barriers), indexes slices and maps (bounds checks) and calls many small
// functions (prologues). Everything is deterministic given a seed, so
// runs under QEMU -icount repeat.
package workload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Vnode is one file or directory. Its size (about 320 bytes with its name
// and map share) matches the objects of the original experiment.
type Vnode struct {
	Ino      uint64
	Name     string
	Mode     uint32
	Nlink    uint32
	Size     int64
	Atime    int64
	Mtime    int64
	Ctime    int64
	Parent   *Vnode
	Children map[string]*Vnode // directories only
	Data     []byte            // small inline contents of files
	mu       sync.Mutex
	attrs    [14]uint64 // the rest of an inode: block pointers, uid, gid, ...
}

const (
	modeDir  = 0o040755
	modeFile = 0o100644
	fanout   = 64 // top-level directories, each with its own lock
)

// FS is the name space.
type FS struct {
	root    *Vnode
	dirs    [fanout]*Vnode
	nextIno atomic.Uint64
	files   int
}

var errNotFound = errors.New("no such file or directory")

// NewFS builds a tree holding files vnodes: fanout directories, each with
// subdirectories of 256 files.
func NewFS(files int) *FS {
	fs := &FS{files: files}
	fs.root = fs.newVnode("/", modeDir, nil)
	for d := range fs.dirs {
		fs.dirs[d] = fs.newVnode("d"+strconv.Itoa(d), modeDir, fs.root)
		fs.root.Children[fs.dirs[d].Name] = fs.dirs[d]
	}
	for i := 0; i < files; i++ {
		d, s, f := fs.place(i)
		sub := d.Children[s]
		if sub == nil {
			sub = fs.newVnode(s, modeDir, d)
			d.Children[s] = sub
		}
		v := fs.newVnode(f, modeFile, sub)
		v.Data = []byte(f)
		v.Size = int64(len(v.Data))
		sub.Children[f] = v
	}
	return fs
}

func (fs *FS) newVnode(name string, mode uint32, parent *Vnode) *Vnode {
	v := &Vnode{Ino: fs.nextIno.Add(1), Name: name, Mode: mode, Nlink: 1, Parent: parent}
	if mode == modeDir {
		v.Children = make(map[string]*Vnode)
	}
	return v
}

// place names the directory, subdirectory and file of file number i.
func (fs *FS) place(i int) (*Vnode, string, string) {
	return fs.dirs[i%fanout], "s" + strconv.Itoa((i/fanout)/256), "f" + strconv.Itoa(i)
}

// Path returns the path of file number i.
func (fs *FS) Path(i int) string {
	d, s, f := fs.place(i)
	return "/" + d.Name + "/" + s + "/" + f
}

// Lookup walks a path, taking each top-level directory's lock.
func (fs *FS) Lookup(path string) (*Vnode, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := fs.root
	var top *Vnode
	for i, p := range parts {
		if i == 1 {
			top = cur
			top.mu.Lock()
		}
		next, ok := cur.Children[p]
		if !ok {
			if top != nil {
				top.mu.Unlock()
			}
			return nil, fmt.Errorf("%s: %w", path, errNotFound)
		}
		cur = next
	}
	if top != nil {
		top.mu.Unlock()
	}
	return cur, nil
}

// Stat is what stat(2) copies out.
type Stat struct {
	Ino                 uint64
	Mode, Nlink         uint32
	Size                int64
	Atime, Mtime, Ctime int64
}

func (v *Vnode) stat() Stat {
	return Stat{Ino: v.Ino, Mode: v.Mode, Nlink: v.Nlink, Size: v.Size, Atime: v.Atime, Mtime: v.Mtime, Ctime: v.Ctime}
}

// File is an open file.
type File struct {
	v   *Vnode
	off int64
}

func (f *File) read(p []byte) int {
	n := copy(p, f.v.Data[min(f.off, int64(len(f.v.Data))):])
	f.off += int64(n)
	return n
}

// create makes a file in the subdirectory of file number i.
func (fs *FS) create(i int, name string, now int64) *Vnode {
	d, s, _ := fs.place(i)
	d.mu.Lock()
	defer d.mu.Unlock()
	sub := d.Children[s]
	v := fs.newVnode(name, modeFile, sub)
	v.Ctime, v.Mtime = now, now
	v.Data = append(v.Data[:0], name...)
	sub.Children[name] = v
	return v
}

func (fs *FS) unlink(i int, name string) bool {
	d, s, _ := fs.place(i)
	d.mu.Lock()
	defer d.mu.Unlock()
	sub := d.Children[s]
	if _, ok := sub.Children[name]; !ok {
		return false
	}
	delete(sub.Children, name)
	return true
}

// Result counts what Run did.
type Result struct {
	Ops, Lookups, Reads, Creates, Unlinks, Misses uint64
	Bytes                                         uint64
}

// Run performs ops operations spread over workers goroutines and returns
// the totals. Each worker uses its own deterministic random sequence.
func (fs *FS) Run(workers, ops int, seed uint64) Result {
	var wg sync.WaitGroup
	results := make([]Result, workers)
	per := ops / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = fs.worker(w, per, seed+uint64(w)*0x9e3779b97f4a7c15)
		}()
	}
	wg.Wait()
	var total Result
	for _, r := range results {
		total.Ops += r.Ops
		total.Lookups += r.Lookups
		total.Reads += r.Reads
		total.Creates += r.Creates
		total.Unlinks += r.Unlinks
		total.Misses += r.Misses
		total.Bytes += r.Bytes
	}
	return total
}

// request is the per-operation state a kernel allocates for a system call
// (decoded arguments, a path buffer, an I/O vector); a few stay reachable
// for a while, as in-flight requests do.
type request struct {
	op    uint64
	path  string
	vnode *Vnode
	iov   [4][]byte
	buf   [160]byte
}

func (fs *FS) worker(w, ops int, seed uint64) Result {
	var r Result
	var inflight [8]*request
	x := seed | 1
	rnd := func() uint64 { // xorshift64
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	var temps []string
	for op := 0; op < ops; op++ {
		i := int(rnd() % uint64(max(fs.files, 1)))
		req := &request{op: uint64(op), path: fs.Path(i)}
		inflight[op%len(inflight)] = req
		switch k := rnd() % 16; {
		case k < 10: // lookup + stat
			v, err := fs.Lookup(req.path)
			r.Lookups++
			if err != nil {
				r.Misses++
				continue
			}
			req.vnode = v
			st := v.stat()
			r.Bytes += uint64(st.Size)
		case k < 14: // open, read, close
			v, err := fs.Lookup(req.path)
			r.Lookups++
			if err != nil {
				r.Misses++
				continue
			}
			req.vnode = v
			f := &File{v: v}
			req.iov[0] = req.buf[:64]
			r.Bytes += uint64(f.read(req.iov[0]))
			r.Reads++
		default: // create a temporary file, or unlink the oldest one
			if len(temps) < 32 && k == 14 {
				name := "t" + strconv.Itoa(w) + "." + strconv.Itoa(op)
				fs.create(i, name, int64(op))
				temps = append(temps, name+"@"+strconv.Itoa(i))
				r.Creates++
			} else if len(temps) > 0 {
				name, at, _ := strings.Cut(temps[0], "@")
				n, _ := strconv.Atoi(at)
				if fs.unlink(n, name) {
					r.Unlinks++
				}
				temps = temps[1:]
			}
		}
		r.Ops++
	}
	for _, t := range temps {
		name, at, _ := strings.Cut(t, "@")
		n, _ := strconv.Atoi(at)
		fs.unlink(n, name)
	}
	return r
}
