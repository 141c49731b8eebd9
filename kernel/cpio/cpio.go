// Package cpio reads the "newc" cpio archives the initramfs comes in
// (the format of cpio -H newc and the Linux initramfs; see Linux's
// Documentation/driver-api/early-userspace/buffer-format.rst).
package cpio

import (
	"errors"
	"fmt"
	"strconv"
)

// Entry is one archive member. Data aliases the archive.
type Entry struct {
	Name  string
	Mode  uint32 // file type and permission bits, as in stat(2)
	UID   uint32
	GID   uint32
	Mtime int64
	Data  []byte // file contents, or a symlink's target
}

// ErrFormat reports a malformed archive.
var ErrFormat = errors.New("cpio: malformed newc archive")

const headerLen = 110

// Parse returns the members of a newc archive up to its trailer.
func Parse(b []byte) ([]Entry, error) {
	var out []Entry
	off := 0
	for {
		if len(b)-off < headerLen {
			return nil, fmt.Errorf("%w: header at %d truncated", ErrFormat, off)
		}
		h := b[off : off+headerLen]
		if m := string(h[:6]); m != "070701" && m != "070702" {
			return nil, fmt.Errorf("%w: bad magic %q at %d", ErrFormat, m, off)
		}
		var f [13]uint64
		for i := range f {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: field %d at %d", ErrFormat, i, off)
			}
			f[i] = v
		}
		mode, uid, gid, mtime, size, namesize := f[1], f[2], f[3], f[5], f[6], f[11]
		nameOff := off + headerLen
		if namesize == 0 || uint64(len(b)-nameOff) < namesize {
			return nil, fmt.Errorf("%w: name at %d truncated", ErrFormat, off)
		}
		name := string(b[nameOff : nameOff+int(namesize)-1])
		dataOff := align4(nameOff + int(namesize))
		if name == "TRAILER!!!" {
			return out, nil
		}
		if dataOff > len(b) || uint64(len(b)-dataOff) < size {
			return nil, fmt.Errorf("%w: data of %q truncated", ErrFormat, name)
		}
		out = append(out, Entry{
			Name: name, Mode: uint32(mode), UID: uint32(uid), GID: uint32(gid), Mtime: int64(mtime),
			Data: b[dataOff : dataOff+int(size)],
		})
		off = align4(dataOff + int(size))
	}
}

func align4(n int) int { return (n + 3) &^ 3 }
