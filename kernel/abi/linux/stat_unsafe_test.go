package linux

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// TestStatLayout encodes a Stat with a distinct value in every field and
// reads the bytes back through Go's syscall.Stat_t, whose layout is the
// kernel's struct stat on linux/amd64.
func TestStatLayout(t *testing.T) {
	if unsafe.Sizeof(syscall.Stat_t{}) != StatSize {
		t.Fatalf("sizeof(Stat_t) = %d, StatSize = %d", unsafe.Sizeof(syscall.Stat_t{}), StatSize)
	}
	s := Stat{
		Dev: 0x0101010101010101, Ino: 0x0202020202020202, Nlink: 0x0303030303030303,
		Mode: 0x04040404, UID: 0x05050505, GID: 0x06060606, Rdev: 0x0707070707070707,
		Size: 0x0808080808080808, Blksize: 0x0909090909090909, Blocks: 0x0a0a0a0a0a0a0a0a,
		Atime: Timespec{0x0b0b0b0b0b0b0b0b, 0x0c0c0c0c}, Mtime: Timespec{0x0d0d0d0d0d0d0d0d, 0x0e0e0e0e},
		Ctime: Timespec{0x0f0f0f0f0f0f0f0f, 0x10101010},
	}
	b := s.Encode()
	h := (*syscall.Stat_t)(unsafe.Pointer(&b[0]))
	if h.Dev != s.Dev || h.Ino != s.Ino || h.Nlink != s.Nlink || h.Mode != s.Mode || h.Uid != s.UID ||
		h.Gid != s.GID || h.Rdev != s.Rdev || h.Size != s.Size || h.Blksize != s.Blksize || h.Blocks != s.Blocks ||
		h.Atim.Sec != s.Atime.Sec || h.Atim.Nsec != s.Atime.Nsec || h.Mtim.Sec != s.Mtime.Sec ||
		h.Mtim.Nsec != s.Mtime.Nsec || h.Ctim.Sec != s.Ctime.Sec || h.Ctim.Nsec != s.Ctime.Nsec {
		t.Errorf("encoding does not match struct stat:\n ours %+v\n host %+v", s, *h)
	}
	if h.X__pad0 != 0 || h.X__unused != [3]int64{} {
		t.Error("padding not zero")
	}
}

// TestStatMatchesKernel stats a real file, rebuilds the record from the
// fields and checks the bytes equal what the kernel wrote.
func TestStatMatchesKernel(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("hello"), 0o640); err != nil {
		t.Fatal(err)
	}
	var h syscall.Stat_t
	if err := syscall.Stat(name, &h); err != nil {
		t.Fatal(err)
	}
	s := Stat{
		Dev: h.Dev, Ino: h.Ino, Nlink: h.Nlink, Mode: h.Mode, UID: h.Uid, GID: h.Gid, Rdev: h.Rdev,
		Size: h.Size, Blksize: h.Blksize, Blocks: h.Blocks,
		Atime: Timespec(h.Atim), Mtime: Timespec(h.Mtim), Ctime: Timespec(h.Ctim),
	}
	got := s.Encode()
	want := unsafe.Slice((*byte)(unsafe.Pointer(&h)), StatSize)
	if string(got[:]) != string(want) {
		t.Errorf("encoding differs from the kernel's\n ours %x\n host %x", got, want)
	}
}

// TestStatxMatchesKernel calls the host's statx(2) and compares each field
// we encode with the kernel's bytes at the same offset.
func TestStatxMatchesKernel(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("hello statx"), 0o604); err != nil {
		t.Fatal(err)
	}
	var h syscall.Stat_t
	if err := syscall.Stat(name, &h); err != nil {
		t.Fatal(err)
	}
	var raw [StatxSize]byte
	p, _ := syscall.BytePtrFromString(name)
	const sysStatx = 332
	dirfd := AT_FDCWD
	if _, _, e := syscall.Syscall6(sysStatx, uintptr(dirfd), uintptr(unsafe.Pointer(p)), 0,
		STATX_BASIC_STATS, uintptr(unsafe.Pointer(&raw[0])), 0); e != 0 {
		t.Skipf("host statx: %v", e)
	}
	le := binary.LittleEndian
	s := Statx{
		Mask: le.Uint32(raw[0:]), Blksize: uint32(h.Blksize), Attributes: le.Uint64(raw[8:]),
		Nlink: uint32(h.Nlink), UID: h.Uid, GID: h.Gid, Mode: uint16(h.Mode), Ino: h.Ino,
		Size: uint64(h.Size), Blocks: uint64(h.Blocks), AttributesMask: le.Uint64(raw[56:]),
		Atime: Timespec(h.Atim), Btime: Timespec{int64(le.Uint64(raw[80:])), int64(le.Uint32(raw[88:]))},
		Ctime: Timespec(h.Ctim), Mtime: Timespec(h.Mtim),
		RdevMajor: DevMajor(h.Rdev), RdevMinor: DevMinor(h.Rdev), DevMajor: DevMajor(h.Dev), DevMinor: DevMinor(h.Dev),
		MntID: le.Uint64(raw[144:]),
	}
	got := s.Encode()
	if string(got[:152]) != string(raw[:152]) {
		t.Errorf("statx encoding differs from the kernel's in the first 152 bytes\n ours %x\n host %x", got[:152], raw[:152])
	}
	if s.Mask&STATX_BASIC_STATS != STATX_BASIC_STATS {
		t.Errorf("kernel mask %#x lacks basic stats", s.Mask)
	}
}

// TestDirent64MatchesKernel reads a real directory with getdents64(2) and
// re-encodes each record, which must give the kernel's bytes.
func TestDirent64MatchesKernel(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a", "1234567", "12345678", "a-much-longer-file-name-than-the-others"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 4096)
	n, err := syscall.Getdents(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint8{}
	for off := 0; off < n; {
		d, l := DecodeDirent64(buf[off:n])
		if l == 0 {
			t.Fatalf("cannot decode record at %d", off)
		}
		if l != d.Reclen() {
			t.Errorf("%q: kernel reclen %d, ours %d", d.Name, l, d.Reclen())
		}
		out := make([]byte, l)
		if d.Encode(out) != l || string(out) != string(buf[off:off+l]) {
			t.Errorf("%q: re-encoding differs\n ours %x\n host %x", d.Name, out, buf[off:off+l])
		}
		seen[d.Name] = d.Type
		off += l
	}
	for _, n := range names {
		if seen[n] != DT_REG {
			t.Errorf("%q: type %d", n, seen[n])
		}
	}
	if seen["sub"] != DT_DIR || seen["."] != DT_DIR || seen[".."] != DT_DIR {
		t.Errorf("directory types: %v", seen)
	}
}
