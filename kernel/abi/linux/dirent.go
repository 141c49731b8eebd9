package linux

import "encoding/binary"

// Directory entry types of d_type (include/linux/fs_types.h, DT_*).
const (
	DT_UNKNOWN = 0
	DT_FIFO    = 1
	DT_CHR     = 2
	DT_DIR     = 4
	DT_BLK     = 6
	DT_REG     = 8
	DT_LNK     = 10
	DT_SOCK    = 12
	DT_WHT     = 14
)

// DirentType returns the d_type for a file mode (S_IF* bits): the type
// bits shifted down, as fs_umode_to_dtype does.
func DirentType(mode uint32) uint8 {
	return uint8(mode & S_IFMT >> 12)
}

// direntHeader is offsetof(struct linux_dirent64, d_name).
const direntHeader = 19

// Dirent64 is one struct linux_dirent64 record of getdents64(2).
type Dirent64 struct {
	Ino  uint64
	Off  int64 // the directory offset to resume after this entry
	Type uint8 // DT_*
	Name string
}

// Reclen is d_reclen: the record's size, header, name and NUL rounded up
// to a multiple of 8.
func (d *Dirent64) Reclen() int {
	return (direntHeader + len(d.Name) + 1 + 7) &^ 7
}

// Encode writes the record at the start of b and returns its length, or
// 0 when b is too short to hold it.
func (d *Dirent64) Encode(b []byte) int {
	n := d.Reclen()
	if len(b) < n {
		return 0
	}
	le := binary.LittleEndian
	le.PutUint64(b[0:], d.Ino)
	le.PutUint64(b[8:], uint64(d.Off))
	le.PutUint16(b[16:], uint16(n))
	b[18] = d.Type
	copy(b[direntHeader:], d.Name)
	clear(b[direntHeader+len(d.Name) : n])
	return n
}

// DecodeDirent64 reads the record at the start of b and returns it with
// its length; the length is 0 when b does not hold a whole record.
func DecodeDirent64(b []byte) (Dirent64, int) {
	if len(b) < direntHeader+1 {
		return Dirent64{}, 0
	}
	le := binary.LittleEndian
	n := int(le.Uint16(b[16:]))
	if n < direntHeader+1 || n > len(b) {
		return Dirent64{}, 0
	}
	name := b[direntHeader:n]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	return Dirent64{
		Ino:  le.Uint64(b[0:]),
		Off:  int64(le.Uint64(b[8:])),
		Type: b[18],
		Name: string(name),
	}, n
}
