package virtio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Split virtqueue layout (§2.4): the descriptor table (16 bytes each),
// the driver's available ring and the device's used ring, each in its
// own page here (queues are limited to 256 entries so each fits).
const (
	MaxQueueSize = 256

	descFlagNext  = 1
	descFlagWrite = 2

	availNoInterrupt = 1
	usedNoNotify     = 1
)

// Buf is one part of a request: Len bytes at bus address Phys, which the
// device writes if Write (else reads).
type Buf struct {
	Phys  uint64
	Len   uint32
	Write bool
}

// Queue is a split virtqueue. Its methods are safe for concurrent use.
type Queue struct {
	Index int
	t     *Transport
	dma   DMA
	size  uint16
	desc  Page
	avail Page
	used  Page

	notifyOff uint32

	mu       sync.Mutex
	free     []uint16 // free descriptor indices
	next     []uint16 // the driver's own copy of each descriptor's next link
	inflight []chain  // by head descriptor
	availIdx uint16
	noIntr   uint32 // availNoInterrupt when the driver asked for no interrupts
	lastUsed uint16
	// outstanding counts the requests made available and not yet used.
	outstanding int
	broken      error
}

// chain is an outstanding request: how many descriptors it has (linked
// from its head by next, which the device cannot change, unlike the
// table it reads) and how many bytes the device may write. Keeping the
// links rather than a slice of indices makes Add allocate nothing.
type chain struct {
	n        uint16
	writable uint32
	live     bool
	token    any
}

// Completion is a request the device finished: its head descriptor, the
// bytes the device wrote, and the token given to Add.
type Completion struct {
	Head  uint16
	Len   uint32
	Token any
}

// SetupQueue creates queue i with at most max entries (fewer if the
// device offers fewer), routes its interrupts to MSI-X vector vec
// (NoVector without MSI-X) and enables it.
func (t *Transport) SetupQueue(i int, max int, vec uint16, dma DMA) (*Queue, error) {
	if i >= t.NumQueues() {
		return nil, fmt.Errorf("virtio: %s: no queue %d", t.Dev.Addr, i)
	}
	c := t.common
	c.Write16(cfgQueueSelect, uint16(i))
	n := int(c.Read16(cfgQueueSize))
	if n == 0 {
		return nil, fmt.Errorf("virtio: %s: queue %d unavailable", t.Dev.Addr, i)
	}
	n = min(n, max, MaxQueueSize)
	// Sizes are powers of two (§2.4); take the largest that fits.
	for n&(n-1) != 0 {
		n &= n - 1
	}
	q := &Queue{Index: i, t: t, dma: dma, size: uint16(n), inflight: make([]chain, n), next: make([]uint16, n),
		free: make([]uint16, 0, n)}
	var err error
	for _, p := range []*Page{&q.desc, &q.avail, &q.used} {
		if *p, err = dma.Alloc(); err != nil {
			q.release()
			return nil, err
		}
	}
	for d := n - 1; d >= 0; d-- {
		q.free = append(q.free, uint16(d))
	}
	c.Write16(cfgQueueSize, uint16(n))
	if vec != NoVector {
		c.Write16(cfgQueueMSIX, vec)
		if got := c.Read16(cfgQueueMSIX); got != vec {
			q.release()
			return nil, fmt.Errorf("virtio: %s: queue %d refused MSI-X vector %d (%#x)", t.Dev.Addr, i, vec, got)
		}
	}
	write64(c, cfgQueueDesc, q.desc.Phys)
	write64(c, cfgQueueDriver, q.avail.Phys)
	write64(c, cfgQueueDevice, q.used.Phys)
	q.notifyOff = uint32(c.Read16(cfgQueueNotifyOff)) * t.notifyMul
	if q.notifyOff+2 > t.notifyLen || q.notifyOff+2 < q.notifyOff {
		q.release()
		return nil, fmt.Errorf("virtio: %s: queue %d notify offset %#x outside the notify structure", t.Dev.Addr, i, q.notifyOff)
	}
	c.Write16(cfgQueueEnable, 1)
	return q, nil
}

func write64(r interface{ Write32(uint32, uint32) }, off uint32, v uint64) {
	r.Write32(off, uint32(v))
	r.Write32(off+4, uint32(v>>32))
}

func (q *Queue) release() {
	for _, p := range []Page{q.desc, q.avail, q.used} {
		if p.Mem != nil {
			q.dma.Free(p)
		}
	}
}

// Size is the number of descriptors.
func (q *Queue) Size() int { return int(q.size) }

// ErrFull: not enough free descriptors; wait for completions.
var ErrFull = fmt.Errorf("virtio: queue full")

// Add makes bufs one request and returns its head descriptor; Used hands
// token back with its completion (a driver's record of the request: by
// then the head may already name a newer request). The device sees it
// after Kick.
func (q *Queue) Add(bufs []Buf, token any) (uint16, error) {
	if len(bufs) == 0 {
		return 0, fmt.Errorf("virtio: empty request")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return 0, q.broken
	}
	if len(bufs) > len(q.free) {
		return 0, ErrFull
	}
	// Taken from the top of the free stack: the last taken is the head,
	// so each descriptor links to the one taken before it.
	var writable uint32
	var next uint16
	for i := len(bufs) - 1; i >= 0; i-- {
		b := bufs[i]
		desc := q.free[len(q.free)-1]
		q.free = q.free[:len(q.free)-1]
		d := q.desc.Mem[16*int(desc):]
		binary.LittleEndian.PutUint64(d, b.Phys)
		binary.LittleEndian.PutUint32(d[8:], b.Len)
		var flags uint16
		if b.Write {
			flags |= descFlagWrite
			writable += b.Len
		}
		if i+1 < len(bufs) {
			flags |= descFlagNext
		}
		binary.LittleEndian.PutUint16(d[12:], flags)
		binary.LittleEndian.PutUint16(d[14:], next)
		q.next[desc] = next
		next = desc
	}
	head := next
	q.inflight[head] = chain{n: uint16(len(bufs)), writable: writable, live: true, token: token}
	q.outstanding++
	binary.LittleEndian.PutUint16(q.avail.Mem[4+2*int(q.availIdx%q.size):], head)
	q.availIdx++
	// The index store publishes the entry and descriptors: an atomic
	// store is ordered after the plain stores above (the flags share the
	// word).
	atomic.StoreUint32(word(q.avail.Mem, 0), uint32(q.availIdx)<<16|q.noIntr)
	return head, nil
}

// SuppressInterrupts asks the device not to interrupt when it uses
// buffers of this queue (a hint, §2.4.7: a driver that reclaims sent
// buffers when it sends more needs no interrupt for them).
func (q *Queue) SuppressInterrupts(off bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.noIntr = 0
	if off {
		q.noIntr = availNoInterrupt
	}
	atomic.StoreUint32(word(q.avail.Mem, 0), uint32(q.availIdx)<<16|q.noIntr)
}

func word(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// Kick tells the device about new requests unless it asked not to be.
func (q *Queue) Kick() {
	if atomic.LoadUint32(word(q.used.Mem, 0))&usedNoNotify != 0 {
		return
	}
	q.t.notify.Write16(q.notifyOff, uint16(q.Index))
}

// Used returns the next request the device finished; ok is false when
// there is none. A used entry that names no outstanding request, claims
// more bytes than the request could take, or an index that ran ahead of
// what was made available, breaks the queue: this and every later call
// return ErrDevice.
func (q *Queue) Used() (c Completion, ok bool, err error) { return q.take(false) }

// ErrBadEntry is what UsedTolerant reports for a used entry it stepped
// over; the queue goes on.
var ErrBadEntry = errors.New("virtio: bad used entry")

// UsedTolerant is Used for a driver that can lose one request without
// stopping (a network card's receive queue): a used entry naming no
// request in flight is stepped over and reported as ErrBadEntry with
// ok true and no token (the request it should have named stays with
// the device), and one claiming more bytes than its request could take
// is reported as ErrBadEntry with ok true and the request's token (its
// buffers are the driver's again; Len is the claim). Only an index that
// ran ahead of what was made available still breaks the queue.
func (q *Queue) UsedTolerant() (c Completion, ok bool, err error) { return q.take(true) }

func (q *Queue) take(tolerant bool) (c Completion, ok bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.broken != nil {
		return c, false, q.broken
	}
	idx := uint16(atomic.LoadUint32(word(q.used.Mem, 0)) >> 16)
	if idx == q.lastUsed {
		return c, false, nil
	}
	if pending := q.availIdx - q.lastUsed; idx-q.lastUsed > pending {
		return c, false, q.breakf("used index %d ran past %d requests from %d", idx, pending, q.lastUsed)
	}
	e := q.used.Mem[4+8*int(q.lastUsed%q.size):]
	id, n := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
	if id >= uint32(q.size) || !q.inflight[id].live {
		if !tolerant {
			return c, false, q.breakf("used entry names descriptor %d, not a request in flight", id)
		}
		q.lastUsed++
		return Completion{Head: uint16(id), Len: n}, true, ErrBadEntry
	}
	ch := q.inflight[id]
	if n > ch.writable && !tolerant {
		return c, false, q.breakf("device wrote %d bytes into %d", n, ch.writable)
	}
	q.lastUsed++
	q.inflight[id] = chain{}
	for d, k := uint16(id), uint16(0); k < ch.n; d, k = q.next[d], k+1 {
		q.free = append(q.free, d)
	}
	q.outstanding--
	c = Completion{Head: uint16(id), Len: n, Token: ch.token}
	if n > ch.writable {
		return c, true, ErrBadEntry
	}
	return c, true, nil
}

// Outstanding is the number of requests the device holds.
func (q *Queue) Outstanding() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.outstanding
}

func (q *Queue) breakf(format string, args ...any) error {
	q.broken = fmt.Errorf("%w: %s queue %d: %s", ErrDevice, q.t.Dev.Addr, q.Index, fmt.Sprintf(format, args...))
	return q.broken
}

// Broken is the protocol error that broke the queue, if any.
func (q *Queue) Broken() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.broken
}
