package ext4

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// TestRandomSpace runs random writes (with holes), fallocates (growing
// the size or keeping it), hole punches, truncates (down, to the same
// size, up), page faults of shared mappings (through the page cache),
// unlinks, hard links, renames over other files, mkdirs,
// creates of many long names in them and slow symlinks on a disk small enough that many of them meet
// ENOSPC. ENOSPC is the only error allowed. Every few operations e2fsck
// must find nothing (no block marked used and owned by nothing, no
// count wrong) and every file must read as a model of it says; at the
// end, with every file gone, every block is free again. make fuzz-soak
// found blocks left behind this way (fallocate's past the end). The
// concurrent runs do the same from four goroutines at once, each with
// files and directories of its own, checked at the end.
func TestRandomSpace(t *testing.T) {
	for _, workers := range []int{1, 4} {
		for _, cached := range []bool{false, true} {
			for _, bsize := range []string{"1024", "4096"} {
				for seed := int64(1); seed <= 5; seed++ {
					name := fmt.Sprintf("workers-%d-cached-%v-%s-%d", workers, cached, bsize, seed)
					t.Run(name, func(t *testing.T) {
						randomSpace(t, workers, cached, bsize, seed)
					})
				}
			}
		}
	}
}

// randomSpace is one run of TestRandomSpace: writes through the page
// cache if cached, else straight to the disk.
func randomSpace(t *testing.T, workers int, cached bool, bsize string, seed int64) {
	dev := loadImage(t, mkfs(t, "4M", "", "-t", "ext4", "-b", bsize, "-N", "128"))
	o := Options{Clock: func() time.Time { return time.Unix(1700000000, 0) }}
	if cached {
		o.Pages = pagecache.New(&limitedFrames{}, 1<<20)
	}
	f, err := mountDev(t, dev, o)
	if err != nil {
		t.Fatal(err)
	}
	free := f.Statfs().Free
	ws := make([]*spaceWorker, workers)
	for i := range ws {
		ws[i] = &spaceWorker{
			t: t, f: f, rng: rand.New(rand.NewSource(seed*100 + int64(i))), prefix: fmt.Sprint("w", i),
			files: map[string]*spaceFile{}, dirs: map[string]uint32{}, entries: map[string][]string{},
		}
	}
	check := func(when string) {
		fsck(t, dev)
		for _, w := range ws {
			for name, fl := range w.files {
				if ino, err := f.Lookup(RootIno, name); err != nil || ino != fl.ino {
					t.Fatalf("%s: %s is inode %d (%v), want %d", when, name, ino, err, fl.ino)
				}
				if got := readAll(t, f, fl.ino); fl.data != nil && !bytes.Equal(got, fl.data) {
					t.Fatalf("%s: %s reads %d bytes unlike its model's %d", when, name, len(got), len(fl.data))
				}
			}
		}
	}
	if workers == 1 {
		for op := 0; op < 300 && !ws[0].failed; op++ {
			ws[0].step(op)
			if op%25 == 24 {
				check(fmt.Sprint("op ", op))
			}
		}
	} else {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for op := 0; op < 300 && !w.failed; op++ {
					w.step(op)
				}
			}()
		}
		wg.Wait()
	}
	if t.Failed() {
		return
	}
	check("the end")
	nospc := 0
	for _, w := range ws {
		nospc += w.nospc
		w.removeAll()
	}
	if nospc == 0 {
		t.Error("no operation met ENOSPC: the test covers nothing")
	}
	fsck(t, dev)
	if got := f.Statfs().Free; got != free {
		t.Errorf("every file gone: %d blocks free, %d before", got, free)
	}
	t.Logf("%d operations met ENOSPC", nospc)
}

type spaceFile struct {
	ino  uint32
	data []byte // the contents, or nil once unknown
}

// spaceWorker makes TestRandomSpace's operations on names of its own
// (its prefix), keeping a model of its files.
type spaceWorker struct {
	t      *testing.T
	f      *FS
	rng    *rand.Rand
	prefix string
	files  map[string]*spaceFile
	// Directories with many long names (so they grow blocks and, past
	// a block, an htree), and slow symlinks (a block each).
	dirs    map[string]uint32
	entries map[string][]string
	links   []string
	nospc   int
	failed  bool
	// also are errors allowed besides ENOSPC (counted in others).
	also   []error
	others int
	// resync says an operation failed with one of also, and may have
	// been made in part: the names are looked up again.
	resync bool
}

// lookAgain makes the model's names those the file system has, after
// an operation that failed with an error that may leave it made in
// part; the contents of every file are unknown from then on.
func (w *spaceWorker) lookAgain() {
	w.resync = false
	for i := 0; i < 8; i++ {
		n := fmt.Sprint(w.prefix, "f", i)
		ino, err := w.f.Lookup(RootIno, n)
		switch {
		case err != nil:
			delete(w.files, n)
		case w.files[n] == nil || w.files[n].ino != ino:
			w.files[n] = &spaceFile{ino: ino}
		default:
			w.files[n].data = nil
		}
	}
	for i := 0; i < 3; i++ {
		d := fmt.Sprint(w.prefix, "d", i)
		if ino, err := w.f.Lookup(RootIno, d); err == nil {
			w.dirs[d] = ino
		} else {
			delete(w.dirs, d)
		}
	}
}

var (
	spaceFill = bytes.Repeat([]byte("0123456789abcdef"), 1<<12) // 64 KiB
	spaceLong = string(bytes.Repeat([]byte("n"), 120))
)

// allowed reports whether err is nil; ENOSPC is counted, any other
// error fails the test.
func (w *spaceWorker) allowed(op string, err error) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, linux.ENOSPC):
		w.nospc++
	case slices.ContainsFunc(w.also, func(e error) bool { return errors.Is(err, e) }):
		w.others++
		w.resync = true
	default:
		w.t.Errorf("%s %s: %v", w.prefix, op, err)
		w.failed = true
	}
	return false
}

func (w *spaceWorker) names() []string {
	var out []string
	for i := 0; i < 8; i++ {
		if n := fmt.Sprint(w.prefix, "f", i); w.files[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

func grow(d []byte, size int64) []byte {
	for int64(len(d)) < size {
		d = append(d, 0)
	}
	return d
}

func (w *spaceWorker) step(op int) {
	if w.resync {
		w.lookAgain()
	}
	f, rng := w.f, w.rng
	if rng.Intn(10) == 0 {
		switch d := fmt.Sprint(w.prefix, "d", rng.Intn(3)); {
		case w.dirs[d] == 0:
			ino, err := f.Mkdir(RootIno, d, 0o755, 0, 0)
			if w.allowed("mkdir "+d, err) {
				w.dirs[d] = ino
			}
		case rng.Intn(3) == 0:
			l := fmt.Sprint(w.prefix, "l", len(w.links))
			_, err := f.Symlink(RootIno, l, spaceLong, 0, 0)
			if w.allowed("symlink "+l, err) {
				w.links = append(w.links, l)
			}
		default:
			for i := 0; i < 20; i++ {
				e := fmt.Sprintf("%s-%d-%d", spaceLong, op, i)
				_, err := f.Create(w.dirs[d], e, linux.S_IFREG|0o644, 0, 0, 0, 0)
				if !w.allowed("create in "+d, err) {
					break
				}
				w.entries[d] = append(w.entries[d], e)
			}
		}
		return
	}
	live := w.names()
	if len(live) == 0 || rng.Intn(8) == 0 {
		n := fmt.Sprint(w.prefix, "f", rng.Intn(8))
		if w.files[n] != nil {
			return
		}
		ino, err := f.Create(RootIno, n, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if w.allowed("create "+n, err) {
			w.files[n] = &spaceFile{ino: ino, data: []byte{}}
		}
		return
	}
	n := live[rng.Intn(len(live))]
	fl := w.files[n]
	bs := int64(f.blockSize)
	off := rng.Int63n(1024) * bs / 2 % (768 << 10)
	length := 1 + rng.Int63n(int64(len(spaceFill)))
	switch k := rng.Intn(10); {
	case k < 4:
		got, err := f.WriteAt(fl.ino, spaceFill[:length], off)
		w.allowed(fmt.Sprintf("write %s %d@%d", n, length, off), err)
		if got > 0 && fl.data != nil {
			fl.data = grow(fl.data, off+int64(got))
			copy(fl.data[off:], spaceFill[:got])
		}
	case k < 6:
		mode := uint32(0)
		if rng.Intn(2) == 0 {
			mode = FallocKeepSize
		}
		err := f.Fallocate(fl.ino, mode, off, length*16)
		if w.allowed(fmt.Sprintf("fallocate %s %d %d@%d", n, mode, length*16, off), err) && mode == 0 && fl.data != nil {
			fl.data = grow(fl.data, off+length*16)
		}
	case k < 7:
		err := f.Fallocate(fl.ino, FallocPunchHole|FallocKeepSize, off, length)
		if !w.allowed(fmt.Sprintf("punch %s %d@%d", n, length, off), err) {
			fl.data = nil
		} else if fl.data != nil && off < int64(len(fl.data)) {
			clear(fl.data[off:min(off+length, int64(len(fl.data)))])
		}
	case k < 9:
		var size int64
		switch rng.Intn(3) {
		case 0:
			st, _ := f.Stat(fl.ino)
			size = int64(st.Size)
		case 1:
			size = off
		default:
			size = off + length
		}
		err := f.Truncate(fl.ino, uint64(size))
		if !w.allowed(fmt.Sprintf("truncate %s %d", n, size), err) {
			fl.data = nil
		} else if fl.data != nil {
			if size < int64(len(fl.data)) {
				fl.data = fl.data[:size]
			}
			fl.data = grow(fl.data, size)
		}
	case f.pages != nil && rng.Intn(3) == 0:
		// A store through a shared mapping about to happen: the page's
		// holes get blocks (its contents stay).
		st, _ := f.Stat(fl.ino)
		if st.Size == 0 {
			return
		}
		idx := uint64(rng.Int63n(int64((st.Size + pagecache.PageSize - 1) / pagecache.PageSize)))
		pa, err := f.HoldPage(fl.ino, idx, true)
		if w.allowed(fmt.Sprintf("hold page %s %d", n, idx), err) {
			f.PutPage(fl.ino, idx, pa, true)
		}
	case rng.Intn(4) == 0:
		if w.allowed("unlink "+n, f.Unlink(RootIno, n)) {
			delete(w.files, n)
		}
	default:
		// Another name for the file, by a hard link or a rename that
		// may replace a file of that name (whose blocks go if it was
		// its last).
		to := fmt.Sprint(w.prefix, "f", rng.Intn(8))
		if to == n {
			return
		}
		if rng.Intn(2) == 0 {
			if w.files[to] == nil && w.allowed("link "+n+" "+to, f.Link(RootIno, to, fl.ino)) {
				w.files[to] = fl
			}
		} else if w.allowed("rename "+n+" "+to, f.Rename(RootIno, n, RootIno, to, 0)) && w.files[to] != fl {
			// (A rename between two names of one file does nothing.)
			w.files[to] = fl
			delete(w.files, n)
		}
	}
}

// removeAll removes every name the worker made.
func (w *spaceWorker) removeAll() {
	t, f := w.t, w.f
	for _, n := range w.names() {
		ok(t, f.Unlink(RootIno, n))
	}
	for d, ino := range w.dirs {
		for _, e := range w.entries[d] {
			ok(t, f.Unlink(ino, e))
		}
		ok(t, f.Rmdir(RootIno, d))
	}
	for _, l := range w.links {
		ok(t, f.Unlink(RootIno, l))
	}
}
