package igb

import (
	"encoding/binary"
	"errors"
)

// PageSize is the unit of DMA memory.
const PageSize = 4096

// Page is a page a device can reach: Phys is its bus address, Mem the
// kernel's view of the same bytes.
type Page struct {
	Phys uint64
	Mem  []byte // PageSize bytes
}

// DMA hands out zeroed pages (physical frames in the kernel, outside the
// Go heap; simulated memory in tests).
type DMA interface {
	Alloc() (Page, error)
	Free(Page)
}

// bufSize is each descriptor's buffer: SRRCTL's 2 KiB, two to a page,
// so a standard frame always fits one descriptor.
const bufSize = 2048

// maxFrame is the largest frame accepted or sent: a 1500-byte payload,
// the 14-byte header and room for one VLAN tag (CRC stripped). The card
// drops longer ones itself while RCTL.LPE is clear; the driver checks
// again, as it checks everything the card writes.
const maxFrame = 1518

// frameMTU is the endpoint's MTU, counted in whole untagged frames: the
// stack's Ethernet layer takes the 14-byte header off for an MTU of
// 1500.
const frameMTU = 1514

// ring is a descriptor ring in one page (at most 256 descriptors) and a
// buffer for each descriptor.
type ring struct {
	desc  Page
	n     int
	pages []Page
	bufs  []buf
}

type buf struct {
	phys uint64
	mem  []byte
}

var errRingSize = errors.New("igb: ring size must be a multiple of 8 from 8 to 256")

func newRing(dma DMA, n int) (*ring, error) {
	if n < 8 || n > PageSize/descSize || n%8 != 0 { // RDLEN/TDLEN: multiples of 128 bytes
		return nil, errRingSize
	}
	r := &ring{n: n}
	var err error
	if r.desc, err = dma.Alloc(); err != nil {
		return nil, err
	}
	for len(r.bufs) < n {
		pg, err := dma.Alloc()
		if err != nil {
			r.free(dma)
			return nil, err
		}
		r.pages = append(r.pages, pg)
		for off := 0; off+bufSize <= PageSize && len(r.bufs) < n; off += bufSize {
			r.bufs = append(r.bufs, buf{phys: pg.Phys + uint64(off), mem: pg.Mem[off : off+bufSize]})
		}
	}
	return r, nil
}

func (r *ring) free(dma DMA) {
	for _, pg := range r.pages {
		dma.Free(pg)
	}
	if r.desc.Mem != nil {
		dma.Free(r.desc)
	}
	r.pages, r.bufs, r.desc = nil, nil, Page{}
}

// d is descriptor i's bytes.
func (r *ring) d(i int) []byte { return r.desc.Mem[i*descSize : (i+1)*descSize] }

// rxRing is the receive ring. The card owns every descriptor but the
// one before next: the tail register is kept at next-1, so a full ring
// is never mistaken for an empty one (RDH == RDT means empty).
type rxRing struct {
	*ring
	next int // the next descriptor the card fills

	// A frame spread over several descriptors (EOP clear) collects here.
	frame []byte
	bad   rxFault
}

// rxFault says why a frame is being dropped.
type rxFault int

const (
	rxOK       rxFault = iota
	rxErrBits          // the card flagged CRC, symbol or sequence errors
	rxBadLen           // a descriptor's length exceeds its buffer
	rxOversize         // the frame grew past maxFrame
	rxRunt             // shorter than an Ethernet header
)

// arm gives descriptor i its buffer in the read format. The card's
// write-back overwrites the address, so it is written every time; the
// zero header address is also the cleared status word.
func (r *rxRing) arm(i int) {
	d := r.d(i)
	binary.LittleEndian.PutUint64(d[0:], r.bufs[i].phys)
	store32(d, rxLen, 0)
	store32(d, rxStatus, 0)
}

// init arms every descriptor; the tail register gets n-1.
func (r *rxRing) init() int {
	for i := 0; i < r.n; i++ {
		r.arm(i)
	}
	r.next = 0
	return r.n - 1
}

// rxCounts are what one harvest saw.
type rxCounts struct {
	frames, bytes  int
	errs, oversize int
}

// harvest takes every descriptor the card has finished (DD), in order,
// starting at next and stopping before the one the driver holds back.
// Each complete good frame goes to deliver (the slice is valid only
// during the call); every descriptor is checked: a length larger than
// its buffer, error bits, a frame longer than maxFrame over several
// descriptors or one shorter than an Ethernet header is dropped and
// counted. Descriptors are re-armed as they are taken. It returns how
// many were taken and the new tail.
func (r *rxRing) harvest(deliver func([]byte), c *rxCounts) (taken, tail int) {
	for taken < r.n-1 {
		i := r.next
		d := r.d(i)
		st := load32(d, rxStatus)
		if st&rxdDD == 0 {
			break
		}
		n := int(binary.LittleEndian.Uint16(d[rxLen:]))
		switch {
		case r.bad != rxOK:
		case n > bufSize:
			r.bad = rxBadLen
		case st&rxeFrame != 0:
			r.bad = rxErrBits
		case len(r.frame)+n > maxFrame:
			r.bad = rxOversize
		default:
			r.frame = append(r.frame, r.bufs[i].mem[:n]...)
		}
		if st&rxdEOP != 0 {
			if r.bad == rxOK && len(r.frame) < 14 {
				r.bad = rxRunt
			}
			switch r.bad {
			case rxOK:
				c.frames++
				c.bytes += len(r.frame)
				deliver(r.frame)
			case rxOversize:
				c.oversize++
				c.errs++
			default:
				c.errs++
			}
			r.frame, r.bad = r.frame[:0], rxOK
		}
		r.arm(i)
		r.next = (i + 1) % r.n
		taken++
	}
	return taken, (r.next + r.n - 1) % r.n
}

// txRing is the transmit ring: descriptors from clean to tail are the
// card's, the rest free (one always stays free: TDH == TDT is empty).
type txRing struct {
	*ring
	tail, clean int
}

func (t *txRing) inflight() int { return (t.tail - t.clean + t.n) % t.n }

func (t *txRing) space() int { return t.n - 1 - t.inflight() }

// reclaim frees the descriptors the card has finished, oldest first; a
// done bit on a descriptor not in flight is never looked at.
func (t *txRing) reclaim() int {
	got := 0
	for t.clean != t.tail && load32(t.d(t.clean), txStatus)&txdDD != 0 {
		t.clean = (t.clean + 1) % t.n
		got++
	}
	return got
}

// put copies a frame (its parts in order) into the next free buffer and
// describes it to the card in one advanced data descriptor, asking for
// its status to be reported. The caller has checked space() and that
// the frame fits a buffer; the new tail is for the tail register.
func (t *txRing) put(parts [][]byte) (size, tail int) {
	i := t.tail
	b := t.bufs[i].mem
	for _, p := range parts {
		size += copy(b[size:], p)
	}
	d := t.d(i)
	binary.LittleEndian.PutUint64(d[0:], t.bufs[i].phys)
	store32(d, txCmdLen, uint32(size)|txdtypData|txcEOP|txcIFCS|txcRS|txcDEXT)
	store32(d, txStatus, uint32(size)<<txPaylen) // DD clear
	t.tail = (i + 1) % t.n
	return size, t.tail
}
