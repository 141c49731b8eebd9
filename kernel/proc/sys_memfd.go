package proc

// memfd_create(2) and file seals (fcntl F_ADD_SEALS, F_GET_SEALS): a
// memfd is an unlinked tmpfs file, made in a file system of its own as
// Linux makes them in its internal shm mount; the seals are tmpfs's
// (fs/tmpfs/seal.go).

import (
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// memfd_create flags (include/uapi/linux/memfd.h).
const (
	mfdCloexec      = 0x1
	mfdAllowSealing = 0x2
	mfdHugetlb      = 0x4
)

// memfdNameMax is the longest name memfd_create takes: NAME_MAX less the
// "memfd:" prefix.
const memfdNameMax = 255 - len("memfd:")

// memfdDev is the device of memfd files: an anonymous one, as the
// internal mount of Linux's shmem has.
var memfdDev = linux.MakeDev(0, 2)

var memfdFS = sync.OnceValue(func() *tmpfs.FS {
	return tmpfs.New(tmpfs.Options{Dev: memfdDev, Phys: FileFrames{}, Available: FileFrames{}.Available, Clock: wallclock.Now})
})

// sealer is a file that keeps seals (a tmpfs file).
type sealer interface {
	Seals() uint32
	AddSeals(seals uint32) error
}

// sysMemfdCreate implements memfd_create(2). MFD_HUGETLB is refused
// (EINVAL): there are no huge pages to back it.
func sysMemfdCreate(t *Thread, a *[6]uint64) (int64, bool) {
	flags := a[1]
	if flags&^(mfdCloexec|mfdAllowSealing) != 0 {
		return -eINVAL, false
	}
	name, err := t.Proc.Space().CopyInString(uintptr(a[0]), memfdNameMax+1)
	switch {
	case err == mm.ErrNameTooLong:
		return -eINVAL, false
	case err != nil:
		return errno(err), false
	}
	c := t.cred()
	ino := memfdFS().NewUnlinked(0o777, vfs.Owner{UID: c.EUID, GID: c.EGID}, flags&mfdAllowSealing != 0)
	f := vfs.NewUnlinkedFile(ino.(vfs.Regular), linux.O_RDWR, "/memfd:"+name+" (deleted)")
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&mfdCloexec != 0)
	return fdResult(fd, err), false
}

// fcntlSeals is fcntl's F_ADD_SEALS and F_GET_SEALS (memfd_fcntl): files
// other than tmpfs's have none (EINVAL); adding needs a descriptor open
// for writing (EPERM).
func fcntlSeals(f *vfs.OpenFile, cmd int, arg uint64) int64 {
	s, ok := f.Inode().(sealer)
	if cmd == linux.F_GET_SEALS {
		if !ok {
			return -eINVAL
		}
		return int64(s.Seals())
	}
	if arg > 1<<32-1 {
		return -eINVAL
	}
	if acc := f.Flags() & linux.O_ACCMODE; acc != linux.O_WRONLY && acc != linux.O_RDWR {
		return -ePERM
	}
	if !ok {
		return -eINVAL
	}
	return errno(s.AddSeals(uint32(arg)))
}

// sealedMapping applies a file's write seals to a new mapping of it: a
// shared mapping may not write (EPERM) and may never gain the right to.
// Linux before 6.7 also refused read-only shared mappings of a file under
// F_SEAL_WRITE; this follows the later rule.
func sealedMapping(f *vfs.OpenFile, v *mm.VMA, shared bool) int64 {
	s, ok := f.Inode().(sealer)
	if !ok || !shared || s.Seals()&(linux.F_SEAL_WRITE|linux.F_SEAL_FUTURE_WRITE) == 0 {
		return 0
	}
	if v.Prot&mm.ProtWrite != 0 {
		return -ePERM
	}
	v.Deny |= mm.ProtWrite
	return 0
}
