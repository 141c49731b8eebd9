package pci

import (
	"fmt"
	"sync"
)

// ID is a vendor and device ID pair a driver handles.
type ID struct{ Vendor, Device uint16 }

// Driver claims devices by ID.
type Driver struct {
	Name string // as /proc/bus/pci/devices shows it
	IDs  []ID
	// Class, if not 0, claims every device of that class code (class,
	// subclass, programming interface) as well.
	Class uint32
	// Probe takes the device over; an error leaves it unclaimed.
	Probe func(d *Device, p Platform) error
}

// Bus is the set of devices found and the drivers that may claim them.
type Bus struct {
	P       Platform
	mu      sync.Mutex
	devs    []*Device
	drivers []*Driver
	bound   map[*Device]*Driver
}

// NewBus scans cfg.
func NewBus(cfg Config, p Platform) (*Bus, []string) {
	devs, notes := Scan(cfg)
	return &Bus{P: p, devs: devs, bound: map[*Device]*Driver{}}, notes
}

// Devices returns the devices found, in bus order.
func (b *Bus) Devices() []*Device {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Device(nil), b.devs...)
}

// Driver returns the driver bound to d, if any.
func (b *Bus) Driver(d *Device) *Driver {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bound[d]
}

// Register adds drv and offers it every unclaimed device it matches; it
// returns one line per probe (bound, or the error).
func (b *Bus) Register(drv *Driver) []string {
	b.mu.Lock()
	b.drivers = append(b.drivers, drv)
	var todo []*Device
	for _, d := range b.devs {
		if b.bound[d] == nil && drv.matches(d) {
			todo = append(todo, d)
		}
	}
	b.mu.Unlock()
	var out []string
	for _, d := range todo {
		if err := drv.Probe(d, b.P); err != nil {
			out = append(out, fmt.Sprintf("pci: %s: %s: %v", d, drv.Name, err))
			continue
		}
		b.mu.Lock()
		b.bound[d] = drv
		b.mu.Unlock()
		out = append(out, fmt.Sprintf("pci: %s: %s", d, drv.Name))
	}
	return out
}

func (drv *Driver) matches(d *Device) bool {
	if drv.Class != 0 && d.Class == drv.Class {
		return true
	}
	for _, id := range drv.IDs {
		if id.Vendor == d.Vendor && id.Device == d.Device {
			return true
		}
	}
	return false
}
