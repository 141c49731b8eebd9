// Package blk drives virtio block devices (virtio 1.0 §5.2) as
// kernel/blk Devices: a request queue per CPU where the device offers
// VIRTIO_BLK_F_MQ and MSI-X gives a vector each (else one queue), each
// queue's vector aimed at the CPU that submits to it, several requests
// in flight on each, completions by interrupt (a goroutine per queue
// sleeps on its vector; nothing polls while the disk is idle), every
// status and length the device returns checked, failures as blk.ErrIO
// with a log line naming the disk and sector, and requests the device
// never completes reported as blk.ErrTimeout after Timeout.
package blk

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	block "shortbread/kernel/blk"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio"
)

// Device IDs: modern (0x1040 + type 2) and transitional.
var IDs = []pci.ID{{Vendor: virtio.Vendor, Device: 0x1042}, {Vendor: virtio.Vendor, Device: 0x1001}}

// Feature bits (§5.2.3).
const (
	featureSizeMax = 1 << 1
	featureSegMax  = 1 << 2
	featureRO      = 1 << 5
	featureBlkSize = 1 << 6
	featureFlush   = 1 << 9
	featureMQ      = 1 << 12
	featureDiscard = 1 << 13
	wantedFeatures = featureSegMax | featureRO | featureBlkSize | featureFlush | featureDiscard
	requestIn      = 0
	requestOut     = 1
	requestFlush   = 4
	requestDiscard = 11
	discardSegLen  = 16 // struct virtio_blk_discard_write_zeroes
	statusOK       = 0
	statusIOErr    = 1
	statusUnsupp   = 2
	headerLen      = 16
	statusOffset   = 512 // the status byte's place in a slot's header page
	maxDataPages   = 16  // per request: 64 KiB
	maxSlots       = 8
	DefaultTimeout = 30 * time.Second
)

// Disk is one virtio block device.
type Disk struct {
	name    string
	t       *virtio.Transport
	dma     virtio.DMA
	kind    pci.IntrKind
	isr     bool // INTx or MSI: read the ISR on each interrupt
	sectors uint64
	ss      int // logical block size
	flush   bool
	ro      bool
	// discard: the largest discard request in 512-byte sectors (0: the
	// device has none) and the alignment it asks for, in sectors.
	discardMax, discardAlign uint64
	segMax                   int
	numQueues                int // num_queues with F_MQ, else 1
	log                      func(format string, args ...any)
	Timeout                  time.Duration
	slotBytes                int // data one request carries
	cpu                      func() int
	qs                       []*queue // request queue i is virtqueue i
}

// queue is one request queue with all a request on it needs: CPUs
// submitting to different queues share no lock, slot or interrupt, and
// a queue's completions wake a goroutine on the CPU its vector is
// aimed at, the one that submits to it.
type queue struct {
	k       *Disk
	q       *virtio.Queue
	irq     pci.IRQ
	slots   chan *slot
	mu      sync.Mutex
	pending map[*slot]bool // requests the device has
	watch   *block.Watch   // times requests out (expire), under mu
}

// slot is one request's DMA memory: a header page (request header at 0,
// status byte at statusOffset) and data pages.
type slot struct {
	hdr  virtio.Page
	data []virtio.Page
	done chan result
	// A request the device did not answer within Timeout: expire
	// marks it expired and sends its waiter a timeout. The slot then
	// goes back to the free ones when both the waiter has left and the
	// device has answered (or failed), whichever comes second, so that
	// no late answer lands in a slot another request uses.
	started           time.Time
	expired, answered bool
	left              bool
	// bufs is the request's descriptor list, kept with the slot (one
	// request at a time) so that a request allocates none.
	bufs []virtio.Buf
}

type result struct {
	n        uint32
	err      error
	timedOut bool
}

// Config is what New needs besides the device.
type Config struct {
	Name string // vda, vdb, ...
	DMA  virtio.DMA
	Log  func(format string, args ...any)
	// Queues is how many request queues are wanted: the number of
	// CPUs. The device's num_queues, and the MSI-X vectors the
	// platform gives, may make it fewer; <= 1, or no F_MQ, or no
	// MSI-X: one queue.
	Queues int
	CPU    func() int // the caller's CPU, to pick its queue (nil: CPU 0)
	// BootCPUIRQs aims every queue's vector at CPU 0 instead of at the
	// CPU that submits to the queue (pci.OnePerCPU): an A/B switch.
	BootCPUIRQs bool
}

// New brings d up as a disk.
func New(d *pci.Device, p pci.Platform, c Config) (*Disk, error) {
	t, err := virtio.Open(d, p)
	if err != nil {
		return nil, err
	}
	want := uint64(wantedFeatures)
	if c.Queues > 1 {
		want |= featureMQ
	}
	feat, err := t.Negotiate(want)
	if err != nil {
		return nil, err
	}
	k := &Disk{name: c.Name, t: t, dma: c.DMA, log: c.Log, cpu: c.CPU, Timeout: DefaultTimeout,
		ss: 512, segMax: maxDataPages, numQueues: 1}
	if k.log == nil {
		k.log = func(string, ...any) {}
	}
	if k.cpu == nil {
		k.cpu = func() int { return 0 }
	}
	if err := k.readConfig(feat); err != nil {
		t.Fail()
		return nil, err
	}
	wanted := max(1, min(c.Queues, k.numQueues, t.NumQueues()))
	cpus := pci.OnePerCPU(wanted) // vector i, queue i's, at CPU i
	if c.BootCPUIRQs {
		clear(cpus)
	}
	kind, irqs, err := d.InterruptsOn(p, cpus)
	if err != nil {
		t.Fail()
		return nil, err
	}
	k.kind, k.isr = kind, kind != pci.MSIX
	n := 1
	if kind == pci.MSIX {
		// The platform may give fewer vectors than asked: one queue
		// each, the CPUs past them sharing (cpu % n).
		n = min(wanted, len(irqs))
		if err := t.SetConfigVector(virtio.NoVector); err != nil {
			t.Fail()
			return nil, err
		}
	}
	pages := min(maxDataPages, k.segMax)
	k.slotBytes = pages * virtio.PageSize
	for i := 0; i < n; i++ {
		vec := uint16(virtio.NoVector)
		if kind == pci.MSIX {
			vec = uint16(i)
		}
		q, err := k.newQueue(i, vec, irqs[i], pages)
		if err != nil {
			t.Fail()
			return nil, err
		}
		k.qs = append(k.qs, q)
	}
	t.DriverOK()
	for _, q := range k.qs {
		go q.complete()
	}
	return k, nil
}

// newQueue sets up virtqueue i on MSI-X vector vec (NoVector: none)
// with its slots, of pages data pages each.
func (k *Disk) newQueue(i int, vec uint16, irq pci.IRQ, pages int) (*queue, error) {
	vq, err := k.t.SetupQueue(i, virtio.MaxQueueSize, vec, k.dma)
	if err != nil {
		return nil, err
	}
	n := min(maxSlots, vq.Size()/(pages+2))
	if n == 0 {
		return nil, fmt.Errorf("virtio-blk %s: queue %d of %d descriptors too small", k.name, i, vq.Size())
	}
	q := &queue{k: k, q: vq, irq: irq, slots: make(chan *slot, n), pending: map[*slot]bool{}}
	for range n {
		s := &slot{done: make(chan result, 1)}
		if s.hdr, err = k.dma.Alloc(); err != nil {
			return nil, err
		}
		for range pages {
			pg, err := k.dma.Alloc()
			if err != nil {
				return nil, err
			}
			s.data = append(s.data, pg)
		}
		s.bufs = make([]virtio.Buf, 0, pages+2)
		q.slots <- s
	}
	q.watch = block.NewWatch(q.expire)
	return q, nil
}

// readConfig reads the geometry (§5.2.4), retrying while the
// configuration generation changes underneath.
func (k *Disk) readConfig(feat uint64) error {
	cfg := k.t.Config()
	for try := 0; ; try++ {
		gen := k.t.ConfigGeneration()
		k.sectors = uint64(cfg.Read32(0)) | uint64(cfg.Read32(4))<<32
		if feat&featureSegMax != 0 {
			if sm := int(cfg.Read32(12)); sm > 0 {
				k.segMax = min(sm, maxDataPages)
			}
		}
		if feat&featureBlkSize != 0 {
			k.ss = int(cfg.Read32(20))
		}
		if feat&featureMQ != 0 {
			k.numQueues = max(1, int(cfg.Read16(34)))
		}
		if feat&featureDiscard != 0 {
			// One segment per request is all the driver sends, so
			// max_discard_seg (40) only has to be at least one.
			k.discardMax = uint64(cfg.Read32(36))
			k.discardAlign = uint64(cfg.Read32(44))
			if cfg.Read32(40) == 0 {
				k.discardMax = 0
			}
		}
		if k.t.ConfigGeneration() == gen {
			break
		}
		if try == 10 {
			return fmt.Errorf("virtio-blk %s: configuration keeps changing", k.name)
		}
	}
	if k.ss < 512 || k.ss > virtio.PageSize || k.ss&(k.ss-1) != 0 {
		return fmt.Errorf("virtio-blk %s: block size %d unsupported", k.name, k.ss)
	}
	// Capacity is in 512-byte sectors whatever the block size; sizes in
	// bytes must fit an int64 (file offsets).
	if k.sectors > math.MaxInt64/512 {
		return fmt.Errorf("virtio-blk %s: capacity of %d sectors unsupported", k.name, k.sectors)
	}
	k.sectors = k.sectors * 512 / uint64(k.ss)
	k.flush = feat&featureFlush != 0
	k.ro = feat&featureRO != 0
	return nil
}

func (k *Disk) Name() string    { return k.name }
func (k *Disk) SectorSize() int { return k.ss }
func (k *Disk) Sectors() uint64 { return k.sectors }
func (k *Disk) ReadOnly() bool  { return k.ro }

// Queues is the number of request queues in use.
func (k *Disk) Queues() int { return len(k.qs) }

// Interrupts is the interrupt kind and the number of vectors in use.
func (k *Disk) Interrupts() (pci.IntrKind, int) { return k.kind, len(k.qs) }

// queue is the request queue of the caller's CPU.
func (k *Disk) queue() *queue {
	if len(k.qs) == 1 {
		return k.qs[0]
	}
	return k.qs[k.cpu()%len(k.qs)]
}

// ReadAt reads whole sectors at off.
func (k *Disk) ReadAt(p []byte, off int64) (int, error) { return k.rw(p, off, false) }

// WriteAt writes whole sectors at off.
func (k *Disk) WriteAt(p []byte, off int64) (int, error) {
	if k.ro {
		return 0, block.ErrReadOnly
	}
	return k.rw(p, off, true)
}

// rw splits a transfer into requests of one slot each and keeps as many
// in flight as there are free slots. On failure it reports the bytes
// before the first failed request.
func (k *Disk) rw(p []byte, off int64, write bool) (int, error) {
	if err := block.Check(k, len(p), off); err != nil {
		return 0, err
	}
	per := k.slotBytes
	q := k.queue()
	if len(p) <= per {
		if len(p) == 0 {
			return 0, nil
		}
		s, err := q.slot(off)
		if err != nil {
			return 0, err
		}
		if err := q.do(s, kind(write), p, off); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	errs := make([]error, (len(p)+per-1)/per)
	var wg sync.WaitGroup
	for i := range errs {
		s, err := q.slot(off + int64(i*per))
		if err != nil {
			errs[i] = err
			break
		}
		chunk := p[i*per : min(len(p), (i+1)*per)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = q.do(s, kind(write), chunk, off+int64(i*per))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i * per, err
		}
	}
	return len(p), nil
}

// Flush asks the device to make every completed write durable.
func (k *Disk) Flush() error {
	if !k.flush {
		return nil // no volatile cache to flush (§5.2.6.2)
	}
	q := k.queue()
	s, err := q.slot(0)
	if err != nil {
		return err
	}
	return q.do(s, requestFlush, nil, 0)
}

// CanDiscard reports whether the device takes discard requests.
func (k *Disk) CanDiscard() bool { return k.discardMax != 0 }

// Discard tells the device that the n bytes at off hold nothing worth
// keeping (BLKDISCARD, a file system's freed blocks): one request per
// max_discard_sectors, one segment each. What a later read returns is
// the device's choice (§5.2.6.2), old data or zeros.
func (k *Disk) Discard(off, n int64) error {
	if k.discardMax == 0 {
		return block.ErrNoDiscard
	}
	if k.ro {
		return block.ErrReadOnly
	}
	if err := block.CheckRange(k, off, n); err != nil {
		return err
	}
	for sector, left := uint64(off)/512, uint64(n)/512; left > 0; {
		c := min(left, k.discardMax)
		if a := k.discardAlign; a > 1 && c < left {
			// Pieces but the last end on the device's alignment.
			if end := (sector + c) / a * a; end > sector {
				c = end - sector
			}
		}
		var seg [discardSegLen]byte
		binary.LittleEndian.PutUint64(seg[0:], sector)
		binary.LittleEndian.PutUint32(seg[8:], uint32(c))
		q := k.queue()
		s, err := q.slot(int64(sector) * 512)
		if err != nil {
			return err
		}
		if err := q.do(s, requestDiscard, seg[:], int64(sector)*512); err != nil {
			return err
		}
		sector, left = sector+c, left-c
	}
	return nil
}

// slot waits for a free request slot of q. Slots of requests the device
// never answered stay taken, so a dead device makes this wait time out
// too.
func (q *queue) slot(off int64) (*slot, error) {
	select {
	case s := <-q.slots:
		return s, nil
	default:
	}
	k := q.k
	t := time.NewTimer(k.Timeout)
	defer t.Stop()
	select {
	case s := <-q.slots:
		return s, nil
	case <-t.C:
		return nil, k.fail(uint64(off)/512, fmt.Errorf("%w: no request slot free after %v", block.ErrTimeout, k.Timeout))
	}
}

func kind(write bool) uint32 {
	if write {
		return requestOut
	}
	return requestIn
}

// do runs one request of type typ on q in slot s (taken from q.slots;
// given back here, unless the request timed out): p is what a read
// fills, or what a write or a discard's segment hands the device; nil
// for a flush.
func (q *queue) do(s *slot, typ uint32, p []byte, off int64) error {
	k := q.k
	write := typ != requestIn
	sector := uint64(off) / 512
	if typ == requestDiscard {
		sector = 0 // the segment says where; the header's sector is reserved
	}
	binary.LittleEndian.PutUint32(s.hdr.Mem[0:], typ)
	binary.LittleEndian.PutUint32(s.hdr.Mem[4:], 0)
	binary.LittleEndian.PutUint64(s.hdr.Mem[8:], sector)
	s.hdr.Mem[statusOffset] = 0xff
	bufs := append(s.bufs[:0], virtio.Buf{Phys: s.hdr.Phys, Len: headerLen})
	for i := 0; i*virtio.PageSize < len(p); i++ {
		chunk := p[i*virtio.PageSize : min(len(p), (i+1)*virtio.PageSize)]
		if write {
			copy(s.data[i].Mem, chunk)
		}
		bufs = append(bufs, virtio.Buf{Phys: s.data[i].Phys, Len: uint32(len(chunk)), Write: !write})
	}
	bufs = append(bufs, virtio.Buf{Phys: s.hdr.Phys + statusOffset, Len: 1, Write: true})
	q.mu.Lock()
	if _, err := q.q.Add(bufs, s); err != nil {
		q.mu.Unlock()
		q.slots <- s
		return k.fail(sector, fmt.Errorf("%w: %v", block.ErrIO, err))
	}
	q.pending[s] = true
	s.started = time.Now()
	q.watch.Start(s.started, k.Timeout)
	q.mu.Unlock()
	q.q.Kick()

	r := <-s.done
	if r.timedOut {
		q.mu.Lock()
		s.left = true
		back := s.answered
		if back {
			s.expired, s.answered, s.left = false, false, false
		}
		q.mu.Unlock()
		if back {
			q.slots <- s
		}
		return k.fail(sector, fmt.Errorf("%w after %v", block.ErrTimeout, k.Timeout))
	}
	defer func() { q.slots <- s }()
	if r.err != nil {
		return k.fail(sector, r.err)
	}
	status := s.hdr.Mem[statusOffset]
	if status != statusOK {
		return k.fail(sector, fmt.Errorf("%w: status %d", block.ErrIO, status))
	}
	if !write && p != nil {
		// The device counts the bytes it wrote, status byte included.
		if r.n != uint32(len(p))+1 {
			return k.fail(sector, fmt.Errorf("%w: device wrote %d bytes of %d", block.ErrIO, r.n, len(p)+1))
		}
		for i := 0; i*virtio.PageSize < len(p); i++ {
			copy(p[i*virtio.PageSize:min(len(p), (i+1)*virtio.PageSize)], s.data[i].Mem)
		}
	}
	return nil
}

func (k *Disk) fail(sector uint64, err error) error {
	k.log("virtio-blk %s: sector %d: %v", k.name, sector, err)
	return fmt.Errorf("%s: sector %d: %w", k.name, sector, err)
}

// complete is q's interrupt goroutine: woken by the queue's vector, it
// hands each finished request to its waiter. A device that broke the
// queue fails everything pending on it with ErrIO (the virtqueue stays
// broken, so later requests on it fail too; other queues go on).
func (q *queue) complete() {
	k := q.k
	for {
		if k.isr {
			k.t.ISR()
		}
		for {
			c, ok, err := q.q.Used()
			if err != nil {
				k.log("virtio-blk %s: queue %d: %v", k.name, q.q.Index, err)
				q.failAll(err)
				return
			}
			if !ok {
				break
			}
			s := c.Token.(*slot)
			q.mu.Lock()
			delete(q.pending, s)
			q.answerLocked(s, result{n: c.Len})
			q.mu.Unlock()
		}
		if err := q.irq.Wait(); err != nil {
			q.failAll(err)
			return
		}
	}
}

func (q *queue) failAll(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for s := range q.pending {
		delete(q.pending, s)
		q.answerLocked(s, result{err: fmt.Errorf("%w: %v", block.ErrIO, err)})
	}
}

// answerLocked hands the device's answer for s, no longer pending, to
// its waiter; for an expired request, whose waiter got a timeout, it
// gives the slot back if the waiter has left (else the waiter will).
// Preconditions: q.mu is held.
func (q *queue) answerLocked(s *slot, r result) {
	switch {
	case !s.expired:
		s.done <- r // buffered for the one result
	case s.left:
		s.expired, s.answered, s.left = false, false, false
		q.slots <- s // the slots channel holds them all: never blocks
	default:
		s.answered = true
	}
}

// expire is q's watch's timer: it times out each pending request older
// than Timeout and sets the timer again for the oldest of the rest.
func (q *queue) expire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var next time.Duration
	for s := range q.pending {
		if s.expired {
			continue
		}
		if left := q.k.Timeout - now.Sub(s.started); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		s.expired = true
		s.done <- result{timedOut: true} // empty: the device has not answered
	}
	q.watch.Next(now, next)
}
