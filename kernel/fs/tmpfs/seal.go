package tmpfs

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// File seals (fcntl F_ADD_SEALS, F_GET_SEALS), as Linux's shmem keeps
// them: every regular file has a set. A file made in a directory starts
// with F_SEAL_SEAL, so none can ever be added; only an unlinked file made
// for memfd_create with MFD_ALLOW_SEALING starts with none. The checks
// live where the changes happen: write and fallocate (write, grow),
// SetAttr's size (shrink, grow); mmap asks Seals (proc).

// allSeals are the seals F_ADD_SEALS knows (F_ALL_SEALS as of Linux 6.1;
// F_SEAL_EXEC came later).
const allSeals = linux.F_SEAL_SEAL | linux.F_SEAL_SHRINK | linux.F_SEAL_GROW |
	linux.F_SEAL_WRITE | linux.F_SEAL_FUTURE_WRITE

// writeSeals forbid writing the data through write(2) and new mappings.
const writeSeals = linux.F_SEAL_WRITE | linux.F_SEAL_FUTURE_WRITE

// NewUnlinked returns a regular file with no name, mode
// S_IFREG|perm (Linux's memfd is 0777), owned by owner: memfd_create's
// file, whose data lives while an open file or a mapping refers to it.
// With sealable, seals may be added (MFD_ALLOW_SEALING); without, it
// carries F_SEAL_SEAL like any other file.
func (fs *FS) NewUnlinked(perm uint32, owner vfs.Owner, sealable bool) vfs.Inode {
	f := &file{}
	fs.initNode(&f.node, linux.S_IFREG|perm&0o7777, owner)
	f.nlink.Store(0)
	if !sealable {
		f.seals = linux.F_SEAL_SEAL
	}
	return f
}

// Seals returns the file's seals (F_GET_SEALS).
func (f *file) Seals() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seals
}

// AddSeals adds seals to the file (F_ADD_SEALS), with memfd_add_seals'
// errors in its order: unknown bits are EINVAL, a file sealed against
// new seals EPERM, and a write seal while a shared mapping may still
// write the data EBUSY. The caller has checked that its descriptor is
// open for writing (EPERM).
func (f *file) AddSeals(seals uint32) error {
	if seals&^allSeals != 0 {
		return linux.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seals&linux.F_SEAL_SEAL != 0 {
		return linux.EPERM
	}
	if seals&linux.F_SEAL_WRITE != 0 && f.seals&linux.F_SEAL_WRITE == 0 && f.data != nil && f.data.WriteMapped() {
		return linux.EBUSY
	}
	f.seals |= seals
	return nil
}

// sealedWrite returns how much of a write of n bytes at off the seals
// allow, or EPERM if none: nothing under a write seal, and under
// F_SEAL_GROW the pages' parts up to the first that would end past the
// end of the file, as Linux checks each page as it writes it
// (shmem_write_begin), so a write across the end is cut short.
// Preconditions: f.mu is held.
func (f *file) sealedWrite(off, n int64) (int64, error) {
	if f.seals&writeSeals != 0 {
		return 0, linux.EPERM
	}
	if f.seals&linux.F_SEAL_GROW == 0 || off+n <= f.size {
		return n, nil
	}
	// The chunks before the one holding the end of the file are allowed.
	allowed := max(0, (f.size/pageSize)*pageSize-off)
	if allowed == 0 {
		return 0, linux.EPERM
	}
	return allowed, nil
}

// sealedResize returns EPERM if the seals forbid changing the size to
// size (shmem_setattr). Preconditions: f.mu is held.
func (f *file) sealedResize(size int64) error {
	if size < f.size && f.seals&linux.F_SEAL_SHRINK != 0 || size > f.size && f.seals&linux.F_SEAL_GROW != 0 {
		return linux.EPERM
	}
	return nil
}

// StatFS answers fstatfs for a file outside any mount (a memfd): the
// figures of its file system.
func (f *file) StatFS() vfs.StatFS { return f.fs.StatFS() }
