// Package intelnic is what Intel's e1000-family drivers share: the
// descriptor rings in DMA memory with a buffer for each descriptor
// (arming, harvesting received frames in order with every write-back
// checked, transmit slots and their reclaiming) and the netstack
// endpoint's transmit path. The descriptor layouts differ by card
// (legacy descriptors on the 82540EM and 82574L, advanced ones on the
// 82576); each driver describes its own in a Format and keeps its
// register map and bring-up to itself.
package intelnic

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

// DescSize is a descriptor's size in both the legacy and the advanced
// formats.
const DescSize = 16

// BufSize is each descriptor's buffer: 2 KiB (RCTL.BSIZE or SRRCTL),
// two to a page, so a standard frame always fits one descriptor.
const BufSize = 2048

// MaxFrame is the largest frame accepted or sent: a 1500-byte payload,
// the 14-byte header and room for one VLAN tag (CRC stripped). The
// cards drop longer ones themselves while RCTL.LPE is clear; the driver
// checks again, as it checks everything the card writes.
const MaxFrame = 1518

// FrameMTU is the endpoint's MTU, counted in whole untagged frames: the
// stack's Ethernet layer takes the 14-byte header off for an MTU of
// 1500.
const FrameMTU = 1514

// Format is where a descriptor family keeps what the rings touch. Both
// formats start with the buffer's bus address (8 bytes) when the driver
// hands a descriptor to the card.
type Format struct {
	// Receive write-back: the byte offsets of the 32-bit status word
	// and the 16-bit length, and the status word's bits for "done",
	// "end of packet" and the errors that spoil a frame. Arming clears
	// both words.
	RxStatus, RxLen     int
	RxDD, RxEOP, RxErrs uint32
	// RxCsum, if not nil, says from the status word of a frame's last
	// descriptor whether the card checked both its IPv4 header's and
	// its TCP or UDP checksum and found them right (receive checksum
	// offload, RXCSUM): the stack then skips its own checks. Any other
	// frame (a checksum flagged wrong or not checked: IPv6, fragments,
	// other protocols, a card that ignores the offload) the stack
	// checks itself.
	RxCsum func(status uint32) bool
	// TxWords are the two 32-bit words (at bytes 8 and 12) after the
	// address of a transmit descriptor for a size-byte frame in one
	// buffer, asking for its status to be reported; TxStatus is the
	// offset of the word the card writes TxDD back into.
	TxWords  func(size int) (w8, w12 uint32)
	TxStatus int
	TxDD     uint32

	// TSO, if not nil, is how the card is asked to cut TCP segments
	// over IPv4 into frames itself (see tso.go).
	TSO *TSOFormat
}

// Ring is a descriptor ring in one page (at most 256 descriptors) and
// a buffer for each descriptor.
type Ring struct {
	Desc  Page
	N     int
	Bufs  []Buf
	f     *Format
	pages []Page
}

// Buf is a descriptor's buffer.
type Buf struct {
	Phys uint64
	Mem  []byte // BufSize bytes
}

// ErrRingSize is NewRing's answer to a size the length registers
// (RDLEN/TDLEN: multiples of 128 bytes) or one page cannot hold.
var ErrRingSize = errors.New("intelnic: ring size must be a multiple of 8 from 8 to 256")

// NewRing allocates a ring of n descriptors of format f and their
// buffers.
func NewRing(dma DMA, f *Format, n int) (*Ring, error) {
	if n < 8 || n > PageSize/DescSize || n%8 != 0 {
		return nil, ErrRingSize
	}
	r := &Ring{N: n, f: f}
	var err error
	if r.Desc, err = dma.Alloc(); err != nil {
		return nil, err
	}
	for len(r.Bufs) < n {
		pg, err := dma.Alloc()
		if err != nil {
			r.Free(dma)
			return nil, err
		}
		r.pages = append(r.pages, pg)
		for off := 0; off+BufSize <= PageSize && len(r.Bufs) < n; off += BufSize {
			r.Bufs = append(r.Bufs, Buf{Phys: pg.Phys + uint64(off), Mem: pg.Mem[off : off+BufSize]})
		}
	}
	return r, nil
}

// Free gives the ring's pages back.
func (r *Ring) Free(dma DMA) {
	for _, pg := range r.pages {
		dma.Free(pg)
	}
	if r.Desc.Mem != nil {
		dma.Free(r.Desc)
	}
	r.pages, r.Bufs, r.Desc = nil, nil, Page{}
}

// D is descriptor i's bytes.
func (r *Ring) D(i int) []byte { return r.Desc.Mem[i*DescSize : (i+1)*DescSize] }

// RxRing is the receive ring. The card owns every descriptor but the
// one before Next: the tail register is kept at Next-1, so a full ring
// is never mistaken for an empty one (RDH == RDT means empty).
type RxRing struct {
	*Ring
	Next int // the next descriptor the card fills

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
	rxOversize         // the frame grew past MaxFrame
	rxRunt             // shorter than an Ethernet header
)

// arm gives descriptor i its buffer with the status and length words
// cleared. The advanced format's write-back overwrites the address, so
// it is written every time; there the zero header address is also the
// cleared status word.
func (r *RxRing) arm(i int) {
	d := r.D(i)
	binary.LittleEndian.PutUint64(d[0:], r.Bufs[i].Phys)
	Store32(d, r.f.RxLen, 0)
	Store32(d, r.f.RxStatus, 0)
}

// Init arms every descriptor; the tail register gets what it returns,
// n-1.
func (r *RxRing) Init() int {
	for i := 0; i < r.N; i++ {
		r.arm(i)
	}
	r.Next = 0
	return r.N - 1
}

// RxCounts are what one harvest saw.
type RxCounts struct {
	Frames, Bytes  int
	Errs, Oversize int
}

// Harvest takes every descriptor the card has finished (DD), in order,
// starting at Next and stopping before the one the driver holds back.
// Each complete good frame goes to deliver (the slice is valid only
// during the call), with whether the card vouched for its checksums
// (Format.RxCsum); every descriptor is checked: a length larger than
// its buffer, error bits, a frame longer than MaxFrame over several
// descriptors or one shorter than an Ethernet header is dropped and
// counted. Descriptors are re-armed as they are taken. It returns how
// many were taken and the new tail.
func (r *RxRing) Harvest(deliver func(frame []byte, csumOK bool), c *RxCounts) (taken, tail int) {
	f := r.f
	for taken < r.N-1 {
		i := r.Next
		d := r.D(i)
		st := Load32(d, f.RxStatus)
		if st&f.RxDD == 0 {
			break
		}
		n := int(binary.LittleEndian.Uint16(d[f.RxLen:]))
		switch {
		case r.bad != rxOK:
		case n > BufSize:
			r.bad = rxBadLen
		case st&f.RxErrs != 0:
			r.bad = rxErrBits
		case len(r.frame)+n > MaxFrame:
			r.bad = rxOversize
		default:
			r.frame = append(r.frame, r.Bufs[i].Mem[:n]...)
		}
		if st&f.RxEOP != 0 {
			if r.bad == rxOK && len(r.frame) < 14 {
				r.bad = rxRunt
			}
			switch r.bad {
			case rxOK:
				c.Frames++
				c.Bytes += len(r.frame)
				deliver(r.frame, f.RxCsum != nil && f.RxCsum(st))
			case rxOversize:
				c.Oversize++
				c.Errs++
			default:
				c.Errs++
			}
			r.frame, r.bad = r.frame[:0], rxOK
		}
		r.arm(i)
		r.Next = (i + 1) % r.N
		taken++
	}
	return taken, (r.Next + r.N - 1) % r.N
}

// TxRing is the transmit ring: descriptors from clean to tail are the
// card's, the rest free (one always stays free: TDH == TDT is empty).
// A packet may take several descriptors (a TSO segment: a context
// descriptor and its data); only its last asks for a status report
// (RS), as the cards write DD back only there, so last[i], for the
// first descriptor i of each packet, is where to look.
type TxRing struct {
	*Ring
	tail, clean int
	last        []int
}

func (t *TxRing) inflight() int { return (t.tail - t.clean + t.N) % t.N }

func (t *TxRing) space() int { return t.N - 1 - t.inflight() }

// reclaim frees the packets the card has finished, oldest first; a done
// bit on a descriptor not in flight, or on one that is not the last of
// its packet, is never looked at.
func (t *TxRing) reclaim() int {
	got := 0
	for t.clean != t.tail {
		e := t.last[t.clean]
		if Load32(t.D(e), t.f.TxStatus)&t.f.TxDD == 0 {
			break
		}
		n := (e-t.clean+t.N)%t.N + 1
		t.clean = (e + 1) % t.N
		got += n
	}
	return got
}

// put copies a frame (its parts in order) into the next free buffer and
// describes it to the card in one descriptor. The caller has checked
// space() and that the frame fits a buffer; the new tail is for the
// tail register.
func (t *TxRing) put(parts [][]byte) (size, tail int) {
	i := t.tail
	b := t.Bufs[i].Mem
	for _, p := range parts {
		size += copy(b[size:], p)
	}
	d := t.D(i)
	binary.LittleEndian.PutUint64(d[0:], t.Bufs[i].Phys)
	w8, w12 := t.f.TxWords(size)
	Store32(d, 8, w8)
	Store32(d, 12, w12)
	t.last[i] = i
	t.tail = (i + 1) % t.N
	return size, t.tail
}
