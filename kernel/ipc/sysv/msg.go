package sysv

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// msgrcv flags and msgctl commands (linux/msg.h).
const (
	MsgNoError = 0o10000
	MsgExcept  = 0o20000
	MsgCopy    = 0o40000

	MsgStat    = 11
	MsgInfo    = 12
	MsgStatAny = 13
)

// MsgLimits are /proc/sys/kernel/msgmax, msgmnb and msgmni.
type MsgLimits struct {
	Max int // bytes in one message
	MNB int // default bytes in one queue (msg_qbytes)
	MNI int // queues
}

type sysvMsg struct {
	typ  int64
	text []byte
}

// MsgQueue is one message queue.
type MsgQueue struct {
	Perm
	msgs         []sysvMsg
	bytes        int
	qbytes       int
	stime, rtime int64
	ctime        int64
	lspid, lrpid int
	removed      bool
	q            vfs.Queue // senders and receivers wait here
}

// Msg is the table of message queues.
type Msg struct {
	t      *table[MsgQueue]
	now    func() time.Time
	limits MsgLimits
}

// NewMsg makes an empty table with Linux 6.1's limits.
func NewMsg(now func() time.Time) *Msg {
	return &Msg{
		t:      newTable(func(q *MsgQueue) *Perm { return &q.Perm }, 32000),
		now:    now,
		limits: MsgLimits{Max: 8192, MNB: 16384, MNI: 32000},
	}
}

// Limits returns the limits; SetLimits changes them.
func (m *Msg) Limits() MsgLimits {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	return m.limits
}

func (m *Msg) SetLimits(l MsgLimits) {
	m.t.mu.Lock()
	m.limits = l
	m.t.maxIDs = l.MNI
	m.t.mu.Unlock()
}

// Get is msgget(2).
func (m *Msg) Get(key int32, flags uint32, c vfs.Cred) (int, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	q, err := m.t.getLocked(key, flags, c, func() (*MsgQueue, error) {
		return &MsgQueue{Perm: newPerm(key, flags, c), qbytes: m.limits.MNB, ctime: m.now().Unix()}, nil
	}, nil)
	if err != nil {
		return 0, err
	}
	return q.ID, nil
}

// wait blocks until ready (called with m.t.mu held, which it drops
// while waiting) reports true, the queue is removed (EIDRM), the call
// may not block (nowait: err) or a signal comes (EINTR: System V calls
// are never restarted).
func (m *Msg) wait(q *MsgQueue, b vfs.Blocking, nowait error, ready func() bool) error {
	ch := make(chan struct{}, 1)
	var cancel func()
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	for {
		if q.removed {
			return linux.EIDRM
		}
		if ready() {
			return nil
		}
		if b.NonBlock {
			return nowait
		}
		if cancel == nil {
			cancel = q.q.Watch(vfs.WakeChan(ch))
			continue // look again, now that a change cannot be missed
		}
		m.t.mu.Unlock()
		vfs.NoteWait(b.Intr)
		select {
		case <-ch:
		case <-b.Intr:
			m.t.mu.Lock()
			return linux.EINTR
		}
		m.t.mu.Lock()
	}
}

// Send is msgsnd(2): a message of type typ (≥ 1) with text, waiting for
// room unless b says not to (EAGAIN).
func (m *Msg) Send(id int, typ int64, text []byte, b vfs.Blocking, c vfs.Cred, pid int) error {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	if typ < 1 || len(text) > m.limits.Max {
		return linux.EINVAL
	}
	q, err := m.t.lookupLocked(id)
	if err != nil {
		return err
	}
	if err := q.Access(c, 0o222); err != nil {
		return err
	}
	// Room: bytes within msg_qbytes, and (as Linux counts) no more
	// messages than msg_qbytes either.
	err = m.wait(q, b, linux.EAGAIN, func() bool {
		return q.bytes+len(text) <= q.qbytes && len(q.msgs)+1 <= q.qbytes
	})
	if err != nil {
		return err
	}
	q.msgs = append(q.msgs, sysvMsg{typ: typ, text: append([]byte(nil), text...)})
	q.bytes += len(text)
	q.stime, q.lspid = m.now().Unix(), pid
	q.q.Notify()
	return nil
}

// pick finds the message msgrcv's typ and flags select, or -1.
func (q *MsgQueue) pick(typ int64, flags int) int {
	switch {
	case flags&MsgCopy != 0:
		if typ >= 0 && typ < int64(len(q.msgs)) {
			return int(typ)
		}
		return -1
	case typ == 0:
		if len(q.msgs) > 0 {
			return 0
		}
	case typ > 0:
		for i, mm := range q.msgs {
			if (mm.typ == typ) != (flags&MsgExcept != 0) {
				return i
			}
		}
	default:
		best := -1
		for i, mm := range q.msgs {
			if mm.typ <= -typ && (best < 0 || mm.typ < q.msgs[best].typ) {
				best = i
			}
		}
		return best
	}
	return -1
}

// Receive is msgrcv(2): it returns the chosen message's type and text
// (cut to size with MSG_NOERROR, else E2BIG), waiting for one unless b
// says not to (ENOMSG). MSG_COPY copies the message at index typ
// without taking it.
func (m *Msg) Receive(id int, size int, typ int64, flags int, b vfs.Blocking, c vfs.Cred, pid int) (int64, []byte, error) {
	if flags&MsgCopy != 0 && (!b.NonBlock || flags&MsgExcept != 0) {
		return 0, nil, linux.EINVAL
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	q, err := m.t.lookupLocked(id)
	if err != nil {
		return 0, nil, err
	}
	if err := q.Access(c, 0o444); err != nil {
		return 0, nil, err
	}
	var i int
	err = m.wait(q, b, linux.ENOMSG, func() bool {
		i = q.pick(typ, flags)
		if i >= 0 && len(q.msgs[i].text) > size && flags&MsgNoError == 0 {
			return true // E2BIG below, the message stays
		}
		return i >= 0
	})
	if err != nil {
		return 0, nil, err
	}
	msg := q.msgs[i]
	text := msg.text
	if len(text) > size {
		if flags&MsgNoError == 0 {
			return 0, nil, linux.E2BIG
		}
		text = text[:size] // the rest is lost, as MSG_NOERROR says
	}
	if flags&MsgCopy != 0 {
		return msg.typ, text, nil
	}
	q.msgs = append(q.msgs[:i:i], q.msgs[i+1:]...)
	q.bytes -= len(msg.text)
	q.rtime, q.lrpid = m.now().Unix(), pid
	q.q.Notify()
	return msg.typ, text, nil
}

// MsqidDSSize is sizeof(struct msqid64_ds) on x86-64.
const MsqidDSSize = 120

func (q *MsgQueue) putDS(b []byte) {
	le := binary.LittleEndian
	putPerm(b, &q.Perm)
	le.PutUint64(b[48:], uint64(q.stime))
	le.PutUint64(b[56:], uint64(q.rtime))
	le.PutUint64(b[64:], uint64(q.ctime))
	le.PutUint64(b[72:], uint64(q.bytes))
	le.PutUint64(b[80:], uint64(len(q.msgs)))
	le.PutUint64(b[88:], uint64(q.qbytes))
	le.PutUint32(b[96:], uint32(q.lspid))
	le.PutUint32(b[100:], uint32(q.lrpid))
}

// Ctl is msgctl(2); buf is struct msqid64_ds (or struct msginfo for the
// INFO commands).
func (m *Msg) Ctl(id, cmd int, buf []byte, c vfs.Cred) (int, error) {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	switch cmd {
	case INFO, MsgInfo:
		// struct msginfo: msgpool, msgmap, msgmax, msgmnb, msgmni,
		// msgssz, msgtql (ints), msgseg (unsigned short).
		clear(buf)
		le := binary.LittleEndian
		msgs, bytes := 0, 0
		for _, q := range m.t.slots {
			msgs += len(q.msgs)
			bytes += q.bytes
		}
		if cmd == MsgInfo {
			le.PutUint32(buf[0:], uint32(len(m.t.slots)))
			le.PutUint32(buf[4:], uint32(msgs))
			le.PutUint32(buf[24:], uint32(bytes))
		} else {
			le.PutUint32(buf[0:], uint32(m.limits.MNI*m.limits.MNB/1024))
			le.PutUint32(buf[4:], uint32(m.limits.MNI*m.limits.MNB/16))
			le.PutUint32(buf[24:], uint32(m.limits.MNI*m.limits.MNB/16))
		}
		le.PutUint32(buf[8:], uint32(m.limits.Max))
		le.PutUint32(buf[12:], uint32(m.limits.MNB))
		le.PutUint32(buf[16:], uint32(m.limits.MNI))
		le.PutUint32(buf[20:], 16)
		le.PutUint16(buf[28:], 0xffff)
		top := 0
		for slot := range m.t.slots {
			top = max(top, slot)
		}
		return top, nil
	case MsgStat, MsgStatAny:
		q := m.t.slots[id]
		if id < 0 || q == nil {
			return 0, linux.EINVAL
		}
		if cmd == MsgStat {
			if err := q.Access(c, 0o444); err != nil {
				return 0, err
			}
		}
		q.putDS(buf)
		return q.ID, nil
	}
	q, err := m.t.lookupLocked(id)
	if err != nil {
		return 0, err
	}
	switch cmd {
	case STAT:
		if err := q.Access(c, 0o444); err != nil {
			return 0, err
		}
		q.putDS(buf)
	case SET:
		if !q.Owns(c) {
			return 0, linux.EPERM
		}
		qb := int(binary.LittleEndian.Uint64(buf[88:]))
		if qb > m.limits.MNB && !c.Superuser() {
			return 0, linux.EPERM // CAP_SYS_RESOURCE raises msg_qbytes past msgmnb
		}
		q.setPerm(buf)
		q.qbytes = qb
		q.ctime = m.now().Unix()
		q.q.Notify() // more room, maybe
	case RMID:
		if !q.Owns(c) {
			return 0, linux.EPERM
		}
		m.t.removeLocked(q)
		q.removed = true
		q.msgs, q.bytes = nil, 0
		q.q.Notify()
	default:
		return 0, linux.EINVAL
	}
	return 0, nil
}
