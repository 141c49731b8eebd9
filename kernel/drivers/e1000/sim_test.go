package e1000

import (
	"encoding/binary"
	"fmt"
	"sync"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/intelnic/intelnictest"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

// A simulated 82540EM or 82574L for host tests: the registers the
// driver uses with their side effects (reset, EERD, ICR/IMS/IMC, the
// ring head and tail registers), DMA memory, and a device that consumes
// transmit descriptors when the tail moves and fills receive
// descriptors with the frames it is given. Interrupts are raised like
// QEMU's model raises MSIs: once per new unmasked cause.

const (
	bar0Addr = 0xfeb00000
	bar3Addr = 0xfeb40000
)

// sim is one card.
type sim struct {
	model *Model
	mem   intelnictest.Memory
	dev   *pci.Device
	table *pcitest.Mem // MSI-X table (82574)

	mu       sync.Mutex
	reg      map[uint32]uint32
	eeprom   [64]uint16
	irq      *intelnictest.IRQ
	kind     string // "msix", "msi" or "intx", as the driver allocated
	signaled uint32 // causes an interrupt was raised for and not yet cleared
	inbox    [][]byte
	rxFrame  int
	txFrame  []byte
	txTSE    bool   // the frame's data descriptors ask for segmentation
	tsoSegs  int    // segments cut up
	ctx      []byte // the last TCP/IP context descriptor
	ixsm     bool   // receive checksums ignored, as QEMU's 82540EM
	sent     [][]byte
	holdTX   bool
	out      chan []byte // to the card at the other end of the cable
	gone     bool
	errs     []string
	writes   map[uint32][]uint32 // every value written, per register
	noRA     bool                // reset leaves RAL0/RAH0 empty
}

// newSim makes a card with MAC mac in its EEPROM, loaded into RAL0/RAH0
// at reset unless noRA.
func newSim(m *Model, mac [6]byte, noRA bool) *sim {
	s := &sim{model: m, mem: intelnictest.NewMemory(), table: &pcitest.Mem{B: make([]byte, 16<<10)},
		writes: map[uint32][]uint32{}, noRA: noRA}
	for i := 0; i < 3; i++ {
		s.eeprom[i] = uint16(mac[2*i]) | uint16(mac[2*i+1])<<8
	}
	cfg := pcitest.New()
	a := pci.Addr{Bus: 0, Dev: 3, Fn: 0}
	id := uint16(0x100e)
	if m == E1000E {
		id = 0x10d3
	}
	f := cfg.Add(a, intel, id, 0x020000).Interrupt(1, 11).MemBAR(0, bar0Addr, 128<<10, false, false)
	if m == E1000E {
		f.MemBAR(3, bar3Addr, 16<<10, false, false)
		f.AddCap(pci.CapMSI, pcitest.MSICap())
		f.AddCap(pci.CapMSIX, pcitest.MSIXCap(5, 3, 0, 0x2000))
	}
	devs, _ := pci.Scan(cfg)
	s.dev = devs[0]
	s.resetLocked()
	return s
}

func (s *sim) resetLocked() {
	s.reg = map[uint32]uint32{regSTATUS: statusLU | 1, regCTRL: ctrlFD | ctrlSLU}
	if !s.noRA {
		s.reg[regRAL0] = uint32(s.eeprom[0]) | uint32(s.eeprom[1])<<16
		s.reg[regRAH0] = uint32(s.eeprom[2]) | rahAV
	}
	if s.model.tarc {
		s.reg[regTARC0] = 3 | tarcEnable
	}
	s.signaled = 0
}

func (s *sim) errorf(format string, args ...any) {
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// Platform.

type simPlatform struct{ s *sim }

func (p simPlatform) Map(b pci.BAR) (pci.Region, error) {
	switch b.Addr {
	case bar0Addr:
		return p.s, nil
	case bar3Addr:
		return p.s.table, nil
	}
	return nil, fmt.Errorf("no BAR at %#x", b.Addr)
}

func (p simPlatform) newIRQ(kind string) *intelnictest.IRQ {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	p.s.irq = intelnictest.NewIRQ()
	p.s.kind = kind
	return p.s.irq
}

func (p simPlatform) AllocMSI(int) (pci.IRQ, uint64, uint32, error) {
	kind := "msi"
	// Interrupts enables the MSI-X capability before allocating.
	if off, ok := p.s.dev.Cap(pci.CapMSIX); ok && p.s.dev.Read(off+2, 2)&(1<<15) != 0 {
		kind = "msix"
	}
	return p.newIRQ(kind), 0xfee00000, 0x41, nil
}

func (p simPlatform) INTx(*pci.Device) (pci.IRQ, error) { return p.newIRQ("intx"), nil }

// Register file (pci.Region). The driver uses 32-bit accesses only.

func (s *sim) Read8(off uint32) uint8       { panic("8-bit register read") }
func (s *sim) Read16(off uint32) uint16     { panic("16-bit register read") }
func (s *sim) Write8(off uint32, v uint8)   { panic("8-bit register write") }
func (s *sim) Write16(off uint32, v uint16) { panic("16-bit register write") }
func (s *sim) msix() bool                   { return s.kind == "msix" }
func (s *sim) written(reg uint32) []uint32  { s.mu.Lock(); defer s.mu.Unlock(); return s.writes[reg] }
func (s *sim) get(reg uint32) uint32        { s.mu.Lock(); defer s.mu.Unlock(); return s.reg[reg] }
func (s *sim) set(reg uint32, v uint32)     { s.mu.Lock(); defer s.mu.Unlock(); s.reg[reg] = v }
func (s *sim) interrupts() int64            { s.mu.Lock(); defer s.mu.Unlock(); return s.irq.Count() }
func (s *sim) errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}
func (s *sim) sentFrames() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.sent...)
}
func (s *sim) segments() int { s.mu.Lock(); defer s.mu.Unlock(); return s.tsoSegs }
func (s *sim) setGone()      { s.mu.Lock(); s.gone = true; s.mu.Unlock() }

func (s *sim) Read32(off uint32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return 0xffffffff
	}
	v := s.reg[off]
	switch off {
	case regICR:
		// The 82540EM clears ICR on read; QEMU 7.2's 82574 only when
		// no cause is unmasked (else by writing ones back).
		if s.model == E1000 || s.reg[regIMS] == 0 {
			s.reg[regICR] = 0
			s.signaled = 0
		}
	case regMPC:
		s.reg[regMPC] = 0
	}
	return v
}

func (s *sim) Write32(off uint32, v uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	s.writes[off] = append(s.writes[off], v)
	switch off {
	case regCTRL:
		if v&ctrlRST != 0 {
			s.resetLocked()
			return
		}
		s.reg[off] = v
	case regEERD:
		w := v >> s.model.eerdAddrShift & 0xff
		if v&1 != 0 && w < uint32(len(s.eeprom)) {
			s.reg[off] = uint32(s.eeprom[w])<<16 | s.model.eerdDone | w<<s.model.eerdAddrShift
		}
	case regICR:
		s.reg[regICR] &^= v
		s.update()
	case regIMS:
		s.reg[regIMS] |= v
		s.update()
	case regIMC:
		s.reg[regIMS] &^= v
		s.update()
	case regTDT:
		s.reg[off] = v
		s.transmit()
	case regRDT:
		s.reg[off] = v
		s.fill()
	default:
		s.reg[off] = v
	}
}

// cause raises interrupt causes (adding the 82574's per-queue and
// "other" causes under MSI-X).
func (s *sim) cause(c uint32) {
	if s.msix() {
		if c&(icrRXT0|icrRXDMT) != 0 {
			c |= icrRXQ0
		}
		if c&icrTXDW != 0 {
			c |= icrTXQ0
		}
		if c&(icrLSC|icrRXO) != 0 {
			c |= icrOTHER
		}
	}
	s.reg[regICR] |= c
	s.update()
}

// update raises the interrupt for causes newly pending and unmasked.
func (s *sim) update() {
	pending := s.reg[regICR] & s.reg[regIMS]
	s.signaled &= pending
	if pending&^s.signaled == 0 || s.irq == nil {
		return
	}
	if s.msix() {
		ivar := s.reg[regIVAR]
		routed := uint32(0)
		if ivar>>ivarRxQ0&0xf == ivarValid {
			routed |= icrRXQ0
		}
		if ivar>>ivarTxQ0&0xf == ivarValid {
			routed |= icrTXQ0
		}
		if ivar>>ivarOther&0xf == ivarValid {
			routed |= icrOTHER
		}
		if pending&^s.signaled&routed == 0 {
			return // no vector for these causes
		}
	}
	s.signaled |= pending
	s.irq.Raise()
}

// transmit consumes descriptors from TDH to TDT.
func (s *sim) transmit() {
	if s.reg[regTCTL]&tctlEN == 0 || s.holdTX {
		return
	}
	base := uint64(s.reg[regTDBAH])<<32 | uint64(s.reg[regTDBAL])
	n := s.reg[regTDLEN] / descSize
	did := false
	for s.reg[regTDH] != s.reg[regTDT] && n > 0 {
		h := s.reg[regTDH]
		d, err := s.mem.Slice(base+uint64(h)*descSize, descSize)
		if err != nil {
			s.errorf("transmit descriptor %d: %v", h, err)
			return
		}
		addr := binary.LittleEndian.Uint64(d[0:])
		w := binary.LittleEndian.Uint32(d[txLen:])
		cmd := uint8(w >> 24)
		if cmd&txcDEXT != 0 && w&(0xf<<20) == 0 { // a context descriptor
			s.ctx = append(s.ctx[:0], d...)
		} else if s.sendData(h, d, addr, w) != nil {
			return
		}
		if cmd&txcRS != 0 {
			intelnic.Store32(d, txStatus, intelnic.Load32(d, txStatus)|txdDD)
		}
		s.reg[regTDH] = (h + 1) % n
		did = true
	}
	if did {
		s.cause(icrTXDW)
	}
}

// sendData takes data descriptor h (legacy, or extended with DTYP 1)
// and sends the frame at its end, cut up by the card if the descriptors
// ask for segmentation (by the last context descriptor's layout).
func (s *sim) sendData(h uint32, d []byte, addr uint64, w uint32) error {
	length, cmd := int(w&0xffff), uint8(w>>24)
	ext := cmd&txcDEXT != 0
	if ext && w&(0xf<<20) != dtypData {
		s.errorf("transmit descriptor %d: %#x is neither context nor data", h, w)
		return fmt.Errorf("bad descriptor")
	}
	data, err := s.mem.Slice(addr, length)
	if err != nil {
		s.errorf("transmit buffer of descriptor %d: %v", h, err)
		return err
	}
	if s.txFrame == nil {
		s.txTSE = ext && cmd&txcTSE != 0
	} else if s.txTSE != (ext && cmd&txcTSE != 0) {
		s.errorf("transmit descriptor %d: TSE differs within a frame", h)
	}
	s.txFrame = append(s.txFrame, data...)
	if cmd&txcEOP == 0 {
		return nil
	}
	frame := s.txFrame
	s.txFrame = nil
	frames := [][]byte{frame}
	if s.txTSE {
		c := s.ctx
		if c == nil {
			s.errorf("transmit descriptor %d: TSE with no context", h)
			return nil
		}
		ctl := binary.LittleEndian.Uint32(c[ctxLen:])
		hdr, mss := int(c[ctxHdrLen]), int(binary.LittleEndian.Uint16(c[ctxMSS:]))
		tcp := int(c[ctxTUCSS])
		popts := d[txPopts]
		if int(ctl&0xfffff) != len(frame)-hdr || ctl>>24&(tucmdTCP|tucmdIP|txcTSE|txcDEXT) != tucmdTCP|tucmdIP|txcTSE|txcDEXT ||
			int(c[ctxTUCSO]) != tcp+16 || int(c[ctxIPCSO]) != int(c[ctxIPCSS])+10 ||
			int(binary.LittleEndian.Uint16(c[ctxIPCSE:])) != tcp-1 || popts != poptsIXSM|poptsTXSM {
			s.errorf("TSO of %d bytes: context %x, POPTS %#x", len(frame), c, popts)
			return nil
		}
		s.tsoSegs++
		frames, err = intelnictest.Segment(frame, int(c[ctxIPCSS]), tcp, hdr, mss)
		if err != nil {
			s.errorf("%v", err)
			return nil
		}
	}
	for _, f := range frames {
		if s.out != nil {
			s.out <- f
		} else {
			s.sent = append(s.sent, f)
		}
	}
	return nil
}

// releaseTX lets held transmit descriptors go.
func (s *sim) releaseTX() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdTX = false
	s.transmit()
}

func (s *sim) hold() { s.mu.Lock(); s.holdTX = true; s.mu.Unlock() }

// receive queues a frame from the wire.
func (s *sim) receive(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inbox = append(s.inbox, frame)
	s.fill()
}

// rxDesc is descriptor RDH if the card owns it.
func (s *sim) rxDesc() (d []byte, idx uint32, ok bool) {
	if s.reg[regRCTL]&rctlEN == 0 || s.reg[regRDH] == s.reg[regRDT] {
		return nil, 0, false
	}
	base := uint64(s.reg[regRDBAH])<<32 | uint64(s.reg[regRDBAL])
	h := s.reg[regRDH]
	d, err := s.mem.Slice(base+uint64(h)*descSize, descSize)
	if err != nil {
		s.errorf("receive descriptor %d: %v", h, err)
		return nil, 0, false
	}
	return d, h, true
}

func (s *sim) advanceRDH() {
	s.reg[regRDH] = (s.reg[regRDH] + 1) % (s.reg[regRDLEN] / descSize)
}

// fill writes queued frames into the descriptors the card owns, as many
// buffers per frame as it takes; a frame waits (as QEMU holds it) until
// there is room for all of it.
func (s *sim) fill() {
	got := false
	for len(s.inbox) > 0 {
		frame := s.inbox[0]
		need := (len(frame) + intelnic.BufSize - 1) / intelnic.BufSize
		if s.freeRx() < need {
			break
		}
		for off := 0; off < len(frame); off += intelnic.BufSize {
			d, _, _ := s.rxDesc()
			chunk := frame[off:min(off+intelnic.BufSize, len(frame))]
			status := uint32(rxdDD)
			if off+intelnic.BufSize >= len(frame) {
				status |= rxdEOP | s.rxCsum(frame)
			}
			s.writeRx(d, chunk, uint16(len(chunk)), status)
		}
		s.inbox = s.inbox[1:]
		got = true
	}
	if got {
		s.cause(icrRXT0)
	}
}

// rxCsum is the status and errors bits of a frame's checksums, as the
// card reports them with RXCSUM's offloads on (IXSM instead, as QEMU's
// 82540EM model does, if ixsm).
func (s *sim) rxCsum(frame []byte) uint32 {
	if s.ixsm {
		return rxdIXSM
	}
	checked, ipOK, l4OK := intelnictest.RxChecksums(frame)
	var st uint32
	if s.reg[regRXCSUM]&rxcsumIPOFL != 0 && checked {
		st |= rxdIPCS
		if !ipOK {
			st |= rxeIPE << 8
		}
	}
	if s.reg[regRXCSUM]&rxcsumTUOFL != 0 && checked {
		st |= rxdTCPCS
		if !l4OK {
			st |= rxeTCPE << 8
		}
	}
	return st
}

func (s *sim) freeRx() int {
	if s.reg[regRCTL]&rctlEN == 0 {
		return 0
	}
	n := int(s.reg[regRDLEN] / descSize)
	if n == 0 {
		return 0
	}
	return (int(s.reg[regRDT]) - int(s.reg[regRDH]) + n) % n
}

// writeRx writes one receive descriptor back: data into its buffer (as
// much as fits the buffer), then length, then the status word last.
func (s *sim) writeRx(d, data []byte, length uint16, status uint32) {
	addr := binary.LittleEndian.Uint64(d[0:])
	buf, err := s.mem.Slice(addr, min(len(data), intelnic.BufSize))
	if err != nil {
		s.errorf("receive buffer: %v", err)
		return
	}
	copy(buf, data)
	binary.LittleEndian.PutUint16(d[rxLen:], length)
	intelnic.Store32(d, rxStatus, status)
	s.advanceRDH()
}

// raw writes one descriptor exactly as given (a misbehaving card) and
// raises the receive interrupt; false if the card owns no descriptor.
func (s *sim) raw(data []byte, length uint16, status, errs uint8) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, _, ok := s.rxDesc()
	if !ok {
		return false
	}
	s.writeRx(d, data, length, uint32(status)|uint32(errs)<<8)
	s.cause(icrRXT0)
	return true
}

// cable joins two cards: what one sends, the other receives, in order.
func cable(a, b *sim) {
	for _, p := range [][2]*sim{{a, b}, {b, a}} {
		from, to := p[0], p[1]
		from.out = make(chan []byte, 1024)
		go func() {
			for f := range from.out {
				to.receive(f)
			}
		}()
	}
}

// setLink changes the link state and raises LSC.
func (s *sim) setLink(up bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if up {
		s.reg[regSTATUS] |= statusLU
	} else {
		s.reg[regSTATUS] &^= statusLU
	}
	s.cause(icrLSC)
}

// miss counts n frames lost for want of buffers and raises RXO.
func (s *sim) miss(n uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg[regMPC] += n
	s.cause(icrRXO)
}
