package proc

// syslog(2): reading and clearing the kernel log ring (package klog), as
// dmesg does. As on Debian's kernels (dmesg_restrict=1), every action
// needs root (CAP_SYSLOG).

import "shortbread/kernel/klog"

// syslog actions (include/linux/syslog.h).
const (
	syslogClose        = 0
	syslogOpen         = 1
	syslogRead         = 2
	syslogReadAll      = 3
	syslogReadClear    = 4
	syslogClear        = 5
	syslogConsoleOff   = 6
	syslogConsoleOn    = 7
	syslogConsoleLevel = 8
	syslogSizeUnread   = 9
	syslogSizeBuffer   = 10
)

func sysSyslog(t *Thread, a *[6]uint64) (int64, bool) {
	action, buf, n := int(int32(a[0])), uintptr(a[1]), int(int32(a[2]))
	if !t.creds().privileged() {
		return -ePERM, false
	}
	switch action {
	case syslogClose, syslogOpen, syslogConsoleOff, syslogConsoleOn:
		// The console's level is the kernel command line's; turning it
		// off and on changes nothing here.
		return 0, false
	case syslogRead, syslogReadAll, syslogReadClear:
		if buf == 0 || n < 0 {
			return -eINVAL, false
		}
		if n == 0 {
			return 0, false
		}
		var b []byte
		if action == syslogRead {
			var e int64
			if b, e = t.syslogRead(n); e != 0 {
				return e, false
			}
		} else {
			b = Log.ReadAll(n, action == syslogReadClear)
		}
		if err := t.Proc.Space().CopyOut(buf, b); err != nil {
			return errno(err), false
		}
		return int64(len(b)), false
	case syslogClear:
		Log.Clear()
		return 0, false
	case syslogConsoleLevel:
		if n < 1 || n > 8 {
			return -eINVAL, false
		}
		return 0, false
	case syslogSizeUnread:
		return int64(Log.Unread()), false
	case syslogSizeBuffer:
		return klog.RingSize, false
	}
	return -eINVAL, false
}

// syslogRead waits until the log has lines not read before, unless a
// signal comes first, and consumes up to n bytes of them.
func (t *Thread) syslogRead(n int) ([]byte, int64) {
	for {
		b, wake := Log.Read(n)
		if b != nil {
			return b, 0
		}
		t.waitBegin()
		select {
		case <-wake:
		case <-t.sigWake:
		}
		t.sleepEnd()
		if t.interrupted() {
			return nil, -eRESTARTSYS
		}
	}
}
