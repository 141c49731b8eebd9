package vfs

import (
	"strings"

	"shortbread/kernel/abi/linux"
)

// Per-mount flags (Linux's MNT_*): what a mount of a file system allows,
// apart from the file system itself. They are kept as mount(2)'s MS_
// bits; the access-time mode is one of relatime (the default), noatime
// and strictatime, and nodiratime can be added to any.
const (
	mntNoSuid  = linux.MS_NOSUID
	mntNoDev   = linux.MS_NODEV
	mntNoExec  = linux.MS_NOEXEC
	mntNoatime = msNoatime
	mntNodirat = msNodiratime
	mntStrict  = msStrictatime

	mntAtime = mntNoatime | mntStrict
	mntAll   = mntNoSuid | mntNoDev | mntNoExec | mntAtime | mntNodirat
)

// mountFlags returns the per-mount flags mount(2)'s flags ask for. A
// remount that names none of the access-time flags (MS_NOATIME,
// MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME) keeps the old mode and
// nodiratime, as Linux does; otherwise MS_STRICTATIME wins over
// MS_NOATIME, and neither means relatime.
func mountFlags(flags, old uint32, remount bool) uint32 {
	f := flags & (mntNoSuid | mntNoDev | mntNoExec)
	if remount && flags&(msNoatime|msNodiratime|msRelatime|msStrictatime) == 0 {
		return f | old&(mntAtime|mntNodirat)
	}
	f |= flags & mntNodirat
	switch {
	case flags&msStrictatime != 0:
		f |= mntStrict
	case flags&msNoatime != 0:
		f |= mntNoatime
	}
	return f
}

// NoSuid reports whether programs in the mount run without their
// set-user-ID and set-group-ID bits (MS_NOSUID).
func (m *Mount) NoSuid() bool { return m.mntFlags.Load()&mntNoSuid != 0 }

// NoExec reports whether programs in the mount may not be executed or
// mapped executable (MS_NOEXEC).
func (m *Mount) NoExec() bool { return m.mntFlags.Load()&mntNoExec != 0 }

// noDev reports whether device nodes in the mount may not be opened
// (MS_NODEV).
func (m *Mount) noDev() bool { return m.mntFlags.Load()&mntNoDev != 0 }

// options is the mount's options as /proc/mounts shows them, in Linux's
// order (show_mnt_opts): ro or rw, then nosuid, nodev, noexec and the
// access-time mode (strictatime shows nothing).
func (m *Mount) options() string {
	var b strings.Builder
	if m.readOnly {
		b.WriteString("ro")
	} else {
		b.WriteString("rw")
	}
	f := m.mntFlags.Load()
	for _, o := range [...]struct {
		bit  uint32
		name string
	}{{mntNoSuid, ",nosuid"}, {mntNoDev, ",nodev"}, {mntNoExec, ",noexec"}, {mntNoatime, ",noatime"}, {mntNodirat, ",nodiratime"}} {
		if f&o.bit != 0 {
			b.WriteString(o.name)
		}
	}
	if f&mntAtime == 0 {
		b.WriteString(",relatime")
	}
	return b.String()
}

// superOptions is the file system instance's side of mountinfo: ro or rw.
func (m *Mount) superOptions() string {
	if m.readOnly {
		return "ro"
	}
	return "rw"
}

// statFlags are the mount's statfs f_flags bits (ST_NOSUID and so on:
// the same values as the MS_ flags, ST_RELATIME apart).
func (m *Mount) statFlags() uint64 {
	f := m.mntFlags.Load()
	s := uint64(f & (mntNoSuid | mntNoDev | mntNoExec | mntNoatime | mntNodirat))
	if f&mntAtime == 0 {
		s |= stRelatime
	}
	return s
}

// Atimer is implemented by inodes whose access time moves when they are
// read (a regular file's data, a directory's entries). The VFS calls it
// after a read according to the mount's access-time mode: never under
// noatime (and for directories under nodiratime); strict asks for the
// time to move on every read, otherwise relatime applies: only when the
// access time is not after the modification or change time, or is a day
// old.
type Atimer interface {
	TouchAtime(strict bool)
}

// AtimeStale reports whether a read at now moves an access time: always
// when strict (unless it is now already), else by relatime's rule, when
// it is not after the modification or change time or is a day old.
func AtimeStale(atime, mtime, ctime, now linux.Timespec, strict bool) bool {
	if strict {
		return atime != now
	}
	return !after(atime, mtime) || !after(atime, ctime) || now.Sec-atime.Sec >= 24*3600
}

func after(a, b linux.Timespec) bool {
	return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec
}

// touchAtime is Linux's touch_atime for a read through f: a regular
// file's, a directory's or a FIFO's (a device's read is its driver's).
func (f *OpenFile) touchAtime() {
	if f.dentry == nil || f.Flags()&linux.O_NOATIME != 0 {
		return
	}
	switch f.dentry.mode {
	case linux.S_IFREG, linux.S_IFDIR, linux.S_IFIFO:
	default:
		return
	}
	a, ok := f.inode.(Atimer)
	if !ok {
		return
	}
	mnt := f.dentry.mount
	m := mnt.mntFlags.Load()
	if mnt.readOnly || m&mntNoatime != 0 || m&mntNodirat != 0 && f.dentry.IsDir() {
		return
	}
	a.TouchAtime(m&mntStrict != 0)
}
