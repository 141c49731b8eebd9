package nvmetest

import (
	"encoding/binary"
)

// regs is BAR0: the controller registers from 0, doorbells from 0x1000
// (stride 4), the MSI-X table and PBA from 0x2000.
type regs struct{ c *Controller }

// CAP is the capabilities register the controller shows.
func (c *Controller) CAP() uint64 {
	if c.opts.CAP != 0 {
		return c.opts.CAP
	}
	// MQES, CQR, TO, CSS = NVM, MPSMIN 4 KiB, MPSMAX 64 KiB.
	return uint64(c.opts.MQES) | 1<<16 | uint64(c.opts.TO)<<24 | 1<<37 | 4<<52
}

func (r regs) Read8(off uint32) uint8   { return uint8(r.Read32(off&^3) >> (8 * (off & 3))) }
func (r regs) Read16(off uint32) uint16 { return uint16(r.Read32(off&^3) >> (8 * (off & 2))) }

func (r regs) Read32(off uint32) uint32 {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if off >= msixTable && off+4 <= bar0Size {
		return binary.LittleEndian.Uint32(c.table[off-msixTable:])
	}
	switch off {
	case 0x00:
		return uint32(c.CAP())
	case 0x04:
		return uint32(c.CAP() >> 32)
	case 0x08:
		return c.opts.Version
	case 0x0c, 0x10:
		return c.intms
	case 0x14:
		return c.cc
	case 0x1c:
		return c.csts
	case 0x24:
		return c.aqa
	case 0x28:
		return uint32(c.asq)
	case 0x2c:
		return uint32(c.asq >> 32)
	case 0x30:
		return uint32(c.acq)
	case 0x34:
		return uint32(c.acq >> 32)
	}
	return 0
}

func (r regs) Write8(off uint32, v uint8) {
	r.c.mu.Lock()
	r.c.errorf("8-bit write at %#x", off)
	r.c.mu.Unlock()
}
func (r regs) Write16(off uint32, v uint16) {
	r.c.mu.Lock()
	r.c.errorf("16-bit write at %#x", off)
	r.c.mu.Unlock()
}

func (r regs) Write32(off uint32, v uint32) {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case off >= msixTable && off+4 <= bar0Size:
		binary.LittleEndian.PutUint32(c.table[off-msixTable:], v)
		return
	case off >= 0x1000:
		c.doorbell(off, v)
		return
	}
	switch off {
	case 0x0c:
		c.intms |= v
	case 0x10:
		c.intms &^= v
	case 0x14:
		c.setCC(v)
	case 0x24:
		c.aqa = v
	case 0x28:
		c.asq = c.asq&^0xffffffff | uint64(v)
	case 0x2c:
		c.asq = c.asq&0xffffffff | uint64(v)<<32
	case 0x30:
		c.acq = c.acq&^0xffffffff | uint64(v)
	case 0x34:
		c.acq = c.acq&0xffffffff | uint64(v)<<32
	default:
		c.errorf("write of %#x to register %#x", v, off)
	}
}

// setCC handles enabling (the admin queue from AQA/ASQ/ACQ, RDY) and
// reset (every queue gone, RDY cleared).
func (c *Controller) setCC(v uint32) {
	was := c.cc
	c.cc = v
	switch {
	case was&1 == 0 && v&1 != 0:
		if c.csts&1 != 0 {
			c.errorf("CC.EN set while CSTS.RDY still 1")
		}
		if v>>7&0xf != 0 || v>>4&7 != 0 {
			c.errorf("CC %#x: page size or command set not the driver's", v)
		}
		if v>>16&0xf != 6 || v>>20&0xf != 4 {
			c.errorf("CC %#x: entry sizes not 64/16", v)
		}
		sqs, cqs := uint16(c.aqa&0xfff)+1, uint16(c.aqa>>16&0xfff)+1
		if c.asq%4096 != 0 || c.acq%4096 != 0 || sqs < 2 || cqs < 2 {
			c.errorf("admin queues %#x/%#x of %d/%d entries", c.asq, c.acq, sqs, cqs)
			c.csts |= 2
			return
		}
		if c.opts.Fatal {
			c.csts |= 2
			return
		}
		c.cqs[0] = &compQueue{id: 0, size: cqs, base: c.acq, phase: 1, ien: true}
		c.sqs[0] = &subQueue{id: 0, size: sqs, base: c.asq}
		if !c.opts.NeverReady {
			c.csts |= 1
		}
	case was&1 != 0 && v&1 == 0:
		c.sqs, c.cqs = map[uint16]*subQueue{}, map[uint16]*compQueue{}
		c.csts = 0
		c.dbs, c.eis = 0, 0
	}
}

// doorbell moves a submission queue's tail (and wakes the worker) or a
// completion queue's head.
func (c *Controller) doorbell(off, v uint32) {
	i := (off - 0x1000) / 4
	qid := uint16(i / 2)
	c.Doorbells[i%2].Add(1)
	if i%2 == 0 {
		sq := c.sqs[qid]
		if sq == nil || v >= uint32(sq.size) {
			c.errorf("submission doorbell %d = %d (queue exists: %v)", qid, v, sq != nil)
			return
		}
		sq.tail = uint16(v)
		c.wake()
		return
	}
	cq := c.cqs[qid]
	if cq == nil || v >= uint32(cq.size) {
		c.errorf("completion doorbell %d = %d (queue exists: %v)", qid, v, cq != nil)
		return
	}
	// The new head must lie between the old head and the tail.
	if (uint32(v)-uint32(cq.head)+uint32(cq.size))%uint32(cq.size) > (uint32(cq.tail)-uint32(cq.head)+uint32(cq.size))%uint32(cq.size) {
		c.errorf("completion doorbell %d = %d beyond tail %d (head %d)", qid, v, cq.tail, cq.head)
		return
	}
	cq.head = uint16(v)
	c.wake() // a full completion queue may have room now
}
