package ext4vfs

import (
	"fmt"
	"path/filepath"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Listing positions of ext4 directories (getdents64's d_off, the file
// position of an open directory). A listing must show each name that
// stays exactly once, whatever happens to the directory between the
// calls: on a dir_index file system a one-block directory becomes an
// indexed one when it outgrows its block, and its positions must not
// change kind then.

// mountEmpty makes an empty file system with mke2fs arguments args,
// then tune2fs's tune unless nil, and mounts it on /mnt of a
// tmpfs-rooted VFS.
func mountEmpty(t *testing.T, tune []string, args ...string) (*vfs.VFS, *vfs.Ctx, *memDev) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	tool(t, "mke2fs", append(append([]string{"-q", "-F"}, args...), img, "16M")...)
	if tune != nil {
		tool(t, "tune2fs", append(tune, img)...)
	}
	dev, disk := mountImage(t, img)
	v, c := mountOnMnt(t, New(disk, Options{Dev: linux.MakeDev(254, 0)}))
	return v, c, dev
}

func createFile(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string) {
	t.Helper()
	f, err := v.Open(c, nil, path, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	f.DecRef()
}

// readRecords makes one getdents call into buf.
func readRecords(t *testing.T, d *vfs.OpenFile, buf []byte) []linux.Dirent64 {
	t.Helper()
	n, err := d.Getdents(buf)
	if err != nil {
		t.Fatalf("getdents: %v", err)
	}
	var out []linux.Dirent64
	for off := 0; off < n; {
		r, m := linux.DecodeDirent64(buf[off:n])
		if m == 0 {
			t.Fatalf("bad record at %d of %d", off, n)
		}
		out = append(out, r)
		off += m
	}
	return out
}

func openDir(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string) *vfs.OpenFile {
	t.Helper()
	d, err := v.Open(c, nil, path, linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return d
}

// listAll lists directory path in one go.
func listAll(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string) []linux.Dirent64 {
	t.Helper()
	d := openDir(t, v, c, path)
	defer d.DecRef()
	var out []linux.Dirent64
	buf := make([]byte, 1<<16)
	for {
		recs := readRecords(t, d, buf)
		if len(recs) == 0 {
			return out
		}
		out = append(out, recs...)
	}
}

// checkSeek checks that seeking to the d_off of each record of listing
// all (the directory unchanged since) resumes at the record after it,
// as seekdir to what telldir returned does.
func checkSeek(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string, all []linux.Dirent64) {
	t.Helper()
	d := openDir(t, v, c, path)
	defer d.DecRef()
	buf := make([]byte, 1<<16)
	for i, r := range all {
		if _, err := d.Seek(r.Off, linux.SEEK_SET); err != nil {
			t.Fatal(err)
		}
		recs := readRecords(t, d, buf)
		switch {
		case i+1 == len(all) && len(recs) != 0:
			t.Errorf("seek to %#x (after the last, %s) lists %q", r.Off, r.Name, recs[0].Name)
		case i+1 < len(all) && (len(recs) == 0 || recs[0].Name != all[i+1].Name):
			t.Errorf("seek to %#x (after %s) lists %d records, not from %s", r.Off, r.Name, len(recs), all[i+1].Name)
		}
	}
}

// TestListSpansIndexing lists a one-block directory one record per
// getdents call while names are added, so that it outgrows its block
// (and, with dir_index, becomes an indexed directory) halfway through:
// every name there from the start is listed exactly once and none
// twice. Before and after, seeking to a record's d_off resumes after it.
func TestListSpansIndexing(t *testing.T) {
	for _, tc := range []struct{ name, features string }{
		{"dir_index", "dir_index"},
		{"linear", "^dir_index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, c, dev := mountEmpty(t, nil, "-t", "ext4", "-b", "1024", "-O", tc.features)
			if err := v.Mkdir(c, nil, "/mnt/g", 0o755); err != nil {
				t.Fatal(err)
			}
			a, err := v.Stat(c, nil, "/mnt/g", 0)
			if err != nil {
				t.Fatal(err)
			}
			bs := a.Size
			// Names of one length: an ext4 entry of 20 bytes, a
			// linux_dirent64 record of 32, so a 32-byte buffer
			// takes one record per call.
			name := func(i int) string { return fmt.Sprintf("name-%04d", i) }
			room := int(bs-24-12) / 20 // past "." and "..", before the checksum tail
			start := room / 2
			for i := range start {
				createFile(t, v, c, "/mnt/g/"+name(i))
			}
			checkSeek(t, v, c, "/mnt/g", listAll(t, v, c, "/mnt/g"))

			d := openDir(t, v, c, "/mnt/g")
			defer d.DecRef()
			buf := make([]byte, 32)
			seen := map[string]int{}
			added := start
			for calls := 0; ; calls++ {
				recs := readRecords(t, d, buf)
				if len(recs) == 0 {
					break
				}
				if len(recs) != 1 {
					t.Fatalf("%d records in a 32-byte buffer", len(recs))
				}
				seen[recs[0].Name]++
				if calls > 10*room {
					t.Fatal("the listing does not end")
				}
				// Two names a call, until the directory spans
				// about three blocks: a linear one grows at its
				// end, where the listing must catch up.
				for j := 0; j < 2 && added < 3*room; j++ {
					createFile(t, v, c, "/mnt/g/"+name(added))
					added++
				}
			}
			for n, k := range seen {
				if k != 1 {
					t.Errorf("%s listed %d times", n, k)
				}
			}
			for i := range start {
				if seen[name(i)] != 1 {
					t.Errorf("%s listed %d times", name(i), seen[name(i)])
				}
			}
			if seen["."] != 1 || seen[".."] != 1 {
				t.Errorf(". listed %d times, .. %d times", seen["."], seen[".."])
			}
			if a, err := v.Stat(c, nil, "/mnt/g", 0); err != nil || a.Size <= bs {
				t.Fatalf("the directory did not outgrow its block (size %d, %v)", a.Size, err)
			}
			t.Logf("%d names at the start, %d at the end, %d listed", start, added, len(seen))
			all := listAll(t, v, c, "/mnt/g")
			if len(all) != added+2 {
				t.Errorf("%d records listed, want %d", len(all), added+2)
			}
			checkSeek(t, v, c, "/mnt/g", all)
			fsck(t, dev)
		})
	}
}

// collide are names whose legacy hashes are equal (minor hash 0): with
// hash_alg=legacy they share a listing position, as names whose full
// hashes collide do with any hash. cl-024004 and cl-024040 and the
// other pairs are checked in package ext4 (TestLegacyCollisions).
var collide = []string{"cl-005007", "cl-005707", "cl-024000", "cl-024044", "cl-024004", "cl-024040"}

// TestListCollisions lists directories holding names that share a
// position, one record per getdents call: each name is listed exactly
// once (the open directory remembers the names it returned at its
// position, as Linux keeps the rest of a collision chain in the open
// file), in a one-block directory and in an indexed one.
func TestListCollisions(t *testing.T) {
	v, c, dev := mountEmpty(t, []string{"-E", "hash_alg=legacy"}, "-t", "ext4", "-b", "1024")
	for dir, others := range map[string]int{"/mnt/small": 10, "/mnt/big": 300} {
		if err := v.Mkdir(c, nil, dir, 0o755); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{".": true, "..": true}
		for i := range others {
			n := fmt.Sprintf("cl-9%05d", i)
			createFile(t, v, c, dir+"/"+n)
			want[n] = true
		}
		for _, n := range collide {
			createFile(t, v, c, dir+"/"+n)
			want[n] = true
		}
		d := openDir(t, v, c, dir)
		buf := make([]byte, 32)
		seen := map[string]int{}
		for {
			recs := readRecords(t, d, buf)
			if len(recs) == 0 {
				break
			}
			seen[recs[0].Name]++
		}
		d.DecRef()
		for n := range want {
			if seen[n] != 1 {
				t.Errorf("%s: %s listed %d times", dir, n, seen[n])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d names listed, want %d", dir, len(seen), len(want))
		}
	}
	fsck(t, dev)
}
