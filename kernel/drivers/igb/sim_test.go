package igb

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/intelnic/intelnictest"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

// A simulated 82576 for host tests, after the datasheet and QEMU's
// model of it: the registers the driver uses with their side effects
// (reset, EERD, MDIC, ICR/IMS/IMC, GPIE, EICR/EIMS/EIAC, IVAR, the queue
// enables, the ring head and tail registers), DMA memory, and a device
// that consumes advanced transmit descriptors when the tail moves and
// writes received frames back in the advanced format. After a reset the
// link is down until the driver restarts auto-negotiation, as in QEMU.
//
// With simI350 set (an i350's device ID and one of its four ports), the
// card is an i350 port as its datasheet describes what differs from the
// 82576 (model.go): the port's number in STATUS, its MAC address in its
// own section of the NVM (port 0's address at word 0, so that reading the
// wrong section gives the wrong address), and a reset that loads the
// port's configuration (RAL0/RAH0) a little later and only then sets the
// port's EEMNGCTL.CFG_DONE bit; touching RAL0 or the NVM before that is
// an error.

const (
	bar0Addr = 0xfeb00000
	bar3Addr = 0xfeb80000
)

// sim is one card.
type sim struct {
	mem   intelnictest.Memory
	dev   *pci.Device
	table *pcitest.Mem // MSI-X table

	i350      bool
	port      int
	mu        sync.Mutex
	reg       map[uint32]uint32
	eeprom    [0x200]uint16
	loading   bool // a reset's configuration load is under way (i350)
	loadPolls int  // EEMNGCTL reads left until it ends
	irq       *intelnictest.IRQ
	kind      string // "msix", "msi" or "intx", as the driver allocated
	signaled  uint32 // legacy causes an interrupt was raised for and not yet cleared
	esignaled uint32 // the same for EICR's vector bits (MSI-X)
	inbox     [][]byte
	txFrame   []byte
	txFirst   uint32 // the frame's first descriptor's second word (PAYLEN, POPTS)
	txTSE     bool   // ... and whether it asked for segmentation
	tsoSegs   int    // segments cut up
	ctx       []byte // the last context descriptor
	sent      [][]byte
	holdTX    bool
	out       chan []byte // to the card at the other end of the cable
	gone      bool
	errs      []string
	writes    map[uint32][]uint32 // every value written, per register
	noRA      bool                // reset leaves RAL0/RAH0 empty
	noAN      bool                // the PHY ignores auto-negotiation restarts
}

// newSim makes an 82576 with MAC mac in its EEPROM, loaded into
// RAL0/RAH0 at reset unless noRA.
func newSim(mac [6]byte, noRA bool) *sim { return newSimPort(0x10c9, 0, mac, noRA) }

// simPortMAC is the address the simulated i350's NVM gives its port 0
// when a test asks for another port.
var simPortMAC = [6]byte{0x52, 0x54, 0, 0x35, 0x35, 0}

// newSimPort makes a card of device ID dev (0x10c9: an 82576; 0x1521:
// an i350) as PCI function port, with MAC mac in its NVM section.
func newSimPort(dev uint16, port int, mac [6]byte, noRA bool) *sim {
	s := &sim{mem: intelnictest.NewMemory(), table: &pcitest.Mem{B: make([]byte, 16<<10)},
		writes: map[uint32][]uint32{}, noRA: noRA, i350: dev == 0x1521, port: port}
	base := 0
	if s.i350 && port > 0 {
		base = 0x40 + 0x40*port
		for i := 0; i < 3; i++ {
			s.eeprom[i] = uint16(simPortMAC[2*i]) | uint16(simPortMAC[2*i+1])<<8
		}
	}
	for i := 0; i < 3; i++ {
		s.eeprom[base+i] = uint16(mac[2*i]) | uint16(mac[2*i+1])<<8
	}
	cfg := pcitest.New()
	a := pci.Addr{Bus: 0, Dev: 3, Fn: 0} // alone on the bus: the port number is STATUS's
	f := cfg.Add(a, 0x8086, dev, 0x020000).Interrupt(1, 11).MemBAR(0, bar0Addr, 128<<10, false, false)
	f.MemBAR(3, bar3Addr, 16<<10, false, false)
	f.AddCap(pci.CapMSI, pcitest.MSICap())
	f.AddCap(pci.CapMSIX, pcitest.MSIXCap(10, 3, 0, 0x2000))
	devs, _ := pci.Scan(cfg)
	s.dev = devs[0]
	s.resetLocked()
	return s
}

// resetLocked is the software reset: everything to its initial value,
// the link down until auto-negotiation completes.
func (s *sim) resetLocked() {
	s.reg = map[uint32]uint32{regEECD: eecdAutoRD, regRXDCTL: dctlEnable, regTXDCTL: dctlEnable,
		regSTATUS: uint32(s.port) << 2}
	s.signaled, s.esignaled = 0, 0
	if !s.i350 {
		s.loadLocked()
		return
	}
	// The load ends after the driver has polled for it a few times,
	// not after a wall-clock delay, so that a loaded host cannot make
	// it outlast the driver's bound.
	s.loading, s.loadPolls = true, 3
}

// loadLocked is the configuration load from the NVM that ends a reset.
func (s *sim) loadLocked() {
	if !s.noRA {
		base := 0
		if s.i350 && s.port > 0 {
			base = 0x40 + 0x40*s.port
		}
		s.reg[regRAL0] = uint32(s.eeprom[base]) | uint32(s.eeprom[base+1])<<16
		s.reg[regRAH0] = uint32(s.eeprom[base+2]) | rahAV
	}
	s.reg[regEEMNGCTL] |= 1 << (18 + s.port)
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
func (s *sim) written(reg uint32) []uint32  { s.mu.Lock(); defer s.mu.Unlock(); return s.writes[reg] }
func (s *sim) get(reg uint32) uint32        { s.mu.Lock(); defer s.mu.Unlock(); return s.reg[reg] }
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

// msixMode is the card's view: GPIE says so (the driver's business).
func (s *sim) msixMode() bool { return s.reg[regGPIE]&gpieMSIXMode != 0 }

func (s *sim) Read32(off uint32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return 0xffffffff
	}
	if off == regEEMNGCTL && s.loading {
		if s.loadPolls--; s.loadPolls == 0 {
			s.loadLocked()
			s.loading = false
		}
	}
	v := s.reg[off]
	if s.loading && (off == regRAL0 || off == regRAH0 || off == regEERD) {
		s.errorf("register %#x read before the reset's configuration load ended", off)
	}
	switch off {
	case regICR:
		// With GPIE.NSICR every read clears ICR; without, only a read
		// that finds an interrupt asserted (modelled as any cause
		// pending and unmasked).
		if s.reg[regGPIE]&gpieNSICR != 0 || v&s.reg[regIMS] != 0 {
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
	case regSTATUS, regEEMNGCTL:
		// read-only
	case regCTRL:
		if v&ctrlRST != 0 {
			s.resetLocked()
			return
		}
		s.reg[off] = v
	case regEERD:
		if s.loading {
			s.errorf("EERD written before the reset's configuration load ended")
		}
		w := v >> eerdAddrShift & 0x3fff
		if v&eerdStart != 0 && w < uint32(len(s.eeprom)) {
			s.reg[off] = uint32(s.eeprom[w])<<16 | eerdDone | w<<eerdAddrShift
		}
	case regMDIC:
		s.reg[off] = v | mdicReady
		if v>>21&0x1f != 1 {
			s.reg[off] |= mdicError
		} else if v&mdicOpWrite != 0 && v>>mdicRegShift&0x1f == phyBMCR &&
			v&(bmcrAutoNeg|bmcrRestartAN) == bmcrAutoNeg|bmcrRestartAN && !s.noAN {
			// Auto-negotiation takes a while, then the link is up.
			time.AfterFunc(20*time.Millisecond, func() { s.setLink(true) })
		}
	case regICR:
		s.reg[regICR] &^= v
		s.update()
	case regIMS:
		s.reg[regIMS] |= v
		s.update()
	case regIMC:
		s.reg[regIMS] &^= v
	case regEIMS:
		s.reg[regEIMS] |= v
		s.update()
	case regEIMC:
		s.reg[regEIMS] &^= v
	case regEICR:
		s.reg[regEICR] &^= v
		s.esignaled &^= v
	case regEIAC:
		if s.msixMode() { // QEMU takes EIAC only in MSI-X mode
			s.reg[off] = v
		}
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

// cause raises legacy causes in ICR and, for queue events, the vector
// their IVAR entry names in EICR (under MSI-X). Both models keep queue
// 0's receive cause in IVAR0's byte 0 and its transmit cause in byte 1.
func (s *sim) cause(icr uint32, rxq, txq bool) {
	s.reg[regICR] |= icr
	if s.msixMode() {
		ivar := s.reg[regIVAR0]
		for _, q := range []struct {
			on    bool
			shift uint
		}{{rxq, 0}, {txq, 8}} {
			if e := ivar >> q.shift & 0xff; q.on && e&ivarValid != 0 {
				s.reg[regEICR] |= 1 << (e & 0x1f)
			}
		}
	}
	s.update()
}

// update raises the interrupt for causes newly pending and unmasked.
func (s *sim) update() {
	if s.irq == nil {
		return
	}
	if s.msixMode() {
		// The ICR causes IMS enables reach the "other" vector.
		if s.reg[regICR]&s.reg[regIMS]&^s.signaled != 0 {
			s.signaled |= s.reg[regICR] & s.reg[regIMS]
			if e := s.reg[regIVARMSC] >> ivarOther & 0xff; e&ivarValid != 0 {
				s.reg[regEICR] |= 1 << (e & 0x1f)
			}
		}
		// A vector fires when its cause bit is newly set and enabled;
		// EIAC clears the bit as the message goes.
		pending := s.reg[regEICR] & s.reg[regEIMS]
		if pending&^1 != 0 {
			s.errorf("EICR %#x: causes on vectors the driver has not", pending)
		}
		if pending&^s.esignaled&1 == 0 {
			return
		}
		s.esignaled |= pending
		s.irq.Raise()
		s.reg[regEICR] &^= s.reg[regEIAC]
		s.esignaled &^= s.reg[regEIAC]
		return
	}
	pending := s.reg[regICR] & s.reg[regIMS]
	s.signaled &= pending
	if pending&^s.signaled == 0 {
		return
	}
	s.signaled |= pending
	s.irq.Raise()
}

// transmit consumes descriptors from TDH to TDT.
func (s *sim) transmit() {
	if s.reg[regTCTL]&tctlEN == 0 || s.reg[regTXDCTL]&dctlEnable == 0 || s.holdTX {
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
		cmd := binary.LittleEndian.Uint32(d[txCmdLen:])
		if cmd&txcDEXT != 0 && cmd&(0xf<<20) == txdtypCtxt {
			s.ctx = append(s.ctx[:0], d...)
		} else {
			if cmd&txcDEXT == 0 || cmd&(0xf<<20) != txdtypData {
				s.errorf("transmit descriptor %d: %#x is not an advanced data descriptor", h, cmd)
			}
			if s.txFrame == nil {
				s.txFirst, s.txTSE = intelnic.Load32(d, txStatus), cmd&txcTSE != 0
			}
			length := int(cmd & 0xffff)
			data, err := s.mem.Slice(addr, length)
			if err != nil {
				s.errorf("transmit buffer of descriptor %d: %v", h, err)
				return
			}
			s.txFrame = append(s.txFrame, data...)
			if cmd&txcEOP != 0 {
				frame := s.txFrame
				s.txFrame = nil
				s.send(frame)
			}
		}
		if cmd&txcRS != 0 {
			intelnic.Store32(d, txStatus, intelnic.Load32(d, txStatus)|txdDD)
		}
		s.reg[regTDH] = (h + 1) % n
		did = true
	}
	if did {
		s.cause(icrTXDW, false, true)
	}
}

// send puts a frame on the wire, cut up first if its descriptors asked
// for segmentation (by the last context descriptor's layout), checking
// the payload length the driver gave.
func (s *sim) send(frame []byte) {
	paylen := int(s.txFirst >> txPaylen)
	frames := [][]byte{frame}
	if s.txTSE {
		c := s.ctx
		if c == nil {
			s.errorf("TSO with no context")
			return
		}
		lens, l4 := intelnic.Load32(c, ctxMACIPLens), intelnic.Load32(c, ctxMSSL4Len)
		eth, ip := int(lens>>ctxMACLenShift&0x7f), int(lens&0x1ff)
		tcp, mss := int(l4>>ctxL4LenShift&0xff), int(l4>>ctxMSSShift)
		hdr := eth + ip + tcp
		tucmd := intelnic.Load32(c, ctxTUCMD)
		if paylen != len(frame)-hdr || tucmd&(tucmdIPv4|tucmdL4TCP) != tucmdIPv4|tucmdL4TCP || s.txFirst&(poptsIXSM|poptsTXSM) != poptsIXSM|poptsTXSM {
			s.errorf("TSO of %d bytes: PAYLEN %d, context %x, POPTS %#x", len(frame), paylen, c, s.txFirst)
			return
		}
		var err error
		s.tsoSegs++
		if frames, err = intelnictest.Segment(frame, eth, eth+ip, hdr, mss); err != nil {
			s.errorf("%v", err)
			return
		}
	} else if paylen != len(frame) {
		s.errorf("frame of %d bytes with PAYLEN %d", len(frame), paylen)
	}
	for _, f := range frames {
		if s.out != nil {
			s.out <- f
		} else {
			s.sent = append(s.sent, f)
		}
	}
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

// rxBufSize is SRRCTL's packet buffer size.
func (s *sim) rxBufSize() int { return int(s.reg[regSRRCTL]&0x7f) << 10 }

// rxDesc is descriptor RDH if the card owns it.
func (s *sim) rxDesc() (d []byte, ok bool) {
	if s.reg[regRCTL]&rctlEN == 0 || s.reg[regRXDCTL]&dctlEnable == 0 || s.reg[regRDH] == s.reg[regRDT] {
		return nil, false
	}
	if s.reg[regSRRCTL]&(7<<25) != srrctlOneBuf {
		s.errorf("SRRCTL %#x: not advanced one-buffer descriptors", s.reg[regSRRCTL])
		return nil, false
	}
	base := uint64(s.reg[regRDBAH])<<32 | uint64(s.reg[regRDBAL])
	h := s.reg[regRDH]
	d, err := s.mem.Slice(base+uint64(h)*descSize, descSize)
	if err != nil {
		s.errorf("receive descriptor %d: %v", h, err)
		return nil, false
	}
	return d, true
}

func (s *sim) freeRx() int {
	n := int(s.reg[regRDLEN] / descSize)
	if s.reg[regRCTL]&rctlEN == 0 || n == 0 {
		return 0
	}
	return (int(s.reg[regRDT]) - int(s.reg[regRDH]) + n) % n
}

// fill writes queued frames into the descriptors the card owns, as many
// buffers per frame as it takes; a frame waits until there is room for
// all of it.
func (s *sim) fill() {
	got := false
	for len(s.inbox) > 0 {
		frame := s.inbox[0]
		bs := s.rxBufSize()
		if bs == 0 {
			return
		}
		need := (len(frame) + bs - 1) / bs
		if s.freeRx() < need {
			break
		}
		for off := 0; off < len(frame); off += bs {
			d, _ := s.rxDesc()
			chunk := frame[off:min(off+bs, len(frame))]
			status := uint32(rxdDD)
			if off+bs >= len(frame) {
				status |= rxdEOP | s.rxCsum(frame)
			}
			s.writeRx(d, chunk, uint16(len(chunk)), status)
		}
		s.inbox = s.inbox[1:]
		got = true
	}
	if got {
		s.cause(icrRXDW, true, false)
	}
}

// rxCsum is the extended status and errors bits of a frame's
// checksums, as the card reports them with RXCSUM's offloads on.
func (s *sim) rxCsum(frame []byte) uint32 {
	checked, ipOK, l4OK := intelnictest.RxChecksums(frame)
	var st uint32
	if s.reg[regRXCSUM]&rxcsumIPOFLD != 0 && checked {
		st |= rxdIPCS
		if !ipOK {
			st |= rxeIPE
		}
	}
	if s.reg[regRXCSUM]&rxcsumTUOFLD != 0 && checked {
		st |= rxdL4I
		if !l4OK {
			st |= rxeL4E
		}
	}
	return st
}

// writeRx writes one receive descriptor back: data into its buffer (as
// much as fits), then the write-back format over the descriptor (its
// first half, the buffer address, becomes packet-type information),
// the status word last.
func (s *sim) writeRx(d, data []byte, length uint16, status uint32) {
	addr := binary.LittleEndian.Uint64(d[0:])
	buf, err := s.mem.Slice(addr, min(len(data), s.rxBufSize()))
	if err != nil {
		s.errorf("receive buffer: %v", err)
		return
	}
	copy(buf, data)
	binary.LittleEndian.PutUint64(d[0:], 0x0000_1234_0000_0011) // RSS hash, packet type
	binary.LittleEndian.PutUint16(d[rxLen:], length)
	intelnic.Store32(d, rxStatus, status)
	s.reg[regRDH] = (s.reg[regRDH] + 1) % (s.reg[regRDLEN] / descSize)
}

// raw writes one descriptor exactly as given (a misbehaving card) and
// raises the receive interrupt; false if the card owns no descriptor.
func (s *sim) raw(data []byte, length uint16, status uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.rxDesc()
	if !ok {
		return false
	}
	s.writeRx(d, data, length, status)
	s.cause(icrRXDW, true, false)
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
	s.cause(icrLSC, false, false)
}

// miss counts n frames lost for want of buffers and raises RXO.
func (s *sim) miss(n uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg[regMPC] += n
	s.cause(icrRXO, false, false)
}
