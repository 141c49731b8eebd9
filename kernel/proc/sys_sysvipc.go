package proc

// System V shared memory: shmget, shmat, shmdt and shmctl decode and
// check their arguments and call package kernel/ipc/sysv; shmat and
// shmdt map and unmap the segment in the caller's address space.

import (
	"fmt"

	"shortbread/kernel/ipc/sysv"
	"shortbread/kernel/mm"
	"shortbread/kernel/wallclock"
)

func init() {
	for no, e := range map[uint64]Entry{
		29: {"shmget", sysShmget},
		30: {"shmat", sysShmat},
		31: {"shmctl", sysShmctl},
		67: {"shmdt", sysShmdt},
	} {
		syscalls[no] = e
	}
}

// sysvShm is the kernel's one IPC namespace's segments.
var sysvShm = sysv.NewShm(Frames{}, wallclock.Now)

// SysvShm returns the segment table, for /proc/sysvipc/shm and
// /proc/sys/kernel/shm*.
func SysvShm() *sysv.Shm { return sysvShm }

// shmat flags (linux/shm.h) and SHMLBA.
const (
	shmRdonly = 0o10000
	shmRnd    = 0o20000
	shmRemap  = 0o40000
	shmExec   = 0o100000
	shmLBA    = mm.PageSize
	ipc64     = 0x100 // IPC_64, which the C library may add to a command
)

func sysShmget(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.creds()
	id, err := sysvShm.Get(int32(a[0]), a[1], uint32(a[2]), c.vfsCred(), t.Proc.PID)
	if err != nil {
		return errno(err), false
	}
	return int64(id), false
}

func sysShmat(t *Thread, a *[6]uint64) (int64, bool) {
	id, addr, flags := int(int32(a[0])), uintptr(a[1]), a[2]
	if addr&(shmLBA-1) != 0 {
		if flags&shmRnd == 0 {
			return -eINVAL, false
		}
		addr &^= shmLBA - 1
	}
	c := t.creds()
	seg, err := sysvShm.Attach(id, flags&shmRdonly != 0, c.vfsCred(), t.Proc.PID)
	if err != nil {
		return errno(err), false
	}
	defer seg.Mem.DecRef()
	size := (uintptr(seg.Size) + mm.PageSize - 1) &^ (mm.PageSize - 1)
	v := mm.VMA{Prot: mm.ProtRead | mm.ProtWrite, Shm: seg.Mem, Name: fmt.Sprintf("/SYSV%08x (deleted)", uint32(seg.Key))}
	if flags&shmRdonly != 0 {
		v.Prot, v.Deny = mm.ProtRead, mm.ProtWrite
	}
	if flags&shmExec != 0 {
		v.Prot |= mm.ProtExec
	}
	s := t.Proc.Space()
	if addr == 0 {
		got, err := s.MapAnywhere(0, size, v, mmapTop)
		if err != nil {
			return errno(err), false
		}
		return int64(got), false
	}
	if addr+size < addr {
		return -eINVAL, false
	}
	if flags&shmRemap == 0 {
		for _, o := range s.VMAs() {
			if o.Start < addr+size && addr < o.End {
				return -eINVAL, false // Linux: no SHM_REMAP over a mapping
			}
		}
	}
	v.Start, v.End = addr, addr+size
	if err := s.Map(v); err != nil {
		return errno(err), false
	}
	return int64(addr), false
}

// sysShmdt detaches the segment attached at addr: every mapping of it
// from addr to the segment's end, as Linux's shmdt walks them.
func sysShmdt(t *Thread, a *[6]uint64) (int64, bool) {
	addr := uintptr(a[0])
	if addr&(mm.PageSize-1) != 0 {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	vmas := s.VMAs()
	var seg *sysv.Segment
	for _, v := range vmas {
		if v.Start == addr && v.Shm != nil && v.Off == 0 {
			seg = sysvShm.Find(v.Shm)
			break
		}
	}
	if seg == nil {
		return -eINVAL, false
	}
	end := addr + (uintptr(seg.Size)+mm.PageSize-1)&^(mm.PageSize-1)
	for _, v := range vmas {
		if v.Shm == seg.Mem && v.Start >= addr && v.Start < end {
			if err := s.Unmap(v.Start, v.End-v.Start); err != nil {
				return errno(err), false
			}
		}
	}
	sysvShm.Detached(seg, t.Proc.PID)
	return 0, false
}

func sysShmctl(t *Thread, a *[6]uint64) (int64, bool) {
	id, cmd, at := int(int32(a[0])), int(int32(a[1]))&^ipc64, uintptr(a[2])
	if int32(a[0]) < 0 || cmd < 0 {
		return -eINVAL, false
	}
	c := t.creds()
	buf := make([]byte, sysv.ShmidDSSize)
	space := t.Proc.Space()
	switch cmd {
	case sysv.SET:
		if err := space.CopyIn(at, buf); err != nil {
			return errno(err), false
		}
	case sysv.STAT, sysv.INFO, sysv.ShmInfo, sysv.ShmStat, sysv.ShmStatAny:
		if at == 0 {
			return -eFAULT, false
		}
	}
	r, err := sysvShm.Ctl(id, cmd, buf, c.vfsCred())
	if err != nil {
		return errno(err), false
	}
	out := 0
	switch cmd {
	case sysv.STAT, sysv.ShmStat, sysv.ShmStatAny:
		out = sysv.ShmidDSSize
	case sysv.INFO:
		out = 72 // struct shminfo64
	case sysv.ShmInfo:
		out = 48 // struct shm_info
	}
	if out > 0 {
		if err := space.CopyOut(at, buf[:out]); err != nil {
			return errno(err), false
		}
	}
	return int64(r), false
}
