package main

// The CMOS real-time clock behind /dev/rtc0.

import (
	"shortbread/kernel/arch"
	"shortbread/kernel/drivers/rtc"
	"shortbread/kernel/machine"
	"shortbread/kernel/wallclock"
)

// cmosPorts reaches the CMOS through its index (0x70) and data (0x71)
// ports.
type cmosPorts struct{}

func (cmosPorts) ReadReg(r uint8) uint8 {
	arch.Outb(0x70, r)
	return arch.Inb(0x71)
}

func (cmosPorts) WriteReg(r, v uint8) {
	arch.Outb(0x70, r)
	arch.Outb(0x71, v)
}

// newRTC returns the clock, with the century register the FADT names.
func (k *kernel) newRTC() *rtc.CMOS {
	var century uint8
	if k.tables != nil {
		if f, err := k.tables.FADT(); err == nil {
			century = f.Century
		}
	}
	return rtc.New(cmosPorts{}, century)
}

// setWalltime starts the time of day from the CMOS clock, as early as the
// FADT's century register is known.
func (k *kernel) setWalltime() {
	t, err := k.rtc.ReadTime()
	if err != nil {
		k.log.Warnf("rtc: %v; the time of day starts at 1970", err)
		return
	}
	machine.SetWalltime(t.UnixNano()) // the runtime's time.Now
	wallclock.Set(t)                  // CLOCK_REALTIME and the vDSO's, from proc.InitClocks on
}
