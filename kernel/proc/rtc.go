package proc

// ioctl(2) on a real-time clock (/dev/rtc0): RTC_RD_TIME and
// RTC_SET_TIME with struct rtc_time (include/uapi/linux/rtc.h).

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devfs"
)

const (
	rtcRdTime  = 0x80247009 // _IOR('p', 0x09, struct rtc_time)
	rtcSetTime = 0x4024700a // _IOW('p', 0x0a, struct rtc_time)
	rtcTimeLen = 36         // nine ints
)

func (t *Thread) rtcIoctl(r devfs.RTC, cmd uint64, arg uintptr) int64 {
	s := t.Proc.Space()
	var b [rtcTimeLen]byte
	le := binary.LittleEndian
	switch cmd {
	case rtcRdTime:
		tm, err := r.ReadTime()
		if err != nil {
			return errno(err)
		}
		// The weekday and day of the year stay 0, as Linux's CMOS
		// driver leaves them.
		for i, v := range []int{tm.Second(), tm.Minute(), tm.Hour(), tm.Day(), int(tm.Month()) - 1, tm.Year() - 1900} {
			le.PutUint32(b[4*i:], uint32(int32(v)))
		}
		return errno(s.CopyOut(arg, b[:]))
	case rtcSetTime:
		t.Proc.mu.Lock()
		root := t.Proc.cred.euid == 0
		t.Proc.mu.Unlock()
		if !root { // CAP_SYS_TIME
			return errno(linux.EACCES)
		}
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		var f [6]int
		for i := range f {
			f[i] = int(int32(le.Uint32(b[4*i:])))
		}
		sec, min, hour, mday, mon, year := f[0], f[1], f[2], f[3], f[4], f[5]+1900
		// rtc_valid_tm: every field in range, the day in the month.
		if sec < 0 || sec > 59 || min < 0 || min > 59 || hour < 0 || hour > 23 || mon < 0 || mon > 11 ||
			mday < 1 || mday > time.Date(year, time.Month(mon+2), 0, 0, 0, 0, 0, time.UTC).Day() {
			return errno(linux.EINVAL)
		}
		return errno(r.SetTime(time.Date(year, time.Month(mon+1), mday, hour, min, sec, 0, time.UTC)))
	}
	return -eNOTTY
}
