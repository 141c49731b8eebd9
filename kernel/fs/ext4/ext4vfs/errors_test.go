package ext4vfs

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/ext4"
)

// corruptImage makes an image whose /hello inode fails its checksum,
// with s_errors set by tune2fs -e to superErrors ("" leaves mke2fs's
// default, continue).
func corruptImage(t *testing.T, superErrors string) string {
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "hello"), []byte("hello\n"), 0o644)
	img := filepath.Join(t.TempDir(), "img")
	tool(t, "mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "8M")
	if superErrors != "" {
		tool(t, "tune2fs", "-e", superErrors, img)
	}
	// "Inode 12 is part of block group 0\n\tlocated at block 36, offset 0x0b00"
	out := tool(t, "debugfs", "-R", "imap /hello", img)
	m := regexp.MustCompile(`located at block (\d+), offset 0x([0-9a-f]+)`).FindStringSubmatch(out)
	bs := regexp.MustCompile(`Block size:\s+(\d+)`).FindStringSubmatch(tool(t, "dumpe2fs", "-h", img))
	if m == nil || bs == nil {
		t.Fatalf("debugfs imap: %q", out)
	}
	block, _ := strconv.ParseInt(m[1], 10, 64)
	off, _ := strconv.ParseInt(m[2], 16, 64)
	size, _ := strconv.ParseInt(bs[1], 10, 64)
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	b[block*size+off+0x10] ^= 0xff // i_dtime: only the checksum notices
	if err := os.WriteFile(img, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

// TestErrorsBehavior: once corruption is found, errors=continue goes on
// changing the file system, errors=remount-ro refuses every change from
// then on (EROFS) and commits nothing more, errors=panic calls Panic;
// without the option the superblock's s_errors decides, as on Linux.
func TestErrorsBehavior(t *testing.T) {
	for _, tc := range []struct {
		option, super string
		want          string // Errors()
		create        error  // a create after the corruption was met
		panics        bool
	}{
		{"continue", "", "continue", nil, false},
		{"remount-ro", "", "remount-ro", linux.EROFS, false},
		{"panic", "", "panic", nil, true},
		{"", "", "continue", nil, false},
		{"", "remount-ro", "remount-ro", linux.EROFS, false},
		{"continue", "remount-ro", "continue", nil, false},
	} {
		t.Run(tc.option+"/"+tc.super, func(t *testing.T) {
			img := corruptImage(t, tc.super)
			b, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			dev := &memDev{b: b}
			disk, err := ext4.Mount(dev, ext4.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var logged, panicked []string
			fs := New(disk, Options{Dev: linux.MakeDev(254, 0), Errors: tc.option,
				Logf:  func(f string, a ...any) { logged = append(logged, f) },
				Panic: func(what string) { panicked = append(panicked, what) }})
			if fs.Errors() != tc.want {
				t.Errorf("Errors() %q, want %q", fs.Errors(), tc.want)
			}
			v, c := mountOnMnt(t, fs)
			if _, err := v.Stat(c, nil, "/mnt/hello", 0); !errors.Is(err, linux.EUCLEAN) {
				t.Fatalf("stat of the corrupt inode: %v, want EUCLEAN", err)
			}
			if len(logged) == 0 {
				t.Errorf("the corruption was not logged")
			}
			if tc.panics != (len(panicked) == 1) || (tc.panics && !strings.Contains(panicked[0], "checksum")) {
				t.Errorf("panic called with %q", panicked)
			}
			f, err := v.Open(c, nil, "/mnt/new", linux.O_CREAT|linux.O_WRONLY, 0o644)
			if !errors.Is(err, tc.create) && !(tc.create == nil && err == nil) {
				t.Errorf("create after the corruption: %v, want %v", err, tc.create)
			}
			if err == nil {
				f.DecRef()
			}
			if tc.create != nil {
				// Nothing after the error reaches the disk: the sync
				// that would commit it stops the journal instead.
				fs.Sync()
				if ro, why := disk.ReadOnly(); !ro || !strings.Contains(why, "checksum") {
					t.Errorf("after the sync: read-only %v (%q)", ro, why)
				}
				if _, err := v.Stat(c, nil, "/mnt/new", 0); err == nil {
					t.Errorf("a file was created after errors=remount-ro stopped changes")
				}
			}
		})
	}
}
