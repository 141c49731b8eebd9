package proc

// System V IPC: shared memory (shmget, shmat, shmdt and shmctl),
// message queues (msgget, msgsnd, msgrcv, msgctl) and semaphores
// (semget, semop, semtimedop, semctl) decode and check
// their arguments and call package kernel/ipc/sysv; shmat and shmdt map
// and unmap the segment in the caller's address space.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/ipc/sysv"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

func init() {
	for no, e := range map[uint64]Entry{
		29:  {"shmget", sysShmget},
		30:  {"shmat", sysShmat},
		31:  {"shmctl", sysShmctl},
		67:  {"shmdt", sysShmdt},
		68:  {"msgget", sysMsgget},
		69:  {"msgsnd", sysMsgsnd},
		70:  {"msgrcv", sysMsgrcv},
		71:  {"msgctl", sysMsgctl},
		64:  {"semget", sysSemget},
		65:  {"semop", sysSemop},
		66:  {"semctl", sysSemctl},
		220: {"semtimedop", sysSemtimedop},
	} {
		syscalls[no] = e
	}
}

// sysvShm is the kernel's one IPC namespace's segments.
var sysvShm = sysv.NewShm(Frames{}, wallclock.Now)

// sysvMsg is its message queues.
var sysvMsg = sysv.NewMsg(wallclock.Now)

// sysvSem is its semaphore sets.
var sysvSem = sysv.NewSem(wallclock.Now)

// SysvSem returns the semaphore table, for /proc/sys/kernel/sem.
func SysvSem() *sysv.Sem { return sysvSem }

// SysvMsg returns the message queue table, for /proc/sys/kernel/msg*.
func SysvMsg() *sysv.Msg { return sysvMsg }

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
		got, err := s.MapAnywhere(0, size, v, s.MmapTop())
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

func sysMsgget(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.creds()
	id, err := sysvMsg.Get(int32(a[0]), uint32(a[1]), c.vfsCred())
	if err != nil {
		return errno(err), false
	}
	return int64(id), false
}

// sysvResult is a blocking System V call's result. An interrupted
// semop is EINTR whatever SA_RESTART says, even for a stop (signal(7));
// msgsnd and msgrcv (restart) are made again unless a handler runs, as
// Linux's ERESTARTNOHAND. A wake-up with nothing behind it (one left
// from a signal taken earlier) makes either call again.
func (t *Thread) sysvResult(err error, restart bool) int64 {
	if errors.Is(err, linux.EINTR) {
		switch {
		case !t.interrupted():
			return -eRESTARTNOINTR
		case restart:
			return -eRESTARTNOHAND
		}
		return -eINTR
	}
	return errno(err)
}

func sysMsgsnd(t *Thread, a *[6]uint64) (int64, bool) {
	id, at, size, flags := int(int32(a[0])), uintptr(a[1]), int64(a[2]), a[3]
	if size < 0 || size > int64(sysvMsg.Limits().Max) || int32(a[0]) < 0 {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	buf := make([]byte, 8+size)
	if err := s.CopyIn(at, buf); err != nil {
		return errno(err), false
	}
	typ := int64(binary.LittleEndian.Uint64(buf))
	c := t.creds()
	b := vfs.Blocking{NonBlock: flags&sysv.NoWait != 0, Intr: t.sigWake}
	t.sleepBegin()
	err := sysvMsg.Send(id, typ, buf[8:], b, c.vfsCred(), t.Proc.PID)
	t.sleepEnd()
	return t.sysvResult(err, true), false
}

func sysMsgrcv(t *Thread, a *[6]uint64) (int64, bool) {
	id, at, size, typ, flags := int(int32(a[0])), uintptr(a[1]), int64(a[2]), int64(a[3]), int(int32(a[4]))
	if size < 0 || int32(a[0]) < 0 {
		return -eINVAL, false
	}
	c := t.creds()
	b := vfs.Blocking{NonBlock: flags&sysv.NoWait != 0, Intr: t.sigWake}
	t.sleepBegin()
	mtype, text, err := sysvMsg.Receive(id, int(min(size, 1<<30)), typ, flags, b, c.vfsCred(), t.Proc.PID)
	t.sleepEnd()
	if err != nil {
		return t.sysvResult(err, true), false
	}
	out := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(text)), uint64(mtype))
	out = append(out, text...)
	if err := t.Proc.Space().CopyOut(at, out); err != nil {
		return errno(err), false
	}
	return int64(len(text)), false
}

func sysMsgctl(t *Thread, a *[6]uint64) (int64, bool) {
	id, cmd, at := int(int32(a[0])), int(int32(a[1]))&^ipc64, uintptr(a[2])
	if int32(a[0]) < 0 || cmd < 0 {
		return -eINVAL, false
	}
	c := t.creds()
	buf := make([]byte, sysv.MsqidDSSize)
	space := t.Proc.Space()
	switch cmd {
	case sysv.SET:
		if err := space.CopyIn(at, buf); err != nil {
			return errno(err), false
		}
	case sysv.STAT, sysv.INFO, sysv.MsgInfo, sysv.MsgStat, sysv.MsgStatAny:
		if at == 0 {
			return -eFAULT, false
		}
	}
	r, err := sysvMsg.Ctl(id, cmd, buf, c.vfsCred())
	if err != nil {
		return errno(err), false
	}
	out := 0
	switch cmd {
	case sysv.STAT, sysv.MsgStat, sysv.MsgStatAny:
		out = sysv.MsqidDSSize
	case sysv.INFO, sysv.MsgInfo:
		out = 32 // struct msginfo
	}
	if out > 0 {
		if err := space.CopyOut(at, buf[:out]); err != nil {
			return errno(err), false
		}
	}
	return int64(r), false
}

func sysSemget(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.creds()
	id, err := sysvSem.Get(int32(a[0]), int(int32(a[1])), uint32(a[2]), c.vfsCred())
	if err != nil {
		return errno(err), false
	}
	return int64(id), false
}

func sysSemop(t *Thread, a *[6]uint64) (int64, bool) {
	return t.semop(a[0], uintptr(a[1]), a[2], 0), false
}

func sysSemtimedop(t *Thread, a *[6]uint64) (int64, bool) {
	return t.semop(a[0], uintptr(a[1]), a[2], uintptr(a[3])), false
}

// semop runs the nsops struct sembuf at ops on set id, waiting at most
// the relative timespec at timeout (0: no limit).
func (t *Thread) semop(id uint64, ops uintptr, nsops uint64, timeout uintptr) int64 {
	if int32(id) < 0 || nsops < 1 {
		return -eINVAL
	}
	if nsops > uint64(sysvSem.Limits().OPM) {
		return -int64(linux.E2BIG)
	}
	s := t.Proc.Space()
	raw := make([]byte, 6*nsops)
	if err := s.CopyIn(ops, raw); err != nil {
		return errno(err)
	}
	list := make([]sysv.SemOp, nsops)
	for i := range list {
		b := raw[6*i:]
		list[i] = sysv.SemOp{Num: binary.LittleEndian.Uint16(b), Op: int16(binary.LittleEndian.Uint16(b[2:])), Flags: int16(binary.LittleEndian.Uint16(b[4:]))}
	}
	w := sysv.SemWait{Intr: t.sigWake}
	if timeout != 0 {
		var b [16]byte
		if err := s.CopyIn(timeout, b[:]); err != nil {
			return errno(err)
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return -eINVAL
		}
		w.HasTimeout, w.Timeout = true, time.Duration(sec)*time.Second+time.Duration(nsec)
		if w.Timeout == 0 {
			w.Timeout = -1 // a zero timeout: do not wait at all
		}
	}
	p := t.Proc
	p.mu.Lock()
	if p.semUndo == nil {
		p.semUndo = new(sysv.Undo)
	}
	undo := p.semUndo
	p.mu.Unlock()
	c := t.creds()
	t.sleepBegin()
	err := sysvSem.Op(int(int32(id)), list, w, c.vfsCred(), p.PID, undo)
	t.sleepEnd()
	return t.sysvResult(err, false)
}

func sysSemctl(t *Thread, a *[6]uint64) (int64, bool) {
	id, num, cmd, arg := int(int32(a[0])), int(int32(a[1])), int(int32(a[2]))&^ipc64, a[3]
	if int32(a[0]) < 0 || cmd < 0 {
		return -eINVAL, false
	}
	c := t.creds()
	s := t.Proc.Space()
	buf := make([]byte, sysv.SemidDSSize)
	var vals []uint16
	switch cmd {
	case sysv.SET:
		if err := s.CopyIn(uintptr(arg), buf); err != nil {
			return errno(err), false
		}
	case sysv.GetAll, sysv.SetAll:
		n, err := sysvSem.NSems(id)
		if err != nil {
			return errno(err), false
		}
		vals = make([]uint16, n)
		if cmd == sysv.SetAll {
			raw := make([]byte, 2*n)
			if err := s.CopyIn(uintptr(arg), raw); err != nil {
				return errno(err), false
			}
			for i := range vals {
				vals[i] = binary.LittleEndian.Uint16(raw[2*i:])
			}
		}
	}
	r, err := sysvSem.Ctl(id, num, cmd, arg, buf, vals, c.vfsCred(), t.Proc.PID)
	if err != nil {
		return errno(err), false
	}
	out := 0
	switch cmd {
	case sysv.STAT, sysv.SemStat, sysv.SemStatAny:
		out = sysv.SemidDSSize
	case sysv.INFO, sysv.SemInfo:
		out = 40 // struct seminfo
	case sysv.GetAll:
		raw := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(raw[2*i:], v)
		}
		if err := s.CopyOut(uintptr(arg), raw); err != nil {
			return errno(err), false
		}
	}
	if out > 0 {
		if err := s.CopyOut(uintptr(arg), buf[:out]); err != nil {
			return errno(err), false
		}
	}
	return int64(r), false
}
