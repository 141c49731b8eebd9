package vfs

import "shortbread/kernel/abi/linux"

// File system magic numbers as statfs reports them in f_type
// (include/uapi/linux/magic.h): programs such as df and stat -f tell file
// systems apart by them.
const (
	TmpfsMagic     = 0x01021994
	ProcMagic      = 0x9fa0
	SysfsMagic     = 0x62656572
	DevptsMagic    = 0x1cd1
	PipefsMagic    = 0x50495045
	SockfsMagic    = 0x534f434b
	AnonInodeMagic = 0x09041934
)

// statfs f_flags bits (ST_* of statvfs, include/linux/statfs.h).
const (
	stRdonly   = 0x0001
	stValid    = 0x0020 // f_flags is filled in
	stRelatime = 0x1000
)

// StatFS is what statfs(2) reports of a file system, in its units: Bsize
// bytes per block, Namelen bytes per name.
type StatFS struct {
	Type                  uint64
	Bsize                 int64
	Blocks, Bfree, Bavail uint64
	Files, Ffree          uint64
	Namelen, Frsize       int64
	Flags                 uint64
}

// FSStater is implemented by the root directory of a file system that
// counts its blocks and files. Type, Bsize and Namelen must be set; the
// mount fills in Flags.
type FSStater interface {
	StatFS() StatFS
}

// fsTypeMagic gives the magic number of a file system that does not
// report its own figures, by the type name it was mounted with.
var fsTypeMagic = map[string]uint64{
	"rootfs": TmpfsMagic, "tmpfs": TmpfsMagic, "devtmpfs": TmpfsMagic,
	"proc": ProcMagic, "sysfs": SysfsMagic, "devpts": DevptsMagic,
}

// StatFS reports the file system mounted at m: its own figures if its
// root counts them, else only its type and Linux's defaults for a file
// system without storage (no blocks, no file limit).
func (m *Mount) StatFS() StatFS {
	var s StatFS
	if fs, ok := m.root.inode.(FSStater); ok {
		s = fs.StatFS()
	} else {
		s = StatFS{Type: fsTypeMagic[m.fsType], Bsize: 4096, Namelen: 255}
	}
	if s.Frsize == 0 {
		s.Frsize = s.Bsize
	}
	s.Flags = stValid | m.statFlags()
	if m.readOnly {
		s.Flags |= stRdonly
	}
	return s
}

// StatFS reports the file system of an open file; a file outside the
// tree (pipe, socket, eventfd, epoll) reports the pseudo file system
// Linux keeps such files on.
func (f *OpenFile) StatFS() StatFS {
	if f.dentry != nil {
		return f.dentry.mount.StatFS()
	}
	if fs, ok := f.inode.(FSStater); ok { // a memfd: its tmpfs
		s := fs.StatFS()
		s.Frsize, s.Flags = s.Bsize, stValid
		return s
	}
	t := uint64(AnonInodeMagic)
	switch f.Attr().Mode & linux.S_IFMT {
	case linux.S_IFIFO:
		t = PipefsMagic
	case linux.S_IFSOCK:
		t = SockfsMagic
	}
	return StatFS{Type: t, Bsize: 4096, Frsize: 4096, Namelen: 255, Flags: stValid}
}

// Encode lays s out as Linux's struct statfs on x86-64 (120 bytes).
func (s StatFS) Encode() [120]byte {
	var b [120]byte
	le := func(off int, v uint64) {
		for i := 0; i < 8; i++ {
			b[off+i] = byte(v >> (8 * i))
		}
	}
	le(0, s.Type)
	le(8, uint64(s.Bsize))
	le(16, s.Blocks)
	le(24, s.Bfree)
	le(32, s.Bavail)
	le(40, s.Files)
	le(48, s.Ffree)
	// f_fsid (56) stays zero, as for Linux's tmpfs and procfs.
	le(64, uint64(s.Namelen))
	le(72, uint64(s.Frsize))
	le(80, s.Flags)
	return b
}
