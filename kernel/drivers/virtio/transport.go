// Package virtio is the virtio 1.0 modern PCI transport (OASIS virtio
// 1.0 §4.1): the common, notify, ISR and device configuration structures
// found through the vendor capabilities, feature negotiation, and split
// virtqueues whose every index and length coming back from the device is
// checked. Device drivers (virtio/blk, later virtio-net) build on it.
package virtio

import (
	"errors"
	"fmt"

	"shortbread/kernel/drivers/pci"
)

// Vendor is the virtio PCI vendor ID; modern device IDs are 0x1040 plus
// the device type, transitional ones 0x1000-0x103f.
const Vendor = 0x1af4

// Device status bits (§2.1).
const (
	StatusAcknowledge = 1
	StatusDriver      = 2
	StatusDriverOK    = 4
	StatusFeaturesOK  = 8
	StatusNeedsReset  = 64
	StatusFailed      = 128
)

// Feature bits independent of the device type (§6).
const (
	FeatureVersion1 = 1 << 32
)

// Vendor capability types (§4.1.4).
const (
	capCommon = 1
	capNotify = 2
	capISR    = 3
	capDevice = 4
)

// Common configuration layout (§4.1.4.3).
const (
	cfgDeviceFeatureSelect = 0x00
	cfgDeviceFeature       = 0x04
	cfgDriverFeatureSelect = 0x08
	cfgDriverFeature       = 0x0c
	cfgMSIXConfig          = 0x10
	cfgNumQueues           = 0x12
	cfgStatus              = 0x14
	cfgGeneration          = 0x15
	cfgQueueSelect         = 0x16
	cfgQueueSize           = 0x18
	cfgQueueMSIX           = 0x1a
	cfgQueueEnable         = 0x1c
	cfgQueueNotifyOff      = 0x1e
	cfgQueueDesc           = 0x20
	cfgQueueDriver         = 0x28
	cfgQueueDevice         = 0x30
	commonLen              = 0x38
)

// NoVector is the MSI-X vector number meaning "none".
const NoVector = 0xffff

// ErrDevice is what a device that broke the protocol (a bad index,
// length or status) makes every later request fail with.
var ErrDevice = errors.New("virtio: device broke the protocol")

// Transport is one virtio device's PCI transport.
type Transport struct {
	Dev       *pci.Device
	common    pci.Region
	notify    pci.Region
	notifyLen uint32
	notifyMul uint32
	isr       pci.Region
	device    pci.Region
}

// sub is a window of a Region; accesses outside it read all ones and
// write nothing.
type sub struct {
	r        pci.Region
	off, len uint32
}

func (s sub) ok(off, n uint32) bool { return off+n <= s.len && off+n >= off }

func (s sub) Read8(off uint32) uint8 {
	if !s.ok(off, 1) {
		return 0xff
	}
	return s.r.Read8(s.off + off)
}
func (s sub) Read16(off uint32) uint16 {
	if !s.ok(off, 2) {
		return 0xffff
	}
	return s.r.Read16(s.off + off)
}
func (s sub) Read32(off uint32) uint32 {
	if !s.ok(off, 4) {
		return 0xffffffff
	}
	return s.r.Read32(s.off + off)
}
func (s sub) Write8(off uint32, v uint8) {
	if s.ok(off, 1) {
		s.r.Write8(s.off+off, v)
	}
}
func (s sub) Write16(off uint32, v uint16) {
	if s.ok(off, 2) {
		s.r.Write16(s.off+off, v)
	}
}
func (s sub) Write32(off uint32, v uint32) {
	if s.ok(off, 4) {
		s.r.Write32(s.off+off, v)
	}
}

// Open finds d's virtio structures and maps them. Each must lie inside
// a memory BAR; the first capability of each type is used (§4.1.4).
func Open(d *pci.Device, p pci.Platform) (*Transport, error) {
	t := &Transport{Dev: d}
	maps := map[int]pci.Region{}
	for _, c := range d.Caps {
		if c.ID != pci.CapVendor {
			continue
		}
		typ := uint8(d.Read(c.Off+3, 1))
		bar := int(d.Read(c.Off+4, 1))
		off, length := d.Read(c.Off+8, 4), d.Read(c.Off+12, 4)
		var dst *pci.Region
		switch typ {
		case capCommon:
			dst = &t.common
		case capNotify:
			dst = &t.notify
		case capISR:
			dst = &t.isr
		case capDevice:
			dst = &t.device
		default:
			continue
		}
		if *dst != nil {
			continue
		}
		if bar > 5 || d.BARs[bar].Size == 0 || d.BARs[bar].IO || uint64(off)+uint64(length) > d.BARs[bar].Size {
			return nil, fmt.Errorf("virtio: %s: structure %d at BAR%d+%#x (%d bytes) outside its BAR", d.Addr, typ, bar, off, length)
		}
		r, ok := maps[bar]
		if !ok {
			var err error
			if r, err = p.Map(d.BARs[bar]); err != nil {
				return nil, err
			}
			maps[bar] = r
		}
		*dst = sub{r, off, length}
		if typ == capNotify {
			t.notifyLen = length
			t.notifyMul = d.Read(c.Off+16, 4)
		}
	}
	switch {
	case t.common == nil || t.common.(sub).len < commonLen:
		return nil, fmt.Errorf("virtio: %s: no usable common configuration", d.Addr)
	case t.notify == nil || t.notifyLen < 2:
		return nil, fmt.Errorf("virtio: %s: no usable notification structure", d.Addr)
	case t.isr == nil:
		return nil, fmt.Errorf("virtio: %s: no ISR structure", d.Addr)
	}
	if t.device == nil {
		t.device = sub{}
	}
	d.SetCommand(pci.CmdMemory|pci.CmdBusMaster, 0)
	return t, nil
}

// Reset resets the device and waits for it to say so (§4.1.4.3.2).
func (t *Transport) Reset() error {
	t.common.Write8(cfgStatus, 0)
	for i := 0; i < 1000000; i++ {
		if t.common.Read8(cfgStatus) == 0 {
			return nil
		}
	}
	return fmt.Errorf("virtio: %s: reset did not complete", t.Dev.Addr)
}

// Status reads the device status.
func (t *Transport) Status() uint8 { return t.common.Read8(cfgStatus) }

// SetStatus ORs bits into the device status.
func (t *Transport) SetStatus(bits uint8) {
	t.common.Write8(cfgStatus, t.common.Read8(cfgStatus)|bits)
}

// Fail tells the device the driver gave up.
func (t *Transport) Fail() { t.SetStatus(StatusFailed) }

// Offered is the features the device offers, which a driver reads to
// choose features that depend on one another (a device may offer a
// feature without one it requires).
func (t *Transport) Offered() uint64 {
	var offered uint64
	for i := uint32(0); i < 2; i++ {
		t.common.Write32(cfgDeviceFeatureSelect, i)
		offered |= uint64(t.common.Read32(cfgDeviceFeature)) << (32 * i)
	}
	return offered
}

// QueueMax is the most entries queue i can have (0 if it has none); a
// driver may ask once features are negotiated, before setting the queue
// up, and negotiate again with fewer if the queue is too small for what
// it accepted.
func (t *Transport) QueueMax(i int) int {
	if i >= t.NumQueues() {
		return 0
	}
	t.common.Write16(cfgQueueSelect, uint16(i))
	return int(t.common.Read16(cfgQueueSize))
}

// Negotiate resets the device, acknowledges it and accepts the features
// in want that the device offers, plus VERSION_1, which the device must
// offer (a legacy-only device is refused). It returns the accepted set.
func (t *Transport) Negotiate(want uint64) (uint64, error) {
	if err := t.Reset(); err != nil {
		return 0, err
	}
	t.SetStatus(StatusAcknowledge | StatusDriver)
	offered := t.Offered()
	if offered&FeatureVersion1 == 0 {
		t.Fail()
		return 0, fmt.Errorf("virtio: %s: device does not offer VERSION_1", t.Dev.Addr)
	}
	acc := offered & (want | FeatureVersion1)
	for i := uint32(0); i < 2; i++ {
		t.common.Write32(cfgDriverFeatureSelect, i)
		t.common.Write32(cfgDriverFeature, uint32(acc>>(32*i)))
	}
	t.SetStatus(StatusFeaturesOK)
	if t.Status()&StatusFeaturesOK == 0 {
		t.Fail()
		return 0, fmt.Errorf("virtio: %s: device refused features %#x", t.Dev.Addr, acc)
	}
	return acc, nil
}

// NumQueues is how many virtqueues the device has.
func (t *Transport) NumQueues() int { return int(t.common.Read16(cfgNumQueues)) }

// SetConfigVector routes configuration-change interrupts to MSI-X
// vector v (NoVector: none) and checks the device took it.
func (t *Transport) SetConfigVector(v uint16) error {
	t.common.Write16(cfgMSIXConfig, v)
	if got := t.common.Read16(cfgMSIXConfig); got != v {
		return fmt.Errorf("virtio: %s: config vector %d refused (%#x)", t.Dev.Addr, v, got)
	}
	return nil
}

// DriverOK tells the device the driver is ready.
func (t *Transport) DriverOK() { t.SetStatus(StatusDriverOK) }

// ISR reads and so clears the interrupt status (bit 0: a queue, bit 1:
// configuration), which deasserts INTx.
func (t *Transport) ISR() uint8 { return t.isr.Read8(0) }

// Config is the device-specific configuration structure.
func (t *Transport) Config() pci.Region { return t.device }

// ConfigGeneration changes whenever the device changes its
// configuration; read it before and after a multi-field read.
func (t *Transport) ConfigGeneration() uint8 { return t.common.Read8(cfgGeneration) }
