package tmpfs

import (
	"errors"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// countingPhys is Go-memory frames that count what is allocated and not
// freed, and catch a double free.
type countingPhys struct {
	mu    sync.Mutex
	pages map[uintptr]*[mm.PageSize]byte
	next  uintptr
}

func (p *countingPhys) Alloc() uintptr {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pages == nil {
		p.pages = map[uintptr]*[mm.PageSize]byte{}
		p.next = mm.PageSize
	}
	pa := p.next
	p.next += mm.PageSize
	p.pages[pa] = new([mm.PageSize]byte)
	return pa
}

func (p *countingPhys) Free(pa uintptr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pages[pa]; !ok {
		panic("tmpfs test: free of a frame not allocated")
	}
	delete(p.pages, pa)
}

func (p *countingPhys) Page(pa uintptr) *[mm.PageSize]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.pages[pa]
	if !ok {
		panic("tmpfs test: access to a frame not allocated")
	}
	return pg
}

func (p *countingPhys) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pages)
}

// newLifetimeFS is a tmpfs under a VFS, with frames that are counted.
func newLifetimeFS(t *testing.T) (*vfs.VFS, *vfs.Ctx, *countingPhys) {
	t.Helper()
	phys := &countingPhys{}
	v, err := vfs.New(New(Options{Phys: phys}).Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	return v, &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}, phys
}

func writeFile(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string, size int) {
	t.Helper()
	f, err := v.Open(c, nil, path, linux.O_WRONLY|linux.O_CREAT|linux.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	defer f.DecRef()
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i)
	}
	if n, err := f.Write(buf, nil); n != size || err != nil {
		t.Fatalf("write %s: %d, %v", path, n, err)
	}
}

func wantFrames(t *testing.T, phys *countingPhys, what string, want int) {
	t.Helper()
	if n := phys.inUse(); n != want {
		t.Errorf("%s: %d frames in use, want %d", what, n, want)
	}
}

// A file's pages go back the moment its last name and its last open file
// are gone (no garbage collection involved), whichever goes last; its
// mappings keep them after that.
func TestFileLifetimes(t *testing.T) {
	v, c, phys := newLifetimeFS(t)
	const big = 64*mm.PageSize + 100 // 65 pages

	for i := 0; i < 100; i++ {
		writeFile(t, v, c, "/small", 16)
		if err := v.Unlink(c, nil, "/small"); err != nil {
			t.Fatal(err)
		}
	}
	wantFrames(t, phys, "100 small files written and unlinked", 0)

	writeFile(t, v, c, "/big", big)
	wantFrames(t, phys, "a big file", 65)
	v.Unlink(c, nil, "/big")
	wantFrames(t, phys, "the big file unlinked", 0)

	// rename over an existing file frees the file replaced.
	writeFile(t, v, c, "/old", big)
	writeFile(t, v, c, "/new", 10)
	if err := v.Rename(c, nil, "/new", nil, "/old", 0); err != nil {
		t.Fatal(err)
	}
	wantFrames(t, phys, "renamed over the big file", 1)
	v.Unlink(c, nil, "/old")

	// Renamed over while open: the replaced file lives until its close.
	writeFile(t, v, c, "/victim", big)
	victim, err := v.Open(c, nil, "/victim", linux.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, v, c, "/winner", 10)
	v.Rename(c, nil, "/winner", nil, "/victim", 0)
	wantFrames(t, phys, "renamed over an open file", 66)
	if n, err := victim.Pread(make([]byte, 100), 64*mm.PageSize, nil); n != 100 || err != nil {
		t.Errorf("reading the replaced open file: %d, %v", n, err)
	}
	victim.DecRef()
	wantFrames(t, phys, "the replaced file closed", 1)
	v.Unlink(c, nil, "/victim")
	wantFrames(t, phys, "all unlinked", 0)

	// A tree removed bottom-up, as rm -rf does.
	for _, d := range []string{"/t", "/t/a", "/t/a/b", "/t/c"} {
		if err := v.Mkdir(c, nil, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/t/f", "/t/a/f", "/t/a/b/f", "/t/a/b/g", "/t/c/f"} {
		writeFile(t, v, c, f, 2*mm.PageSize)
	}
	wantFrames(t, phys, "a tree of 5 files", 10)
	for _, f := range []string{"/t/f", "/t/a/b/f", "/t/a/b/g", "/t/a/f", "/t/c/f"} {
		v.Unlink(c, nil, f)
	}
	for _, d := range []string{"/t/a/b", "/t/a", "/t/c", "/t"} {
		if err := v.Rmdir(c, nil, d); err != nil {
			t.Fatal(err)
		}
	}
	wantFrames(t, phys, "the tree removed", 0)

	// Unlinked while open (twice, and O_PATH): usable until the last close.
	writeFile(t, v, c, "/open", big)
	f, err := v.Open(c, nil, "/open", linux.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Open(c, nil, "/open", linux.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.IncRef() // a dup
	v.Unlink(c, nil, "/open")
	wantFrames(t, phys, "unlinked while open", 65)
	buf := make([]byte, 4)
	if n, err := f.Pread(buf, 64*mm.PageSize, nil); n != 4 || err != nil || buf[3] != 3 {
		t.Errorf("reading an unlinked open file: %d, %v, %v", n, err, buf)
	}
	if n, err := f.Pwrite(buf, 2*big, nil); n != 4 || err != nil {
		t.Errorf("writing an unlinked open file: %d, %v", n, err)
	}
	f.DecRef()
	f.DecRef()
	wantFrames(t, phys, "closed, but an O_PATH open left", 66)
	p.DecRef()
	wantFrames(t, phys, "unlinked and closed", 0)

	// Closed first, then unlinked; a second name keeps it.
	writeFile(t, v, c, "/one", big)
	if err := v.Link(c, nil, "/one", nil, "/two", 0); err != nil {
		t.Fatal(err)
	}
	v.Unlink(c, nil, "/one")
	wantFrames(t, phys, "one of two names unlinked", 65)
	v.Unlink(c, nil, "/two")
	wantFrames(t, phys, "both names unlinked", 0)

	// Mapped, then unlinked and closed: the mapping keeps the pages
	// (the address space's reference, which mm drops at munmap).
	writeFile(t, v, c, "/mapped", big)
	f, _ = v.Open(c, nil, "/mapped", linux.O_RDWR, 0)
	pages := f.Inode().(interface{ SharedPages() *mm.Shm }).SharedPages()
	v.Unlink(c, nil, "/mapped")
	f.DecRef()
	wantFrames(t, phys, "mapped, unlinked and closed", 65)
	if pg, _ := pages.Page(64, false); pg == nil || pg[0] != 0 || pg[1] != 1 {
		t.Errorf("the mapping lost the file's last page")
	}
	pages.DecRef()
	wantFrames(t, phys, "the mapping gone", 0)

	// Truncation to zero frees too (it always did), and the file lives on.
	writeFile(t, v, c, "/trunc", big)
	if err := v.Truncate(c, nil, "/trunc", 0); err != nil {
		t.Fatal(err)
	}
	wantFrames(t, phys, "truncated to 0", 0)
	writeFile(t, v, c, "/trunc", 1)
	wantFrames(t, phys, "written again", 1)
	v.Unlink(c, nil, "/trunc")
	wantFrames(t, phys, "truncated file unlinked", 0)
}

// Opens, writes, closes, unlinks and renames racing on the same names
// leave no pages behind once every name and open file is gone.
func TestFileLifetimesConcurrent(t *testing.T) {
	v, c, phys := newLifetimeFS(t)
	var wg sync.WaitGroup
	names := []string{"/a", "/b", "/c"}
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			buf := make([]byte, 3*mm.PageSize)
			for i := 0; i < 300; i++ {
				name := names[(g+i)%len(names)]
				switch i % 4 {
				case 0, 1:
					f, err := v.Open(c, nil, name, linux.O_RDWR|linux.O_CREAT, 0o644)
					if err != nil {
						continue
					}
					f.Pwrite(buf, int64(i%3)*mm.PageSize, nil)
					f.Pread(buf, 0, nil)
					f.DecRef()
				case 2:
					v.Unlink(c, nil, name)
				case 3:
					v.Rename(c, nil, name, nil, names[(g+i+1)%len(names)], 0)
				}
			}
		}(g)
	}
	wg.Wait()
	for _, name := range names {
		v.Unlink(c, nil, name)
	}
	wantFrames(t, phys, "after the race, everything unlinked and closed", 0)
}

// TestOpenCloseUnlinkRace opens, reads and closes a file from several
// goroutines while another unlinks it: the open count changes without
// the inode's lock, and the pages must stay while any open file remains
// and go back once the name and every open file are gone, whichever
// goes last. Each goroutine holds one open file from before the unlink
// started until it is done. Run with -race.
func TestOpenCloseUnlinkRace(t *testing.T) {
	v, c, phys := newLifetimeFS(t)
	for round := 0; round < 200; round++ {
		writeFile(t, v, c, "/r", 16)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			held, err := v.Open(c, nil, "/r", linux.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer held.DecRef()
				for i := 0; i < 20; i++ {
					f, err := v.Open(c, nil, "/r", linux.O_RDONLY, 0)
					if err != nil {
						f = held // unlinked: read the one still open
						f.IncRef()
					}
					buf := make([]byte, 4)
					if n, err := f.Pread(buf, 0, nil); n != 4 || err != nil || buf[3] != 3 {
						t.Errorf("round %d: reading an open file: %d, %v, %v", round, n, err, buf)
					}
					f.DecRef()
				}
			}()
		}
		if err := v.Unlink(c, nil, "/r"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := phys.inUse(); n != 0 {
			t.Fatalf("round %d: %d frames in use after the name and every open file went, want 0", round, n)
		}
	}
}

// TestOpenRacesLastUnlink: opens that race the unlink of a file nobody
// holds either fail with ENOENT (they came after it) or read the file's
// data; none reaches a file whose pages went with the unlink (it read
// zeros before Reaped).
func TestOpenRacesLastUnlink(t *testing.T) {
	v, c, phys := newLifetimeFS(t)
	for round := 0; round < 300; round++ {
		writeFile(t, v, c, "/r", 16)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					f, err := v.Open(c, nil, "/r", linux.O_RDONLY, 0)
					if err != nil {
						if !errors.Is(err, linux.ENOENT) {
							t.Errorf("round %d: open: %v", round, err)
						}
						return
					}
					buf := make([]byte, 4)
					if n, err := f.Pread(buf, 0, nil); n != 4 || err != nil || buf[3] != 3 {
						t.Errorf("round %d: an open that raced the unlink read %d, %v, %v", round, n, err, buf)
					}
					f.DecRef()
				}
			}()
		}
		if err := v.Unlink(c, nil, "/r"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n := phys.inUse(); n != 0 {
			t.Fatalf("round %d: %d frames in use after the name and every open file went", round, n)
		}
	}
}
