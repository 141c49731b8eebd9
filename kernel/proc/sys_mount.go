package proc

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// msMgcMask and msMgcVal are the magic number old programs put in the
// top half of mount(2)'s flags; Linux ignores it.
const (
	msMgcMask = 0xffff0000
	msMgcVal  = 0xc0ed0000
)

// maxMountData bounds mount(2)'s option string: Linux copies one page.
const maxMountData = 4096

// sysMount implements mount(2): source and fstype may be NULL (a remount
// or propagation change needs neither); data is the option string.
func sysMount(t *Thread, a *[6]uint64) (int64, bool) {
	target, err := t.path(a[1])
	if err != nil {
		return errno(err), false
	}
	var source, fsType, data string
	if a[0] != 0 {
		if source, err = t.path(a[0]); err != nil {
			return errno(err), false
		}
	}
	if a[2] != 0 {
		if fsType, err = t.Proc.Space().CopyInString(uintptr(a[2]), 256); err != nil {
			return errno(err), false
		}
	}
	if a[4] != 0 {
		data, err = t.Proc.Space().CopyInString(uintptr(a[4]), maxMountData)
		if errors.Is(err, linux.ENAMETOOLONG) {
			return -int64(linux.EINVAL), false
		}
		if err != nil {
			return errno(err), false
		}
	}
	flags := a[3]
	if flags&msMgcMask == msMgcVal {
		flags &^= msMgcMask
	}
	if flags > 0xffffffff {
		return -int64(linux.EINVAL), false
	}
	return errno(fsys.MountFS(t.ctx(), nil, source, target, fsType, uint32(flags), data)), false
}

// sysUmount2 implements umount2(2).
func sysUmount2(t *Thread, a *[6]uint64) (int64, bool) {
	target, err := t.path(a[0])
	if err != nil {
		return errno(err), false
	}
	if a[1] > 0xffffffff {
		return -int64(linux.EINVAL), false
	}
	return errno(fsys.Unmount(t.ctx(), nil, target, uint32(a[1]))), false
}
