package virtiotest

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

type queue struct {
	size, maxSize, msix  uint16
	enable               bool
	desc, driver, device uint64
	lastAvail, usedIdx   uint16
}

// regs is BAR4: common configuration at 0, ISR at 0x1000, device
// configuration at 0x2000, notifications at 0x3000 (multiplier 4).
type regs struct {
	d          *Device
	mu         sync.Mutex
	devSel     uint32
	drvSel     uint32
	drvFeat    uint64
	msixConfig uint16
	status     uint8
	qsel       uint16
	queues     []queue
	isr        atomic.Uint32
	// MaxQueueSize is the size each queue offers.
	MaxQueueSize uint16
	// RefuseFeatures makes the device clear FEATURES_OK.
	RefuseFeatures bool
}

func newRegs(d *Device) *regs {
	r := &regs{d: d, queues: make([]queue, d.model.Queues())}
	for i := range r.queues {
		r.queues[i] = queue{maxSize: 256, size: 256, msix: 0xffff}
	}
	return r
}

// Regs exposes knobs of the simulated registers.
func (d *Device) SetQueueMax(n uint16) {
	d.regs.mu.Lock()
	for i := range d.regs.queues {
		d.regs.queues[i].maxSize, d.regs.queues[i].size = n, n
	}
	d.regs.mu.Unlock()
}

// RefuseFeatures makes the device reject any feature set.
func (d *Device) RefuseFeatures() { d.regs.mu.Lock(); d.regs.RefuseFeatures = true; d.regs.mu.Unlock() }

// Status is the device status the driver set.
func (d *Device) Status() uint8 { d.regs.mu.Lock(); defer d.regs.mu.Unlock(); return d.regs.status }

// DriverFeatures is what the driver accepted.
func (d *Device) DriverFeatures() uint64 {
	d.regs.mu.Lock()
	defer d.regs.mu.Unlock()
	return d.regs.drvFeat
}

func (r *regs) features() uint64 { return r.d.model.Features() | 1<<32 }

func (r *regs) read(off uint32, size int) uint32 {
	switch {
	case off >= 0x1000 && off < 0x2000:
		return r.isr.Swap(0)
	case off >= 0x2000 && off < 0x3000:
		cfg := r.d.model.Config()
		o := int(off - 0x2000)
		var b [4]byte
		if o < len(cfg) {
			copy(b[:], cfg[o:])
		}
		return binary.LittleEndian.Uint32(b[:]) & (0xffffffff >> (32 - 8*size))
	case off >= 0x3000:
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var q *queue
	if int(r.qsel) < len(r.queues) {
		q = &r.queues[r.qsel]
	}
	switch off {
	case 0x00:
		return r.devSel
	case 0x04:
		if r.devSel > 1 {
			return 0
		}
		return uint32(r.features() >> (32 * r.devSel))
	case 0x08:
		return r.drvSel
	case 0x0c:
		if r.drvSel > 1 {
			return 0
		}
		return uint32(r.drvFeat >> (32 * r.drvSel))
	case 0x10:
		return uint32(r.msixConfig)
	case 0x12:
		return uint32(len(r.queues))
	case 0x14:
		return uint32(r.status)
	case 0x15:
		return 0
	case 0x16:
		return uint32(r.qsel)
	}
	if q == nil {
		return 0
	}
	switch off {
	case 0x18:
		return uint32(q.size)
	case 0x1a:
		return uint32(q.msix)
	case 0x1c:
		if q.enable {
			return 1
		}
		return 0
	case 0x1e:
		return uint32(r.qsel)
	case 0x20, 0x24, 0x28, 0x2c, 0x30, 0x34:
		v := [...]uint64{q.desc, q.driver, q.device}[(off-0x20)/8]
		return uint32(v >> (32 * ((off % 8) / 4)))
	}
	return 0
}

func (r *regs) write(off uint32, size int, v uint32) {
	if off >= 0x3000 && off < 0x4000 {
		r.d.Notifies.Add(1)
		if int(v) < len(r.queues) {
			r.d.wake()
		}
		return
	}
	if off >= 0x1000 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var q *queue
	if int(r.qsel) < len(r.queues) {
		q = &r.queues[r.qsel]
	}
	set64 := func(p *uint64) {
		if (off%8)/4 == 0 {
			*p = *p&^0xffffffff | uint64(v)
		} else {
			*p = *p&0xffffffff | uint64(v)<<32
		}
	}
	switch off {
	case 0x00:
		r.devSel = v
	case 0x08:
		r.drvSel = v
	case 0x0c:
		if r.drvSel <= 1 {
			r.drvFeat = r.drvFeat&^(0xffffffff<<(32*r.drvSel)) | uint64(v)<<(32*r.drvSel)
		}
	case 0x10:
		if v == 0xffff || int(v) <= len(r.queues) {
			r.msixConfig = uint16(v)
		} else {
			r.msixConfig = 0xffff
		}
	case 0x14:
		if v == 0 {
			r.status = 0
			r.drvFeat = 0
			for i := range r.queues {
				m := r.queues[i].maxSize
				r.queues[i] = queue{maxSize: m, size: m, msix: 0xffff}
			}
			return
		}
		if v&8 != 0 && r.status&8 == 0 {
			if r.RefuseFeatures || r.drvFeat&^r.features() != 0 {
				v &^= 8
			}
		}
		r.status = uint8(v)
	case 0x16:
		r.qsel = uint16(v)
	}
	if q == nil {
		return
	}
	switch off {
	case 0x18:
		if v == 0 || v > uint32(q.maxSize) || v&(v-1) != 0 {
			r.d.errorf("queue size %d (max %d)", v, q.maxSize)
			return
		}
		q.size = uint16(v)
	case 0x1a:
		if v == 0xffff || int(v) <= len(r.queues) {
			q.msix = uint16(v)
		} else {
			q.msix = 0xffff
		}
	case 0x1c:
		q.enable = v == 1
	case 0x20, 0x24:
		set64(&q.desc)
	case 0x28, 0x2c:
		set64(&q.driver)
	case 0x30, 0x34:
		set64(&q.device)
	}
}

func (r *regs) Read8(off uint32) uint8       { return uint8(r.read(off, 1)) }
func (r *regs) Read16(off uint32) uint16     { return uint16(r.read(off, 2)) }
func (r *regs) Read32(off uint32) uint32     { return r.read(off, 4) }
func (r *regs) Write8(off uint32, v uint8)   { r.write(off, 1, uint32(v)) }
func (r *regs) Write16(off uint32, v uint16) { r.write(off, 2, uint32(v)) }
func (r *regs) Write32(off uint32, v uint32) { r.write(off, 4, v) }
