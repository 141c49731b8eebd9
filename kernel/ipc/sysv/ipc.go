// Package sysv is System V IPC: shared memory segments (shm.go), with
// the keys, identifiers, permissions and IPC_RMID rules every System V
// object kind shares (this file), as Linux's ipc/util.c has them. The
// system calls are kernel/proc/sys_sysvipc.go.
package sysv

import (
	"encoding/binary"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Flags and commands (linux/ipc.h).
const (
	Private = 0 // IPC_PRIVATE

	Creat  = 0o1000 // IPC_CREAT
	Excl   = 0o2000 // IPC_EXCL
	NoWait = 0o4000 // IPC_NOWAIT

	RMID = 0
	SET  = 1
	STAT = 2
	INFO = 3
)

// seqMultiplier spaces the identifiers of one slot's successive objects
// (SEQ_MULTIPLIER = IPCMNI).
const seqMultiplier = 32768

// Perm is struct kern_ipc_perm: who owns an object and may use it.
type Perm struct {
	Key        int32
	UID, GID   uint32 // owner, changed by IPC_SET
	CUID, CGID uint32 // creator
	Mode       uint32 // permission bits (and, for segments, SHM_DEST/SHM_LOCKED)
	Seq        uint16
	ID         int
}

func newPerm(key int32, mode uint32, c vfs.Cred) Perm {
	return Perm{Key: key, UID: c.EUID, GID: c.EGID, CUID: c.EUID, CGID: c.EGID, Mode: mode & 0o777}
}

// Access checks access flag (its 0o444/0o222 bits: read, write) as
// ipcperms does: owner or creator, then group, then others; root passes.
func (p *Perm) Access(c vfs.Cred, flag uint32) error {
	want := (flag>>6 | flag>>3 | flag) & 7
	granted := p.Mode
	switch {
	case c.EUID == p.UID || c.EUID == p.CUID:
		granted >>= 6
	case c.EGID == p.GID || c.EGID == p.CGID || inGroups(c.Groups, p.GID) || inGroups(c.Groups, p.CGID):
		granted >>= 3
	}
	if want&^granted&7 != 0 && !c.Superuser() {
		return linux.EACCES
	}
	return nil
}

// Owns reports whether c may change or remove the object (IPC_SET,
// IPC_RMID): its owner, its creator or root; otherwise EPERM.
func (p *Perm) Owns(c vfs.Cred) bool {
	return c.Superuser() || c.EUID == p.UID || c.EUID == p.CUID
}

func inGroups(gs []uint32, g uint32) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// putPerm writes struct ipc64_perm (48 bytes on x86-64).
func putPerm(b []byte, p *Perm) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(p.Key))
	le.PutUint32(b[4:], p.UID)
	le.PutUint32(b[8:], p.GID)
	le.PutUint32(b[12:], p.CUID)
	le.PutUint32(b[16:], p.CGID)
	le.PutUint32(b[20:], p.Mode)
	le.PutUint16(b[24:], p.Seq)
}

// setPerm takes IPC_SET's new owner and mode from a struct ipc64_perm.
func (p *Perm) setPerm(b []byte) {
	le := binary.LittleEndian
	p.UID, p.GID = le.Uint32(b[4:]), le.Uint32(b[8:])
	p.Mode = p.Mode&^0o777 | le.Uint32(b[20:])&0o777
}

// table is one kind's objects by identifier and by key.
type table[T any] struct {
	mu     sync.Mutex
	slots  map[int]*T // by slot (identifier mod seqMultiplier)
	keys   map[int32]*T
	seq    uint16
	perm   func(*T) *Perm
	maxIDs int // the kind's limit of objects (SHMMNI, ...)
}

func newTable[T any](perm func(*T) *Perm, max int) *table[T] {
	return &table[T]{slots: map[int]*T{}, keys: map[int32]*T{}, perm: perm, maxIDs: max}
}

// addLocked gives o the lowest free slot and a new identifier; ENOSPC
// when the kind is full.
func (t *table[T]) addLocked(o *T) error {
	if len(t.slots) >= t.maxIDs {
		return linux.ENOSPC
	}
	slot := 0
	for t.slots[slot] != nil {
		slot++
	}
	p := t.perm(o)
	p.Seq = t.seq
	t.seq = (t.seq + 1) % (1<<31/seqMultiplier - 1)
	p.ID = int(p.Seq)*seqMultiplier + slot
	t.slots[slot] = o
	if p.Key != Private {
		t.keys[p.Key] = o
	}
	return nil
}

// lookupLocked finds identifier id: EINVAL for a malformed or free one,
// and for one whose slot now holds another object (its sequence number
// no longer matches: ipc_obtain_object_check).
func (t *table[T]) lookupLocked(id int) (*T, error) {
	if id < 0 {
		return nil, linux.EINVAL
	}
	o := t.slots[id%seqMultiplier]
	if o == nil {
		return nil, linux.EINVAL
	}
	if t.perm(o).ID != id {
		return nil, linux.EINVAL
	}
	return o, nil
}

// removeLocked frees o's slot and key.
func (t *table[T]) removeLocked(o *T) {
	p := t.perm(o)
	delete(t.slots, p.ID%seqMultiplier)
	if p.Key != Private && t.keys[p.Key] == o {
		delete(t.keys, p.Key)
	}
}

// forgetKeyLocked makes o private: a removed but still attached segment
// can no longer be found by its key.
func (t *table[T]) forgetKeyLocked(o *T) {
	p := t.perm(o)
	if p.Key != Private && t.keys[p.Key] == o {
		delete(t.keys, p.Key)
	}
	p.Key = Private
}

// getLocked is the *get(2) look-up: by key, creating with make when
// asked (create). Existing objects are checked for IPC_EXCL, access
// and check.
func (t *table[T]) getLocked(key int32, flags uint32, c vfs.Cred, create func() (*T, error), check func(*T) error) (*T, error) {
	if key != Private {
		if o := t.keys[key]; o != nil {
			if flags&Creat != 0 && flags&Excl != 0 {
				return nil, linux.EEXIST
			}
			if err := t.perm(o).Access(c, flags); err != nil {
				return nil, err
			}
			if check != nil {
				if err := check(o); err != nil {
					return nil, err
				}
			}
			return o, nil
		}
		if flags&Creat == 0 {
			return nil, linux.ENOENT
		}
	}
	o, err := create()
	if err != nil {
		return nil, err
	}
	if err := t.addLocked(o); err != nil {
		return nil, err
	}
	return o, nil
}
