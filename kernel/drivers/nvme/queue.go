package nvme

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"shortbread/kernel/blk"
)

// A queue pair: one submission queue and the completion queue it posts
// to, each a single page (so at most 64 entries). Commands are numbered
// by slot; each slot owns the DMA pages its command transfers through
// and carries a generation in the upper bits of the command identifier,
// so a completion for a command that already finished (a duplicate, or
// one that arrives after its slot was reused) is recognised and dropped.
const (
	maxQueueEntries = PageSize / sqeSize
	slotBits        = 6 // slots per queue < 1<<slotBits
)

// queue is one submission/completion queue pair. Its methods are safe
// for concurrent use.
type queue struct {
	c      *Controller
	id     uint16
	size   uint16 // entries in each ring
	sq, cq Page
	sqDB   uint32 // doorbell offsets
	cqDB   uint32
	free   chan *command

	mu     sync.Mutex
	sqTail uint16
	sqHead uint16 // as the controller last reported it
	cqHead uint16
	phase  uint32 // the phase bit a new completion entry carries
	cmds   []*command
	watch  *blk.Watch // times commands out (expire), under mu
}

// command is one slot: a command the controller may hold, and its
// buffers.
type command struct {
	slot uint16
	gen  uint16
	busy bool // the controller has it (under queue.mu)
	// A command the controller did not complete within the timeout:
	// expire marks it expired and sends its waiter a timeout. The slot
	// goes back to the free ones when both the waiter has left and the
	// controller has completed it (or the queue failed), whichever
	// comes second.
	started                 time.Time
	expired, answered, left bool
	done                    chan result
	prpList                 Page   // the PRP list, for transfers of more than two pages
	data                    []Page // data buffers
}

func (c *command) id() uint16 { return c.slot | c.gen<<slotBits }

// result is what a completion says: command-specific dword 0 and status,
// or an error the driver found in the entry.
type result struct {
	dw0      uint32
	status   Status
	err      error
	timedOut bool
}

// sqe is a submission queue entry (§4.2) before it is laid out.
type sqe struct {
	opcode     uint8
	nsid       uint32
	prp1, prp2 uint64
	cdw        [6]uint32 // dwords 10 to 15
}

// newQueue allocates queue id with size entries and slots commands of
// dataPages pages each.
func (c *Controller) newQueue(id uint16, size, slots, dataPages int) (*queue, error) {
	if slots >= size || slots >= 1<<slotBits || size > maxQueueEntries {
		return nil, fmt.Errorf("nvme %s: queue of %d entries for %d commands", c.name, size, slots)
	}
	q := &queue{c: c, id: id, size: uint16(size), phase: 1, free: make(chan *command, slots),
		sqDB: regDB + 2*uint32(id)*c.cap.stride(), cqDB: regDB + (2*uint32(id)+1)*c.cap.stride()}
	var err error
	if q.sq, err = c.alloc(); err != nil {
		return nil, err
	}
	if q.cq, err = c.alloc(); err != nil {
		return nil, err
	}
	for i := 0; i < slots; i++ {
		cmd := &command{slot: uint16(i), done: make(chan result, 1)}
		if dataPages > 2 {
			if cmd.prpList, err = c.alloc(); err != nil {
				return nil, err
			}
		}
		for j := 0; j < dataPages; j++ {
			pg, err := c.alloc()
			if err != nil {
				return nil, err
			}
			cmd.data = append(cmd.data, pg)
		}
		q.cmds = append(q.cmds, cmd)
		q.free <- cmd
	}
	q.watch = blk.NewWatch(q.expire)
	return q, nil
}

// get waits for a free slot. Slots of commands the controller never
// completed stay taken, so a dead controller makes this time out too.
func (q *queue) get() (*command, error) {
	select {
	case cmd := <-q.free:
		return cmd, nil
	default:
	}
	t := time.NewTimer(q.c.Timeout)
	defer t.Stop()
	select {
	case cmd := <-q.free:
		return cmd, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: no command slot free on queue %d after %v", blk.ErrTimeout, q.id, q.c.Timeout)
	}
}

// run submits e in slot cmd (taken with get; given back here unless the
// command times out) and waits for its completion; on success, done (if
// not nil) runs before the slot's buffers can be reused.
func (q *queue) run(cmd *command, e *sqe, done func()) (result, error) {
	if err := q.submit(cmd, e); err != nil {
		q.free <- cmd
		return result{}, err
	}
	r := <-cmd.done
	if r.timedOut {
		q.mu.Lock()
		id := cmd.id()
		cmd.left = true
		back := cmd.answered
		if back {
			cmd.expired, cmd.answered, cmd.left = false, false, false
		}
		q.mu.Unlock()
		if back {
			q.free <- cmd
		}
		return result{}, fmt.Errorf("%w: command %#x (opcode %#02x) on queue %d not completed after %v%s",
			blk.ErrTimeout, id, e.opcode, q.id, q.c.Timeout, q.c.statusNote())
	}
	defer func() { q.free <- cmd }()
	if r.err != nil {
		return r, r.err
	}
	if r.status != 0 {
		return r, fmt.Errorf("%w: %v", blk.ErrIO, r.status)
	}
	if done != nil {
		done()
	}
	return r, nil
}

var errQueueFull = errors.New("submission queue full")

// submit lays e out at the submission queue's tail and rings the
// doorbell.
func (q *queue) submit(cmd *command, e *sqe) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	next := (q.sqTail + 1) % q.size
	if next == q.sqHead {
		// Never while the controller reports heads truthfully: a queue
		// has more entries than slots.
		return fmt.Errorf("%w: %v (head %d, tail %d)", blk.ErrIO, errQueueFull, q.sqHead, q.sqTail)
	}
	cmd.gen = (cmd.gen + 1) & (1<<(16-slotBits) - 1)
	b := q.sq.Mem[int(q.sqTail)*sqeSize:][:sqeSize]
	clear(b)
	binary.LittleEndian.PutUint32(b[0:], uint32(e.opcode)|uint32(cmd.id())<<16)
	binary.LittleEndian.PutUint32(b[4:], e.nsid)
	binary.LittleEndian.PutUint64(b[24:], e.prp1)
	binary.LittleEndian.PutUint64(b[32:], e.prp2)
	for i, w := range e.cdw {
		binary.LittleEndian.PutUint32(b[40+4*i:], w)
	}
	cmd.busy = true
	cmd.started = time.Now()
	q.watch.Start(cmd.started, q.c.Timeout)
	old := q.sqTail
	q.sqTail = next
	q.ring(q.sqDB, old, next)
	return nil
}

// ring tells the controller that a doorbell moved from old to new: the
// register write (uncached, so ordered after the entry's stores on x86;
// a mutex hand-off in the simulator), or, with shadow doorbells on an
// I/O queue, a store to the shadow and the register write only if the
// controller's event index asks for it (NVMe 1.4 §5.7). The admin
// queue always rings the register, its shadow kept equal for
// controllers that read it.
func (q *queue) ring(db uint32, old, new uint16) {
	c := q.c
	if c.shadow.Mem != nil {
		off := int(db - regDB)
		storeWord(c.shadow.Mem, off, uint32(new)) // a full barrier: the event index is read after
		if q.id != 0 && !needEvent(uint16(loadWord(c.eventIdx.Mem, off)), new, old) {
			return
		}
	}
	c.regs.Write32(db, uint32(new))
}

// needEvent says whether moving a doorbell from old to new passed the
// controller's event index ev.
func needEvent(ev, new, old uint16) bool { return new-ev-1 < new-old }

// reap consumes the completion entries the controller posted, checking
// each, hands their results to the waiters and moves the completion
// queue's head. At most one queue's worth per call, so a controller that
// keeps posting cannot hold the interrupt goroutine forever.
func (q *queue) reap() {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, n := q.cqHead, 0
	for ; n < int(q.size); n++ {
		off := int(q.cqHead) * cqeSize
		dw3 := loadWord(q.cq.Mem, off+12)
		if dw3>>16&1 != q.phase {
			break
		}
		dw0 := binary.LittleEndian.Uint32(q.cq.Mem[off:])
		dw2 := binary.LittleEndian.Uint32(q.cq.Mem[off+8:])
		if q.cqHead++; q.cqHead == q.size {
			q.cqHead, q.phase = 0, q.phase^1
		}
		q.complete(dw0, dw2, dw3)
	}
	if n > 0 {
		q.ring(q.cqDB, old, q.cqHead)
	}
}

// complete checks one completion entry (§4.6) and delivers it.
// Precondition: q.mu held.
func (q *queue) complete(dw0, dw2, dw3 uint32) {
	cid := uint16(dw3)
	sqHead, sqID := uint16(dw2), uint16(dw2>>16)
	slot := int(cid & (1<<slotBits - 1))
	if slot >= len(q.cmds) || !q.cmds[slot].busy || q.cmds[slot].id() != cid {
		// Nothing to hand it to: the command it should name (if any)
		// times out and is reported then.
		q.c.log("nvme %s: queue %d: completion for command %#x, which is not outstanding; ignored", q.c.name, q.id, cid)
		return
	}
	cmd := q.cmds[slot]
	r := result{dw0: dw0, status: Status(dw3 >> 17)}
	switch {
	case sqID != q.id:
		r.err = fmt.Errorf("%w: completion of command %#x names submission queue %d, not %d", blk.ErrIO, cid, sqID, q.id)
	case sqHead >= q.size || (sqHead-q.sqHead+q.size)%q.size > (q.sqTail-q.sqHead+q.size)%q.size:
		r.err = fmt.Errorf("%w: completion of command %#x moves submission head to %d (was %d, tail %d)", blk.ErrIO, cid, sqHead, q.sqHead, q.sqTail)
	default:
		q.sqHead = sqHead
	}
	if r.err != nil {
		q.c.log("nvme %s: queue %d: %v", q.c.name, q.id, r.err)
	}
	cmd.busy = false
	if cmd.expired {
		q.c.log("nvme %s: queue %d: command %#x completed after it timed out", q.c.name, q.id, cid)
	}
	q.answerLocked(cmd, r)
}

// answerLocked hands cmd's result, the controller done with it, to its
// waiter; for an expired command, whose waiter got a timeout, it gives
// the slot back if the waiter has left (else the waiter will): the
// buffers are the driver's again.
// Precondition: q.mu held.
func (q *queue) answerLocked(cmd *command, r result) {
	switch {
	case !cmd.expired:
		cmd.done <- r // buffered for the one result
	case cmd.left:
		cmd.expired, cmd.answered, cmd.left = false, false, false
		q.free <- cmd // the channel holds every slot: never blocks
	default:
		cmd.answered = true
	}
}

// expire is the watch's timer: it times out each outstanding command
// older than the timeout and sets the timer again for the oldest of the
// rest.
func (q *queue) expire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var next time.Duration
	for _, cmd := range q.cmds {
		if !cmd.busy || cmd.expired {
			continue
		}
		if left := q.c.Timeout - now.Sub(cmd.started); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		cmd.expired = true
		cmd.done <- result{timedOut: true} // empty: not completed
	}
	q.watch.Next(now, next)
}

// failAll ends every outstanding command with err (the interrupt is
// gone: nothing would complete them).
func (q *queue) failAll(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, cmd := range q.cmds {
		if !cmd.busy {
			continue
		}
		cmd.busy = false
		q.answerLocked(cmd, result{err: fmt.Errorf("%w: %v", blk.ErrIO, err)})
	}
}
