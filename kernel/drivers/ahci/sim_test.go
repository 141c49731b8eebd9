package ahci

// A simulated AHCI HBA for the tests: the registers with their side
// effects, memory the "HBA" reaches by bus address, and a disk on each
// port that serves IDENTIFY, DMA EXT, FPDMA QUEUED (completing queued
// commands in any order) and FLUSH CACHE EXT, with faults to inject.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

// simMem is DMA memory: pages at bus addresses; with high set, pages
// asked for without low come from above 4 GiB.
type simMem struct {
	mu     sync.Mutex
	pages  map[uint64][]byte
	next   uint64
	nextHi uint64
	high   bool
	inUse  int
}

func newSimMem(high bool) *simMem {
	return &simMem{pages: map[uint64][]byte{}, next: 1 << 20, nextHi: 1 << 33, high: high}
}

func (m *simMem) Alloc(low bool) (Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := make([]byte, PageSize)
	at := &m.next
	if m.high && !low {
		at = &m.nextHi
	}
	p := Page{Phys: *at, Mem: b}
	m.pages[*at] = b
	*at += PageSize
	m.inUse++
	return p, nil
}

func (m *simMem) Free(p Page) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pages[p.Phys] == nil {
		panic(fmt.Sprintf("free of unknown page %#x", p.Phys))
	}
	delete(m.pages, p.Phys)
	m.inUse--
}

// slice is [pa, pa+n) of memory, which must lie in one page.
func (m *simMem) slice(pa uint64, n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := pa &^ (PageSize - 1)
	b := m.pages[base]
	if b == nil || pa-base+uint64(n) > PageSize {
		return nil, fmt.Errorf("DMA to %#x+%d outside allocated memory", pa, n)
	}
	return b[pa-base : pa-base+uint64(n)], nil
}

// simDisk is the disk on a port.
type simDisk struct {
	data      []byte
	ss        int
	ncq       bool
	atapi     bool
	bad       map[uint64]bool // sectors that fail
	hang      map[uint64]bool // sectors whose commands never complete
	shortPRDB bool            // report one byte less than moved
	strayCI   bool            // claim slot 31 busy
	flushes   int
	maxQueued int // most queued commands outstanding at once
	hugeSize  bool
	// lateTFES: after a queued command fails, the next command issued
	// meets a second task-file error event (with no error in the task
	// file) and the port halts, as QEMU does.
	lateTFES bool
	// lateAlways: every command meets such an event.
	lateAlways bool
	// trim offers DATA SET MANAGEMENT TRIM (word 169), with
	// trimBlocks in word 105 and drat in word 69, as QEMU does for a
	// drive with discard_granularity; trims records the nonzero range
	// entries received (LBA, count), and trimmed sectors read as zeros
	// (QEMU's discard=unmap on a raw file).
	trim       bool
	trimBlocks uint16
	drat       bool
	trims      [][2]uint64
	dsms       int // DSM commands
}

type simPort struct {
	disk                   *simDisk
	clb, fb                uint64
	is, ie, cmd, tfd, sctl uint32
	serr, sact, ci         uint32
	started                uint32 // slots taken from CI for running
	halted                 bool   // stopped by an error until ST is cleared
	late                   bool   // a late task-file error event is due
	queued                 []int  // queued tags accepted, not yet completed
}

// sim is the HBA.
type sim struct {
	mu       sync.Mutex
	mem      *simMem
	cap      uint32
	ghc, is  uint32
	ports    [4]*simPort
	irq      *simIRQ
	seen     []string // protocol errors the HBA noticed
	rng      *rand.Rand
	work     chan struct{}
	stop     chan struct{}
	resets   int
	comreset int
}

func newSim(ncq, s64a bool, disks ...*simDisk) *sim {
	h := &sim{mem: newSimMem(s64a), irq: &simIRQ{c: make(chan struct{}, 1)}, rng: rand.New(rand.NewPCG(1, 2)),
		work: make(chan struct{}, 1), stop: make(chan struct{})}
	h.cap = 3 | 31<<8 | capSCLO
	if ncq {
		h.cap |= capSNCQ
	}
	if s64a {
		h.cap |= capS64A
	}
	for i := range h.ports {
		p := &simPort{tfd: 0x7f}
		if i < len(disks) {
			p.disk = disks[i]
		}
		h.ports[i] = p
	}
	go h.worker()
	return h
}

func (h *sim) errorf(format string, args ...any) {
	h.seen = append(h.seen, fmt.Sprintf(format, args...))
}

// The Region interface (ABAR).
func (h *sim) Read8(off uint32) uint8   { return uint8(h.Read32(off&^3) >> (8 * (off & 3))) }
func (h *sim) Read16(off uint32) uint16 { return uint16(h.Read32(off&^3) >> (8 * (off & 3))) }
func (h *sim) Write8(off uint32, v uint8) {
	h.mu.Lock()
	h.errorf("8-bit write at %#x", off)
	h.mu.Unlock()
}
func (h *sim) Write16(off uint32, v uint16) {
	h.mu.Lock()
	h.errorf("16-bit write at %#x", off)
	h.mu.Unlock()
}

func (h *sim) Read32(off uint32) uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch off {
	case regCAP:
		return h.cap
	case regGHC:
		return h.ghc
	case regIS:
		return h.is
	case regPI:
		return 0xf
	case regVS:
		return 0x10300
	case regCAP2, regBOHC:
		return 0
	}
	if off < portBase || off >= portBase+4*portSize {
		h.errorf("read of %#x", off)
		return 0
	}
	p := h.ports[(off-portBase)/portSize]
	switch (off - portBase) % portSize {
	case pxCLB:
		return uint32(p.clb)
	case pxCLBU:
		return uint32(p.clb >> 32)
	case pxFB:
		return uint32(p.fb)
	case pxFBU:
		return uint32(p.fb >> 32)
	case pxIS:
		return p.is
	case pxIE:
		return p.ie
	case pxCMD:
		return p.cmd
	case pxTFD:
		return p.tfd
	case pxSIG:
		switch {
		case p.disk == nil || p.cmd&cmdFRE == 0:
			return 0xffffffff
		case p.disk.atapi:
			return sigATAPI
		}
		return sigATA
	case pxSSTS:
		if p.disk == nil || p.sctl&0xf == 1 {
			return 0
		}
		return 0x113
	case pxSCTL:
		return p.sctl
	case pxSERR:
		return p.serr
	case pxSACT:
		return p.sact
	case pxCI:
		p := p
		if p.disk != nil && p.disk.strayCI && p.cmd&cmdST != 0 {
			return p.ci | 1<<31
		}
		return p.ci
	}
	return 0
}

func (h *sim) Write32(off uint32, v uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch off {
	case regGHC:
		if v&ghcHR != 0 {
			h.resets++
			h.is = 0
			for _, p := range h.ports {
				*p = simPort{disk: p.disk, tfd: 0x7f}
			}
			v &^= ghcHR
		}
		h.ghc = v
		h.raise()
		return
	case regIS:
		h.is &^= v
		h.update()
		return
	case regBOHC:
		return
	}
	if off < portBase || off >= portBase+4*portSize {
		h.errorf("write of %#x", off)
		return
	}
	pn := int(off-portBase) / portSize
	p := h.ports[pn]
	switch (off - portBase) % portSize {
	case pxCLB:
		p.clb = p.clb&^0xffffffff | uint64(v)
	case pxCLBU:
		p.clb = p.clb&0xffffffff | uint64(v)<<32
	case pxFB:
		p.fb = p.fb&^0xffffffff | uint64(v)
	case pxFBU:
		p.fb = p.fb&0xffffffff | uint64(v)<<32
	case pxIS:
		p.is &^= v
		h.update()
	case pxIE:
		p.ie = v
		h.update()
	case pxCMD:
		if v&cmdFRE != 0 {
			v |= cmdFR
			if p.disk != nil && p.cmd&cmdFRE == 0 {
				p.tfd = 0x50 // the device's first D2H FIS: ready
			}
		} else {
			v &^= cmdFR
		}
		if v&cmdST != 0 {
			if p.cmd&cmdST == 0 && p.tfd&(tfdBSY|tfdDRQ) != 0 {
				h.errorf("port %d started with task file %#x", pn, p.tfd)
			}
			v |= cmdCR
		} else {
			v &^= cmdCR
			p.ci, p.sact, p.queued, p.started, p.halted = 0, 0, nil, 0, false
		}
		if v&cmdCLO != 0 {
			p.tfd &^= tfdBSY | tfdDRQ
			v &^= cmdCLO
		}
		p.cmd = v
	case pxSCTL:
		if p.sctl&0xf == 1 && v&0xf == 0 {
			h.comreset++
			if p.disk != nil {
				p.tfd = 0x50
			}
		}
		p.sctl = v
	case pxSERR:
		p.serr &^= v
	case pxSACT:
		if p.cmd&cmdST == 0 {
			h.errorf("port %d: SACT written while stopped", pn)
		}
		p.sact |= v
	case pxCI:
		if p.cmd&cmdST == 0 {
			h.errorf("port %d: CI written while stopped", pn)
			return
		}
		if v&p.ci != 0 {
			h.errorf("port %d: slot issued twice (CI %#x, new %#x)", pn, p.ci, v)
		}
		p.ci |= v
		select {
		case h.work <- struct{}{}:
		default:
		}
	default:
		h.errorf("write of %#x", off)
	}
}

// update recomputes IS from the ports and interrupts.
// Preconditions: h.mu is held.
func (h *sim) update() {
	for i, p := range h.ports {
		if p.is&p.ie != 0 {
			h.is |= 1 << i
		}
	}
	h.raise()
}

func (h *sim) raise() {
	if h.is != 0 && h.ghc&ghcIE != 0 {
		h.irq.raise()
	}
}

func (h *sim) event(pn int, bits uint32) {
	h.ports[pn].is |= bits
	h.update()
}

// worker takes issued commands: non-queued ones run at once; queued
// ones are accepted (PxCI cleared) and completed later in random order.
func (h *sim) worker() {
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for {
		completing := false
		select {
		case <-h.work:
		case <-tick.C:
			completing = true
		case <-h.stop:
			return
		}
		h.mu.Lock()
		for pn, p := range h.ports {
			p.started &= p.ci
			for p.ci&^p.started != 0 && p.cmd&cmdST != 0 && !p.halted {
				busy := p.ci &^ p.started
				p.started |= busy & -busy
				slot := 0
				for busy&(1<<slot) == 0 {
					slot++
				}
				h.run(pn, slot)
			}
			// Queued commands complete at each tick, in random
			// order, so that those issued meanwhile are in flight
			// together.
			for completing && len(p.queued) > 0 && !p.halted {
				i := h.rng.IntN(len(p.queued))
				tag := p.queued[i]
				p.queued = append(p.queued[:i], p.queued[i+1:]...)
				h.finishQueued(pn, tag)
			}
		}
		h.mu.Unlock()
	}
}

// run executes the command in slot of port pn.
// Preconditions: h.mu is held.
func (h *sim) run(pn, slot int) {
	p := h.ports[pn]
	d := p.disk
	bit := uint32(1) << slot
	if p.late || d.lateAlways {
		p.late = false
		p.tfd = 0x50 | 0x04<<8
		p.halted = true
		h.event(pn, isTFES|isSDBS)
		return
	}
	hdr, err := h.mem.slice(p.clb+uint64(slot)*32, 32)
	if err != nil {
		h.errorf("command header: %v", err)
		p.ci &^= bit
		return
	}
	dw0 := binary.LittleEndian.Uint32(hdr)
	ctba := uint64(binary.LittleEndian.Uint32(hdr[8:])) | uint64(binary.LittleEndian.Uint32(hdr[12:]))<<32
	if h.cap&capS64A == 0 && ctba>>32 != 0 {
		h.errorf("64-bit table address %#x on a 32-bit HBA", ctba)
	}
	tbl, err := h.mem.slice(ctba, 0x80+16*int(dw0>>16))
	if err != nil || dw0&0x1f != fisLen || tbl[0] != fisH2D || tbl[1] != 0x80 {
		h.errorf("bad command table (dw0 %#x, %v)", dw0, err)
		p.ci &^= bit
		return
	}
	var bufs [][]byte
	total := 0
	for i := 0; i < int(dw0>>16); i++ {
		e := tbl[0x80+16*i:]
		dba := uint64(binary.LittleEndian.Uint32(e)) | uint64(binary.LittleEndian.Uint32(e[4:]))<<32
		n := int(binary.LittleEndian.Uint32(e[12:])&0x3fffff) + 1
		if h.cap&capS64A == 0 && dba>>32 != 0 {
			h.errorf("64-bit data address %#x on a 32-bit HBA", dba)
		}
		b, err := h.mem.slice(dba, n)
		if err != nil {
			h.errorf("PRD %d: %v", i, err)
			p.ci &^= bit
			return
		}
		bufs = append(bufs, b)
		total += n
	}
	fis := tbl[:20]
	lba := uint64(fis[4]) | uint64(fis[5])<<8 | uint64(fis[6])<<16 | uint64(fis[8])<<24 | uint64(fis[9])<<32 | uint64(fis[10])<<40
	write := dw0&hdrWrite != 0
	switch op := fis[2]; op {
	case ataIdentify:
		id := d.identify(h)
		for _, b := range bufs {
			id = id[copy(b, id):]
		}
		h.complete(pn, slot, uint32(total), true)
	case ataFlushExt:
		d.flushes++
		h.complete(pn, slot, 0, true)
	case ataReadDMAExt, ataWriteDMAExt:
		if p.sact != 0 {
			h.errorf("non-queued command with queued ones outstanding")
		}
		count := int(fis[12]) | int(fis[13])<<8
		if write != (op == ataWriteDMAExt) || count*d.ss != total {
			h.errorf("DMA EXT: %d sectors for %d bytes, write %v", count, total, write)
		}
		if d.hang[lba] {
			return // stays in CI
		}
		ok := d.transfer(bufs, lba, write)
		h.complete(pn, slot, uint32(total), ok)
	case ataReadFPDMA, ataWriteFPDMA:
		count := int(fis[3]) | int(fis[11])<<8
		if tag := int(fis[12] >> 3); tag != slot || p.sact&bit == 0 {
			h.errorf("FPDMA tag %d in slot %d (SACT %#x)", tag, slot, p.sact)
		}
		if write != (op == ataWriteFPDMA) || count*d.ss != total {
			h.errorf("FPDMA: %d sectors for %d bytes, write %v", count, total, write)
		}
		p.ci &^= bit // accepted
		p.started &^= bit
		h.event(pn, isDHRS)
		if d.hang[lba] {
			return // stays in SACT
		}
		if !d.transfer(bufs, lba, write) {
			p.tfd = 0x41 | 0x04<<8 // ERR, ABRT
			p.halted = true
			p.late = d.lateTFES
			h.event(pn, isTFES)
			return
		}
		p.queued = append(p.queued, slot)
		if n := len(p.queued); n > d.maxQueued {
			d.maxQueued = n
		}
	case ataDSM:
		if p.sact != 0 {
			h.errorf("non-queued command with queued ones outstanding")
		}
		count := int(fis[12]) | int(fis[13])<<8
		if !d.trim || fis[3] != dsmTRIM || !write || count == 0 || count*512 != total || lba != 0 || fis[7] != deviceLBA {
			h.errorf("DSM: trim %v, features %#x, %d blocks for %d bytes, write %v, LBA %d, device %#x", d.trim, fis[3], count, total, write, lba, fis[7])
			h.complete(pn, slot, 0, false)
			return
		}
		if d.trimBlocks != 0 && count > int(d.trimBlocks) {
			h.errorf("DSM of %d blocks, more than word 105's %d", count, d.trimBlocks)
		}
		d.dsms++
		var payload []byte
		for _, b := range bufs {
			payload = append(payload, b...)
		}
		ok := true
		for i := 0; i+8 <= len(payload); i += 8 {
			e := binary.LittleEndian.Uint64(payload[i:])
			at, n := e&(1<<48-1), e>>48
			if n == 0 {
				continue
			}
			d.trims = append(d.trims, [2]uint64{at, n})
			if (at+n)*uint64(d.ss) > uint64(len(d.data)) {
				ok = false // QEMU: EINVAL, the command fails
				break
			}
			clear(d.data[at*uint64(d.ss) : (at+n)*uint64(d.ss)])
		}
		h.complete(pn, slot, uint32(total), ok)
	default:
		h.errorf("unknown command %#x", op)
		p.ci &^= bit
	}
}

// complete ends a non-queued command: the byte count, the status, PxCI.
func (h *sim) complete(pn, slot int, n uint32, ok bool) {
	p := h.ports[pn]
	if !ok {
		p.tfd = 0x51 | 0x40<<8 // ERR, UNC
		p.halted = true
		h.event(pn, isTFES)
		return
	}
	hdr, _ := h.mem.slice(p.clb+uint64(slot)*32, 32)
	if p.disk.shortPRDB {
		n--
	}
	binary.LittleEndian.PutUint32(hdr[4:], n)
	p.tfd = 0x50
	p.ci &^= 1 << slot
	p.started &^= 1 << slot
	h.event(pn, isDHRS)
}

func (h *sim) finishQueued(pn, tag int) {
	p := h.ports[pn]
	p.sact &^= 1 << tag
	h.event(pn, isSDBS)
}

func (d *simDisk) transfer(bufs [][]byte, lba uint64, write bool) bool {
	off := int(lba) * d.ss
	for _, b := range bufs {
		for s := off / d.ss; s < (off+len(b))/d.ss; s++ {
			if d.bad[uint64(s)] {
				return false
			}
		}
		if off+len(b) > len(d.data) {
			return false
		}
		if write {
			copy(d.data[off:], b)
		} else {
			copy(b, d.data[off:])
		}
		off += len(b)
	}
	return true
}

func (d *simDisk) identify(h *sim) []byte {
	id := make([]byte, 512)
	w := func(i int, v uint16) { binary.LittleEndian.PutUint16(id[2*i:], v) }
	model := []byte(fmt.Sprintf("%-40s", "QEMU SATA DISK"))
	for i := 0; i < 40; i += 2 { // two characters a word, the first in the high byte
		id[54+i], id[54+i+1] = model[i+1], model[i]
	}
	w(idCmdSet2, cmdSetLBA48|cmdSetFlushEx)
	w(idCmdSet2En, cmdSetLBA48)
	n := uint64(len(d.data) / d.ss)
	if d.hugeSize {
		n = 1 << 50
	}
	for i := 0; i < 4; i++ {
		w(idLBA48+i, uint16(n>>(16*i)))
	}
	if d.ss != 512 {
		w(idSectorSize, 0x4000|1<<12)
		w(idLogicalSize, uint16(d.ss/2))
		w(idLogicalSize+1, uint16(d.ss/2>>16))
	}
	if d.ncq {
		w(idSATACap, sataNCQ)
		w(idQueueDepth, 31)
	}
	if d.trim {
		w(idDSM, 1)
		w(idDSMBlocks, d.trimBlocks)
		if d.drat {
			w(idAddlSupport, addlDRAT)
		}
	}
	return id
}

// simIRQ is the HBA's interrupt.
type simIRQ struct {
	c      chan struct{}
	mu     sync.Mutex
	closed bool
}

func (i *simIRQ) Wait() error {
	if _, ok := <-i.c; !ok {
		return errors.New("interrupt closed")
	}
	return nil
}

func (i *simIRQ) raise() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return
	}
	select {
	case i.c <- struct{}{}:
	default:
	}
}

func (i *simIRQ) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.closed {
		i.closed = true
		close(i.c)
	}
	return nil
}

// platform gives the driver the simulated ABAR and an MSI.
// With intx, no MSI vector is free and the pin is used.
type simPlatform struct {
	h    *sim
	intx bool
}

func (p simPlatform) Map(b pci.BAR) (pci.Region, error) { return p.h, nil }
func (p simPlatform) AllocMSI(int) (pci.IRQ, uint64, uint32, error) {
	if p.intx {
		return nil, 0, 0, errors.New("no vector free")
	}
	return p.h.irq, 0xfee00000, 0x41, nil
}
func (p simPlatform) INTx(*pci.Device) (pci.IRQ, error) {
	if !p.intx {
		return nil, errors.New("INTx while MSI is there")
	}
	return p.h.irq, nil
}

// simFunction is the ICH9 AHCI function as q35 has it.
func simFunction() *pci.Device {
	devs, _ := pci.Scan(pcitest.Q35())
	for _, d := range devs {
		if d.Class == ClassAHCI {
			return d
		}
	}
	panic("no AHCI function in pcitest.Q35")
}
