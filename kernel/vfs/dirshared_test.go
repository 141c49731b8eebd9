package vfs_test

import (
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// hashDir lists fixed names at fixed positions, several sharing one as
// names with equal hashes do in an ext4 directory (vfs.DirEntry.Shared).
type hashDir struct {
	procDir
	names []string
	pos   []int64 // ascending
}

func (d *hashDir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	for i, n := range d.names {
		if d.pos[i] < pos {
			continue
		}
		e := vfs.DirEntry{Name: n, Ino: uint64(100 + i), Type: linux.DT_REG, Next: d.pos[i] + 1}
		if i+1 < len(d.names) && d.pos[i+1] == d.pos[i] {
			e.Next, e.Shared = d.pos[i], true
		}
		if !emit(e) {
			return nil
		}
	}
	return nil
}

// TestSharedPositions lists a directory whose names b, c and d share a
// position one record per getdents call: each name comes once, in
// order (the open directory skips the names it returned at its
// position). A seek to that position, from elsewhere, starts the run
// again, as a seekdir does on Linux.
func TestSharedPositions(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("h", 0o755)
	hd := &hashDir{names: []string{"a", "b", "c", "d", "e"}, pos: []int64{10, 20, 20, 20, 30}}
	must(t, "mount", k.v.Mount(&k.ctx, nil, "/h", hd, "hash", 0))
	fd, err := k.open("/h", linux.O_RDONLY|linux.O_DIRECTORY, 0)
	must(t, "open", err)
	// One record a call: a 1-byte name takes 24 bytes.
	read := func() []linux.Dirent64 {
		var out []linux.Dirent64
		buf := make([]byte, 40)
		for calls := 0; ; calls++ {
			if calls > 20 {
				t.Fatalf("the listing does not end: %v", out)
			}
			n, err := k.getdents(fd, buf)
			must(t, "getdents", err)
			if n == 0 {
				return out
			}
			d, l := linux.DecodeDirent64(buf[:n])
			if l != n {
				t.Fatalf("%d bytes for a record of %d", n, l)
			}
			out = append(out, d)
		}
	}
	names := func(ds []linux.Dirent64) string {
		s := ""
		for _, d := range ds {
			s += d.Name + " "
		}
		return s
	}
	all := read()
	if got := names(all); got != ". .. a b c d e " {
		t.Fatalf("listed %q", got)
	}
	// d_off is the file system's Next plus 2 (for "." and ".."): b and
	// c resume at their own position (d comes after them there).
	if all[2].Off != 13 || all[3].Off != 22 || all[4].Off != 22 || all[5].Off != 23 {
		t.Errorf("d_off of a..d: %d %d %d %d", all[2].Off, all[3].Off, all[4].Off, all[5].Off)
	}
	if _, err := k.lseek(fd, all[3].Off, linux.SEEK_SET); err != nil {
		t.Fatal(err)
	}
	if got := names(read()); got != "b c d e " {
		t.Errorf("after a seek to b's d_off: %q", got)
	}
	if _, err := k.lseek(fd, all[5].Off, linux.SEEK_SET); err != nil {
		t.Fatal(err)
	}
	if got := names(read()); got != "e " {
		t.Errorf("after a seek to d's d_off: %q", got)
	}
}
