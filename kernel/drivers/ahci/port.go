package ahci

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/blk"
)

// DefaultTimeout bounds each command.
const DefaultTimeout = 30 * time.Second

// dataPages is the data one command moves: 128 KiB in 4 KiB PRD entries
// (4 MiB of bounce buffers for a disk with 32 slots; 256 KiB commands
// were not clearly faster under QEMU on a loaded host, 64 KiB ones
// slower).
const dataPages = 32

// Disk is the ATA disk on one port.
type Disk struct {
	c       *Controller
	port    int
	off     uint32 // the port's registers in ABAR
	name    string
	model   string
	sectors uint64
	ss      int
	ncq     bool
	depth   int  // commands in flight at once
	flush   bool // FLUSH CACHE EXT supported
	// trimBlocks is how many 512-byte blocks of LBA range entries one
	// DATA SET MANAGEMENT TRIM takes (0: no TRIM); drat and rzat say
	// whether a trimmed sector reads the same each time, and as zeros.
	trimBlocks int
	drat, rzat bool
	log        func(format string, args ...any)
	Timeout    time.Duration

	mem   Page    // command list (1 KiB) and received-FIS area
	slots []*slot // by slot number (the NCQ tag)
	free  chan *slot
	// gate admits NCQ commands together (read side) and every other
	// command alone (write side): the two kinds may not mix on a port.
	gate sync.RWMutex

	mu      sync.Mutex
	issued  uint32      // slots the HBA has; protected by mu
	queued  uint32      // of those, NCQ commands; protected by mu
	dead    bool        // the port could not be restarted; protected by mu
	oddBits bool        // reported completion bits for slots never issued; protected by mu
	shut    atomic.Bool // shut down (IDENTIFY failed): the interrupt goroutine leaves it be
	watch   *blk.Watch  // times commands out (expire), under mu
}

// slot is one command slot's memory and state.
type slot struct {
	num   int
	table Page   // command table: FIS, PRD table
	data  []Page // dataPages pages
	done  chan result
	// Set when issued, under Disk.mu:
	bytes   uint32 // data the command moves
	queued  bool
	lba     uint64
	started time.Time
}

type result struct {
	err   error
	retry bool // caught in another command's NCQ error: issue again unqueued
}

func (k *Disk) read32(r uint32) uint32     { return k.c.regs.Read32(k.off + r) }
func (k *Disk) write32(r uint32, v uint32) { k.c.regs.Write32(k.off+r, v) }

// startPort brings port i up (§10.1.2, §10.3.1): engines stopped,
// memory for the command list and received FISes given, FIS reception
// on, the device spun up, and the link and device waited for. It
// returns nil and no error when the port has no ATA disk.
func (c *Controller) startPort(i int) (*Disk, error) {
	k := &Disk{c: c, port: i, off: portBase + uint32(i)*portSize, log: c.log, Timeout: DefaultTimeout}
	k.watch = blk.NewWatch(k.expire)
	if err := k.stopEngines(); err != nil {
		return nil, err
	}
	low := c.cap&capS64A == 0
	var err error
	if k.mem, err = k.alloc(low); err != nil {
		return nil, err
	}
	k.write32(pxCLB, uint32(k.mem.Phys))
	k.write32(pxCLBU, uint32(k.mem.Phys>>32))
	k.write32(pxFB, uint32(k.mem.Phys+fisAreaOff))
	k.write32(pxFBU, uint32((k.mem.Phys+fisAreaOff)>>32))
	k.write32(pxSERR, 0xffffffff)
	k.write32(pxIS, 0xffffffff)
	cmd := k.read32(pxCMD) | cmdFRE
	if c.cap&capSSS != 0 {
		cmd |= cmdSUD
	}
	if cmd&cmdCPD != 0 {
		cmd |= cmdPOD
	}
	k.write32(pxCMD, cmd)
	det := func() uint32 { return k.read32(pxSSTS) & 0xf }
	// A link comes up within 10 ms of COMRESET (SATA 3.x); give a
	// device that is there but not talking yet a second.
	c.poll(20*time.Millisecond, func() bool { return det() == sstsDETPresent })
	if det() == 1 {
		c.poll(time.Second, func() bool { return det() == sstsDETPresent })
	}
	if det() != sstsDETPresent {
		k.release()
		return nil, nil
	}
	ready := func() bool { return k.read32(pxTFD)&(tfdBSY|tfdDRQ) == 0 }
	if !c.poll(3*time.Second, ready) {
		k.comreset()
		if !c.poll(5*time.Second, ready) {
			k.release()
			return nil, fmt.Errorf("device stays busy (task file %#x)", k.read32(pxTFD))
		}
	}
	switch sig := k.read32(pxSIG); sig {
	case sigATA:
	case sigATAPI:
		c.info("ahci %s: port %d: ATAPI device (CD/DVD), not supported", c.addr, i)
		k.release()
		return nil, nil
	default:
		k.release()
		return nil, fmt.Errorf("device signature %#x (port multiplier or unknown), not supported", sig)
	}
	k.write32(pxSERR, 0xffffffff)
	k.write32(pxIS, 0xffffffff)
	k.write32(pxIE, isWanted)
	k.write32(pxCMD, k.read32(pxCMD)|cmdST)
	// One slot for IDENTIFY; identify makes the rest.
	if err := k.makeSlots(1, low); err != nil {
		k.stop()
		return nil, err
	}
	return k, nil
}

func (k *Disk) alloc(low bool) (Page, error) {
	p, err := k.c.dma.Alloc(low)
	if err != nil {
		return Page{}, err
	}
	if len(p.Mem) != PageSize || p.Phys%PageSize != 0 || low && p.Phys+PageSize > 1<<32 {
		return Page{}, fmt.Errorf("DMA page at %#x unusable by a 32-bit HBA", p.Phys)
	}
	return p, nil
}

func (k *Disk) makeSlots(n int, low bool) error {
	for len(k.slots) < n {
		s := &slot{num: len(k.slots), done: make(chan result, 1)}
		k.slots = append(k.slots, s) // release frees what it has
		var err error
		if s.table, err = k.alloc(low); err != nil {
			return err
		}
		for j := 0; j < dataPages; j++ {
			pg, err := k.alloc(low)
			if err != nil {
				return err
			}
			s.data = append(s.data, pg)
		}
	}
	k.free = make(chan *slot, n)
	for _, s := range k.slots {
		k.free <- s
	}
	return nil
}

// stopEngines clears ST and FRE and waits for the HBA to stop using the
// command list and FIS area (§10.1.2: up to 500 ms each).
func (k *Disk) stopEngines() error {
	cmd := k.read32(pxCMD)
	if cmd&(cmdST|cmdCR) != 0 {
		k.write32(pxCMD, cmd&^cmdST)
		if !k.c.poll(500*time.Millisecond, func() bool { return k.read32(pxCMD)&cmdCR == 0 }) {
			return fmt.Errorf("command list engine does not stop")
		}
	}
	cmd = k.read32(pxCMD)
	if cmd&(cmdFRE|cmdFR) != 0 {
		k.write32(pxCMD, cmd&^cmdFRE)
		if !k.c.poll(500*time.Millisecond, func() bool { return k.read32(pxCMD)&cmdFR == 0 }) {
			return fmt.Errorf("FIS receive engine does not stop")
		}
	}
	return nil
}

// comreset resets the link (§10.4.2): PxSCTL.DET = 1 for at least 1 ms.
func (k *Disk) comreset() {
	sctl := k.read32(pxSCTL) &^ 0xf
	k.write32(pxSCTL, sctl|1)
	k.c.wait(2 * time.Millisecond)
	k.write32(pxSCTL, sctl)
	k.c.poll(time.Second, func() bool { return k.read32(pxSSTS)&0xf == sstsDETPresent })
	k.write32(pxSERR, 0xffffffff)
}

// stop shuts a port down for good and gives its memory back when the
// HBA is seen to have let go of it.
func (k *Disk) stop() {
	k.shut.Store(true)
	k.write32(pxIE, 0)
	if k.stopEngines() == nil {
		k.release()
	}
}

func (k *Disk) release() {
	for _, s := range k.slots {
		if s.table.Mem != nil {
			k.c.dma.Free(s.table)
		}
		for _, p := range s.data {
			k.c.dma.Free(p)
		}
	}
	k.slots = nil
	if k.mem.Mem != nil {
		k.c.dma.Free(k.mem)
		k.mem = Page{}
	}
}

// identify reads IDENTIFY DEVICE and sets the disk up from it: every
// value is checked before use.
func (k *Disk) identify(name func() string) error {
	s := <-k.free
	id := make([]byte, 512)
	if err := k.run(s, ataIdentify, 0, id, false, false); err != nil {
		k.free <- s
		return fmt.Errorf("IDENTIFY DEVICE: %v", err)
	}
	k.free <- s
	w := func(i int) uint16 { return binary.LittleEndian.Uint16(id[2*i:]) }
	if w(idGeneral)&(1<<15) != 0 {
		return fmt.Errorf("IDENTIFY: not an ATA device (word 0 %#x)", w(idGeneral))
	}
	if w(idCmdSet2)&cmdSetLBA48 == 0 || w(idCmdSet2En)&cmdSetLBA48 == 0 {
		return fmt.Errorf("IDENTIFY: no 48-bit addressing, not supported")
	}
	k.sectors = uint64(w(idLBA48)) | uint64(w(idLBA48+1))<<16 | uint64(w(idLBA48+2))<<32 | uint64(w(idLBA48+3))<<48
	k.ss = 512
	if v := w(idSectorSize); v&0xc000 == 0x4000 && v&(1<<12) != 0 {
		k.ss = 2 * int(uint32(w(idLogicalSize))|uint32(w(idLogicalSize+1))<<16)
	}
	if k.ss < 512 || k.ss > PageSize || k.ss&(k.ss-1) != 0 {
		return fmt.Errorf("IDENTIFY: logical sector size %d unsupported", k.ss)
	}
	if k.sectors == 0 || k.sectors >= 1<<48 || k.sectors > math.MaxInt64/uint64(k.ss) {
		return fmt.Errorf("IDENTIFY: capacity of %d sectors unusable", k.sectors)
	}
	k.flush = w(idCmdSet2)&cmdSetFlushEx != 0
	if w(idDSM)&1 != 0 {
		// Word 105 of 0 (QEMU's) predates the field: one block.
		k.trimBlocks = min(max(int(w(idDSMBlocks)), 1), trimMaxBlks)
		k.drat, k.rzat = w(idAddlSupport)&addlDRAT != 0, w(idAddlSupport)&addlRZAT != 0
	}
	k.model = ataString(id[27*2 : 47*2])
	k.depth = 1
	if k.c.cap&capSNCQ != 0 && w(idSATACap)&sataNCQ != 0 {
		k.ncq = true
		k.depth = min(int(w(idQueueDepth)&0x1f)+1, int(k.c.cap>>8&0x1f)+1)
	}
	if err := k.makeSlots(k.depth, k.c.cap&capS64A == 0); err != nil {
		return err
	}
	k.name = name()
	mode := "DMA EXT, one command at a time"
	if k.ncq {
		mode = fmt.Sprintf("NCQ, %d commands in flight", k.depth)
	}
	if k.trimBlocks > 0 {
		mode += ", TRIM"
	}
	k.c.info("%s: %q on ahci %s port %d: %d sectors of %d bytes (%d MiB), %s, %s", k.name, k.model, k.c.addr, k.port,
		k.sectors, k.ss, k.sectors*uint64(k.ss)>>20, mode, k.c.kind)
	return nil
}

// ataString decodes an IDENTIFY string: two characters per word, the
// first in the high byte.
func ataString(b []byte) string {
	s := make([]byte, len(b))
	for i := 0; i+1 < len(b); i += 2 {
		s[i], s[i+1] = b[i+1], b[i]
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, string(s)))
}

func (k *Disk) Name() string    { return k.name }
func (k *Disk) SectorSize() int { return k.ss }
func (k *Disk) Sectors() uint64 { return k.sectors }

// Model is the disk's model string from IDENTIFY.
func (k *Disk) Model() string { return k.model }

// NCQ reports whether requests are queued, and how many at once.
func (k *Disk) NCQ() (bool, int) { return k.ncq, k.depth }
