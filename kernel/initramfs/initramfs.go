// Package initramfs is the boot file system while the VFS is being built:
// the newc cpio archive GRUB loads as a module, read-only, with symlinks
// followed.
package initramfs

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"shortbread/kernel/cpio"
)

// ErrNotFound is returned for a missing file.
var ErrNotFound = errors.New("no such file or directory")

const (
	modeType = 0o170000
	modeReg  = 0o100000
	modeLink = 0o120000
)

// FS holds the archive's files by absolute path.
type FS struct {
	files map[string]cpio.Entry
}

// New reads a newc archive.
func New(archive []byte) (*FS, error) {
	es, err := cpio.Parse(archive)
	if err != nil {
		return nil, err
	}
	fs := &FS{files: make(map[string]cpio.Entry, len(es))}
	for _, e := range es {
		fs.files[path.Clean("/"+e.Name)] = e
	}
	return fs, nil
}

// ReadFile returns a regular file's contents, following symlinks.
func (fs *FS) ReadFile(name string) ([]byte, error) {
	p := path.Clean("/" + name)
	for hops := 0; hops < 16; hops++ {
		e, ok := fs.files[p]
		if !ok {
			return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
		}
		switch e.Mode & modeType {
		case modeReg:
			return e.Data, nil
		case modeLink:
			target := string(e.Data)
			if !strings.HasPrefix(target, "/") {
				target = path.Join(path.Dir(p), target)
			}
			p = path.Clean(target)
		default:
			return nil, fmt.Errorf("%s: not a regular file", name)
		}
	}
	return nil, fmt.Errorf("%s: too many levels of symbolic links", name)
}

// Len is the number of entries.
func (fs *FS) Len() int { return len(fs.files) }
