package devfs

import (
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// RTCMajor is the character major Linux's rtc class gets (dynamic
// there, 251 on a Debian guest in our QEMU set-up); /dev/rtc0 is minor 0.
const RTCMajor = 251

// RTC is a real-time clock (package rtc's CMOS clock).
type RTC interface {
	ReadTime() (time.Time, error)
	SetTime(time.Time) error
}

// AddRTC adds the clock device file name (rtc0) for r with device
// number rdev, mode 0600 as Linux's. Call it before Register.
func (fs *FS) AddRTC(name string, rdev uint64, r RTC) {
	n := fs.newNode(linux.S_IFCHR|0o600, rdev)
	n.open = func(*vfs.Ctx, uint32) (vfs.File, error) { return &rtcFile{r: r}, nil }
	fs.devices = append(fs.devices, n)
	fs.root.add(name, n)
}

// RTCOf returns the clock behind f when f is an open RTC device, for
// its ioctls.
func RTCOf(f *vfs.OpenFile) (RTC, bool) {
	r, ok := f.Impl().(*rtcFile)
	if !ok {
		return nil, false
	}
	return r.r, true
}

// rtcFile is an open clock. Everything goes through ioctl(2); read(2)
// would wait for the clock's interrupts, which are not implemented, so
// it fails with EINVAL rather than block forever.
type rtcFile struct{ r RTC }

func (*rtcFile) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, linux.EINVAL }
func (*rtcFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }
func (*rtcFile) Release()                                       {}
