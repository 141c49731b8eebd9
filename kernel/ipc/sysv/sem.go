package sysv

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// semctl commands and semop flags (linux/sem.h).
const (
	GetPID  = 11
	GetVal  = 12
	GetAll  = 13
	GetNCnt = 14
	GetZCnt = 15
	SetVal  = 16
	SetAll  = 17

	SemStat    = 18
	SemInfo    = 19
	SemStatAny = 20

	SemUndo = 0x1000 // SEM_UNDO

	semVMX = 32767 // SEMVMX: the largest value
	semAEM = semVMX
)

// SemLimits are /proc/sys/kernel/sem: SEMMSL, SEMMNS, SEMOPM, SEMMNI.
type SemLimits struct {
	MSL, MNS, OPM, MNI int
}

type semaphore struct {
	val        int
	pid        int
	ncnt, zcnt int // processes waiting for it to grow, to be zero
}

// SemSet is one semaphore set.
type SemSet struct {
	Perm
	sems         []semaphore
	otime, ctime int64
	removed      bool
	q            vfs.Queue
	undos        map[*Undo]bool // the processes with adjustments for it
}

// Undo is a process's SEM_UNDO adjustments, applied when it exits.
type Undo struct {
	adj map[int][]int // by set identifier: one adjustment per semaphore
}

// Sem is the table of semaphore sets.
type Sem struct {
	t      *table[SemSet]
	now    func() time.Time
	limits SemLimits
	total  int // semaphores in all sets; protected by t.mu
}

// NewSem makes an empty table with Linux 6.1's limits.
func NewSem(now func() time.Time) *Sem {
	return &Sem{
		t:      newTable(func(s *SemSet) *Perm { return &s.Perm }, 32000),
		now:    now,
		limits: SemLimits{MSL: 32000, MNS: 1024000000, OPM: 500, MNI: 32000},
	}
}

// Limits returns the limits; SetLimits changes them.
func (s *Sem) Limits() SemLimits {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.limits
}

func (s *Sem) SetLimits(l SemLimits) {
	s.t.mu.Lock()
	s.limits = l
	s.t.maxIDs = l.MNI
	s.t.mu.Unlock()
}

// Get is semget(2).
func (s *Sem) Get(key int32, nsems int, flags uint32, c vfs.Cred) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if nsems < 0 || nsems > s.limits.MSL {
		return 0, linux.EINVAL
	}
	created := false
	set, err := s.t.getLocked(key, flags, c, func() (*SemSet, error) {
		if nsems == 0 {
			return nil, linux.EINVAL
		}
		if s.total+nsems > s.limits.MNS {
			return nil, linux.ENOSPC
		}
		created = true
		return &SemSet{Perm: newPerm(key, flags, c), sems: make([]semaphore, nsems), ctime: s.now().Unix(), undos: map[*Undo]bool{}}, nil
	}, func(set *SemSet) error {
		if nsems > len(set.sems) {
			return linux.EINVAL
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if created {
		s.total += nsems
	}
	return set.ID, nil
}

// SemOp is struct sembuf.
type SemOp struct {
	Num   uint16
	Op    int16
	Flags int16
}

// SemWait is how semop may block: the thread's interruption, and a
// relative timeout (semtimedop; 0 with HasTimeout: do not wait).
type SemWait struct {
	Intr       <-chan struct{}
	Timeout    time.Duration
	HasTimeout bool
}

// try applies ops all or none: nil when done, the index of the
// operation that must wait and whether it waits for zero, or an error.
func (set *SemSet) try(ops []SemOp) (blocked int, zero bool, err error) {
	vals := make([]int, len(set.sems))
	for i := range set.sems {
		vals[i] = set.sems[i].val
	}
	for i, op := range ops {
		v := vals[op.Num]
		switch {
		case op.Op > 0:
			if v+int(op.Op) > semVMX {
				return -1, false, linux.ERANGE
			}
			vals[op.Num] = v + int(op.Op)
		case op.Op < 0:
			if v+int(op.Op) < 0 {
				return i, false, nil
			}
			vals[op.Num] = v + int(op.Op)
		default:
			if v != 0 {
				return i, true, nil
			}
		}
	}
	for i := range set.sems {
		set.sems[i].val = vals[i]
	}
	return -1, false, nil
}

// Op is semop(2)/semtimedop(2) on set id by process pid, whose SEM_UNDO
// adjustments go to undo (made by the caller on first need).
func (s *Sem) Op(id int, ops []SemOp, w SemWait, c vfs.Cred, pid int, undo *Undo) error {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if len(ops) < 1 {
		return linux.EINVAL
	}
	if len(ops) > s.limits.OPM {
		return linux.E2BIG
	}
	set, err := s.t.lookupLocked(id)
	if err != nil {
		return err
	}
	alter, undoing := false, false
	for _, op := range ops {
		if int(op.Num) >= len(set.sems) {
			return linux.EFBIG
		}
		alter = alter || op.Op != 0
		undoing = undoing || op.Flags&SemUndo != 0
	}
	flag := uint32(0o444)
	if alter {
		flag = 0o222
	}
	if err := set.Access(c, flag); err != nil {
		return err
	}
	ch := make(chan struct{}, 1)
	var cancel func()
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	var expired <-chan time.Time
	if w.HasTimeout && w.Timeout > 0 {
		tm := time.NewTimer(w.Timeout)
		defer tm.Stop()
		expired = tm.C
	}
	for {
		if set.removed {
			return linux.EIDRM
		}
		blocked, zero, err := set.try(ops)
		if err != nil {
			return err
		}
		if blocked < 0 {
			break
		}
		if ops[blocked].Flags&NoWait != 0 || (w.HasTimeout && w.Timeout <= 0) {
			return linux.EAGAIN
		}
		if cancel == nil {
			cancel = set.q.Watch(vfs.WakeChan(ch))
			continue
		}
		cnt := &set.sems[ops[blocked].Num].ncnt
		if zero {
			cnt = &set.sems[ops[blocked].Num].zcnt
		}
		*cnt++
		s.t.mu.Unlock()
		vfs.NoteWait(w.Intr)
		var stop error
		select {
		case <-ch:
		case <-w.Intr:
			stop = linux.EINTR
		case <-expired:
			stop = linux.EAGAIN
		}
		s.t.mu.Lock()
		*cnt--
		if stop != nil {
			if set.removed {
				return linux.EIDRM
			}
			if blocked, _, err := set.try(ops); err == nil && blocked < 0 {
				break // it went through after all
			}
			return stop
		}
	}
	// Done: record who and the undo adjustments, and wake the others.
	for _, op := range ops {
		set.sems[op.Num].pid = pid
		if op.Flags&SemUndo != 0 && op.Op != 0 && undo != nil {
			if undo.adj == nil {
				undo.adj = map[int][]int{}
			}
			a := undo.adj[set.ID]
			if a == nil {
				a = make([]int, len(set.sems))
				undo.adj[set.ID] = a
				set.undos[undo] = true
			}
			a[op.Num] -= int(op.Op)
		}
	}
	set.otime = s.now().Unix()
	set.q.Notify()
	return nil
}

// Exit applies a process's SEM_UNDO adjustments as it exits: each value
// moves by its adjustment, kept within 0 and SEMVMX (exit_sem).
func (s *Sem) Exit(undo *Undo, pid int) {
	if undo == nil {
		return
	}
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	for id, adj := range undo.adj {
		set, err := s.t.lookupLocked(id)
		if err != nil || !set.undos[undo] {
			continue
		}
		delete(set.undos, undo)
		for i, a := range adj {
			if a == 0 {
				continue
			}
			set.sems[i].val = min(max(set.sems[i].val+a, 0), semVMX)
			set.sems[i].pid = pid
		}
		set.q.Notify()
	}
	undo.adj = nil
}

// clearUndo forgets every process's adjustment for semaphore i of set
// (all of them when i < 0), as SETVAL and SETALL do.
func (set *SemSet) clearUndo(i int) {
	for u := range set.undos {
		a := u.adj[set.ID]
		for j := range a {
			if i < 0 || i == j {
				a[j] = 0
			}
		}
	}
}

// SemidDSSize is sizeof(struct semid64_ds) on x86-64.
const SemidDSSize = 104

// Ctl is semctl(2). arg is the union semun as passed (a value for
// SETVAL); buf is the caller's struct semid64_ds or seminfo for the
// commands that take one, vals its array of unsigned shorts for GETALL
// and SETALL (len nsems when the caller read it). It returns the call's
// result.
func (s *Sem) Ctl(id, num, cmd int, arg uint64, buf []byte, vals []uint16, c vfs.Cred, pid int) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	le := binary.LittleEndian
	switch cmd {
	case INFO, SemInfo:
		// struct seminfo: semmap, semmni, semmns, semmnu, semmsl,
		// semopm, semume, semusz, semvmx, semaem (ints).
		clear(buf)
		l := s.limits
		for i, v := range []int{l.MNI, l.MNI, l.MNS, l.MNS, l.MSL, l.OPM, l.OPM, 20, semVMX, semAEM} {
			le.PutUint32(buf[4*i:], uint32(v))
		}
		if cmd == SemInfo {
			le.PutUint32(buf[28:], uint32(len(s.t.slots))) // semusz: sets in use
			le.PutUint32(buf[36:], uint32(s.total))        // semaem: semaphores
		}
		top := 0
		for slot := range s.t.slots {
			top = max(top, slot)
		}
		return top, nil
	case SemStat, SemStatAny:
		set := s.t.slots[id]
		if id < 0 || set == nil {
			return 0, linux.EINVAL
		}
		if cmd == SemStat {
			if err := set.Access(c, 0o444); err != nil {
				return 0, err
			}
		}
		set.putDS(buf)
		return set.ID, nil
	}
	set, err := s.t.lookupLocked(id)
	if err != nil {
		return 0, err
	}
	read := func() error { return set.Access(c, 0o444) }
	sem := func() (*semaphore, error) {
		if num < 0 || num >= len(set.sems) {
			return nil, linux.EINVAL
		}
		return &set.sems[num], nil
	}
	switch cmd {
	case STAT:
		if err := read(); err != nil {
			return 0, err
		}
		set.putDS(buf)
	case SET, RMID:
		if !set.Owns(c) {
			return 0, linux.EPERM
		}
		set.ctime = s.now().Unix()
		if cmd == SET {
			set.setPerm(buf)
			return 0, nil
		}
		s.t.removeLocked(set)
		s.total -= len(set.sems)
		set.removed = true
		for u := range set.undos {
			delete(u.adj, set.ID)
		}
		set.q.Notify()
	case GetVal, GetPID, GetNCnt, GetZCnt:
		if err := read(); err != nil {
			return 0, err
		}
		sm, err := sem()
		if err != nil {
			return 0, err
		}
		switch cmd {
		case GetVal:
			return sm.val, nil
		case GetPID:
			return sm.pid, nil
		case GetNCnt:
			return sm.ncnt, nil
		}
		return sm.zcnt, nil
	case GetAll:
		if err := read(); err != nil {
			return 0, err
		}
		for i := range set.sems {
			vals[i] = uint16(set.sems[i].val)
		}
	case SetVal:
		if err := set.Access(c, 0o222); err != nil {
			return 0, err
		}
		sm, err := sem()
		if err != nil {
			return 0, err
		}
		v := int(int32(arg))
		if v < 0 || v > semVMX {
			return 0, linux.ERANGE
		}
		sm.val, sm.pid = v, pid
		set.clearUndo(num)
		set.ctime = s.now().Unix()
		set.q.Notify()
	case SetAll:
		if err := set.Access(c, 0o222); err != nil {
			return 0, err
		}
		for _, v := range vals {
			if v > semVMX {
				return 0, linux.ERANGE
			}
		}
		for i := range set.sems {
			set.sems[i].val, set.sems[i].pid = int(vals[i]), pid
		}
		set.clearUndo(-1)
		set.ctime = s.now().Unix()
		set.q.Notify()
	default:
		return 0, linux.EINVAL
	}
	return 0, nil
}

// NSems returns how many semaphores set id has (for GETALL/SETALL's
// array), or an error for a bad identifier.
func (s *Sem) NSems(id int) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	set, err := s.t.lookupLocked(id)
	if err != nil {
		return 0, err
	}
	return len(set.sems), nil
}

func (set *SemSet) putDS(b []byte) {
	le := binary.LittleEndian
	putPerm(b, &set.Perm)
	le.PutUint64(b[48:], uint64(set.otime))
	le.PutUint64(b[64:], uint64(set.ctime))
	le.PutUint64(b[80:], uint64(len(set.sems)))
}
