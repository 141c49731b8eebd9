package sysv

import (
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// Segment mode flags and shmctl commands (linux/shm.h).
const (
	shmDest   = 0o1000 // SHM_DEST: removed, destroyed at the last detach
	shmLocked = 0o2000 // SHM_LOCKED

	ShmLock    = 11
	ShmUnlock  = 12
	ShmStat    = 13
	ShmInfo    = 14
	ShmStatAny = 15
)

// ShmLimits are /proc/sys/kernel/shmmax, shmall and shmmni.
type ShmLimits struct {
	Max uint64 // bytes in one segment
	All uint64 // pages in all segments
	MNI int    // segments
}

// Segment is one shared memory segment.
type Segment struct {
	Perm
	Size         uint64
	Mem          *mm.Shm
	atime, dtime int64 // seconds; 0: never
	ctime        int64
	cpid, lpid   int
}

// Shm is the table of segments of one IPC namespace (the kernel has
// one).
type Shm struct {
	t      *table[Segment]
	phys   mm.Phys
	now    func() time.Time
	limits ShmLimits
	pages  uint64 // pages of every segment; protected by t.mu
}

// NewShm makes an empty table whose segments take frames from phys.
func NewShm(phys mm.Phys, now func() time.Time) *Shm {
	return &Shm{
		t:    newTable(func(s *Segment) *Perm { return &s.Perm }, 4096),
		phys: phys, now: now,
		// Linux 6.1's defaults: no practical size limit, 4096 segments.
		limits: ShmLimits{Max: ^uint64(0) - 1<<24, All: ^uint64(0) - 1<<24, MNI: 4096},
	}
}

// Limits returns the limits; SetLimits changes them.
func (s *Shm) Limits() ShmLimits {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	return s.limits
}

func (s *Shm) SetLimits(l ShmLimits) {
	s.t.mu.Lock()
	s.limits = l
	s.t.maxIDs = l.MNI
	s.t.mu.Unlock()
}

func pagesOf(size uint64) uint64 { return (size + mm.PageSize - 1) / mm.PageSize }

// Get is shmget(2): the segment with key (a new one for IPC_PRIVATE or
// with IPC_CREAT), of at least size bytes. It returns the identifier.
func (s *Shm) Get(key int32, size uint64, flags uint32, c vfs.Cred, pid int) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	created := false
	seg, err := s.t.getLocked(key, flags, c, func() (*Segment, error) {
		if size < 1 || size > s.limits.Max {
			return nil, linux.EINVAL
		}
		if n := pagesOf(size); s.pages+n < s.pages || s.pages+n > s.limits.All {
			return nil, linux.ENOSPC
		}
		created = true
		return &Segment{Perm: newPerm(key, flags, c), Size: size, ctime: s.now().Unix(), cpid: pid}, nil
	}, func(seg *Segment) error {
		if size > seg.Size {
			return linux.EINVAL
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if created {
		s.pages += pagesOf(size)
		seg.Mem = mm.NewShm(s.phys)
		seg.Mem.OnUnmapped(func() { s.lastDetach(seg) })
	}
	return seg.ID, nil
}

// lastDetach destroys a removed segment once nothing maps it.
func (s *Shm) lastDetach(seg *Segment) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if seg.Mode&shmDest != 0 && seg.Mem.Maps() == 0 {
		s.destroyLocked(seg)
	}
}

// destroyLocked removes seg from the table and gives its memory back.
func (s *Shm) destroyLocked(seg *Segment) {
	if s.t.slots[seg.ID%seqMultiplier] != seg {
		return // already gone
	}
	s.t.removeLocked(seg)
	s.pages -= pagesOf(seg.Size)
	seg.Mem.DecRef()
}

// Attach is shmat(2)'s look-up: the segment id for reading (and writing
// unless readOnly), with its attach time and pid updated. The caller
// maps seg.Mem, which counts the attachment, then drops the reference
// Attach took on it.
func (s *Shm) Attach(id int, readOnly bool, c vfs.Cred, pid int) (*Segment, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	seg, err := s.t.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	flag := uint32(0o444)
	if !readOnly {
		flag |= 0o222
	}
	if err := seg.Access(c, flag); err != nil {
		return nil, err
	}
	seg.atime, seg.lpid = s.now().Unix(), pid
	seg.Mem.IncRef() // held until mapped: an IPC_RMID meanwhile frees nothing
	return seg, nil
}

// Find returns the segment whose memory is mem, for shmdt(2).
func (s *Shm) Find(mem *mm.Shm) *Segment {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	for _, seg := range s.t.slots {
		if seg.Mem == mem {
			return seg
		}
	}
	return nil
}

// Detached records a shmdt(2) by pid.
func (s *Shm) Detached(seg *Segment, pid int) {
	s.t.mu.Lock()
	seg.dtime, seg.lpid = s.now().Unix(), pid
	s.t.mu.Unlock()
}

// ShmidDSSize is sizeof(struct shmid64_ds) on x86-64.
const ShmidDSSize = 112

func (s *Shm) putDS(b []byte, seg *Segment) {
	le := binary.LittleEndian
	putPerm(b, &seg.Perm)
	le.PutUint64(b[48:], seg.Size)
	le.PutUint64(b[56:], uint64(seg.atime))
	le.PutUint64(b[64:], uint64(seg.dtime))
	le.PutUint64(b[72:], uint64(seg.ctime))
	le.PutUint32(b[80:], uint32(seg.cpid))
	le.PutUint32(b[84:], uint32(seg.lpid))
	le.PutUint64(b[88:], uint64(seg.Mem.Maps()))
}

// Ctl is shmctl(2). buf is the caller's struct (in for IPC_SET, out for
// the others, ShmidDSSize bytes or struct shminfo64/shm_info); it
// returns the call's result (an identifier for SHM_STAT, the highest
// slot in use for IPC_INFO and SHM_INFO, else 0).
func (s *Shm) Ctl(id, cmd int, buf []byte, c vfs.Cred) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	switch cmd {
	case INFO, ShmInfo:
		clear(buf)
		le := binary.LittleEndian
		if cmd == INFO { // struct shminfo64: shmmax, shmmin, shmmni, shmseg, shmall
			le.PutUint64(buf[0:], s.limits.Max)
			le.PutUint64(buf[8:], 1)
			le.PutUint64(buf[16:], uint64(s.limits.MNI))
			le.PutUint64(buf[24:], uint64(s.limits.MNI))
			le.PutUint64(buf[32:], s.limits.All)
		} else { // struct shm_info: used_ids, shm_tot, shm_rss, shm_swp, ...
			le.PutUint32(buf[0:], uint32(len(s.t.slots)))
			var rss uint64
			for _, seg := range s.t.slots {
				rss += uint64(seg.Mem.Pages())
			}
			le.PutUint64(buf[8:], s.pages)
			le.PutUint64(buf[16:], rss)
		}
		top := 0
		for slot := range s.t.slots {
			top = max(top, slot)
		}
		return top, nil
	case ShmStat, ShmStatAny:
		seg := s.t.slots[id]
		if id < 0 || seg == nil {
			return 0, linux.EINVAL
		}
		if cmd == ShmStat {
			if err := seg.Access(c, 0o444); err != nil {
				return 0, err
			}
		}
		s.putDS(buf, seg)
		return seg.ID, nil
	}
	seg, err := s.t.lookupLocked(id)
	if err != nil {
		return 0, err
	}
	switch cmd {
	case STAT:
		if err := seg.Access(c, 0o444); err != nil {
			return 0, err
		}
		s.putDS(buf, seg)
	case SET, RMID:
		if !seg.Owns(c) {
			return 0, linux.EPERM
		}
		seg.ctime = s.now().Unix()
		if cmd == SET {
			seg.setPerm(buf)
			return 0, nil
		}
		seg.Mode |= shmDest
		s.t.forgetKeyLocked(seg)
		if seg.Mem.Maps() == 0 {
			s.destroyLocked(seg)
		}
	case ShmLock, ShmUnlock:
		if !c.Superuser() {
			return 0, linux.EPERM // without a RLIMIT_MEMLOCK budget
		}
		if cmd == ShmLock {
			seg.Mode |= shmLocked
		} else {
			seg.Mode &^= shmLocked
		}
	default:
		return 0, linux.EINVAL
	}
	return 0, nil
}

// ProcSysvipc is /proc/sysvipc/shm.
func (s *Shm) ProcSysvipc() []byte {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	b := []byte("       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n")
	slots := make([]int, 0, len(s.t.slots))
	for slot := range s.t.slots {
		slots = append(slots, slot)
	}
	sort.Ints(slots)
	for _, slot := range slots {
		seg := s.t.slots[slot]
		b = fmt.Appendf(b, "%10d %10d  %4o %21d %5d %5d  %5d %5d %5d %5d %5d %10d %10d %10d %21d %21d\n",
			seg.Key, seg.ID, seg.Mode, seg.Size, seg.cpid, seg.lpid, seg.Mem.Maps(),
			seg.UID, seg.GID, seg.CUID, seg.CGID, seg.atime, seg.dtime, seg.ctime,
			uint64(seg.Mem.Pages())*mm.PageSize, 0)
	}
	return b
}
