// Package rtc is the PC's real-time clock: the Motorola MC146818 (and
// compatibles) in the CMOS, behind I/O ports 0x70 (index) and 0x71
// (data), which QEMU emulates and every PC chipset still has. It reads
// and sets the date and time (RTC_RD_TIME, RTC_SET_TIME on /dev/rtc0);
// alarms and periodic or update interrupts are not implemented.
//
// Registers (MC146818A datasheet, "Address map"): 0 seconds, 2 minutes,
// 4 hours (bit 7 PM in 12-hour mode), 7 day of month, 8 month, 9 year
// of the century; 0x0A status A (bit 7 update in progress), 0x0B status
// B (bit 7 SET halts updates, bit 2 binary instead of BCD, bit 1 24-hour
// mode); the century, if the chipset keeps one, at the index the ACPI
// FADT names (QEMU: 0x32).
//
// The kernel starts the machine's time of day from ReadTime at boot. The
// machine layer reads the clock's raw bytes once before that, to seed its
// random generator on CPUs without RDRAND (runtime-patches/sb_boot.go);
// afterwards only this package touches the ports.
package rtc

import (
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
)

// Ports reaches the CMOS registers.
type Ports interface {
	ReadReg(reg uint8) uint8
	WriteReg(reg, v uint8)
}

const (
	regSec     = 0x00
	regMin     = 0x02
	regHour    = 0x04
	regMday    = 0x07
	regMon     = 0x08
	regYear    = 0x09
	regA       = 0x0A
	regB       = 0x0B
	aUIP       = 0x80 // update in progress
	bSET       = 0x80 // halt updates while the time is written
	bBinary    = 0x04 // binary, not BCD
	b24Hour    = 0x02 // 24-hour mode
	hourPM     = 0x80 // 12-hour mode
	maxRetries = 1000 // reads racing an update (one a second) before giving up
)

// CMOS is the clock.
type CMOS struct {
	mu      sync.Mutex // one index/data sequence at a time
	p       Ports
	century uint8 // CMOS index of the century, 0 if none
}

// New returns the clock behind p; century is the FADT's century index
// (0: none, years are 1970-2069).
func New(p Ports, century uint8) *CMOS {
	if century < 0x0E { // the clock's own registers: no century there
		century = 0
	}
	return &CMOS{p: p, century: century}
}

type fields struct{ sec, min, hour, mday, mon, year, century uint8 }

func (c *CMOS) readFields() fields {
	f := fields{
		sec: c.p.ReadReg(regSec), min: c.p.ReadReg(regMin), hour: c.p.ReadReg(regHour),
		mday: c.p.ReadReg(regMday), mon: c.p.ReadReg(regMon), year: c.p.ReadReg(regYear),
	}
	if c.century != 0 {
		f.century = c.p.ReadReg(c.century)
	}
	return f
}

// ReadTime returns the clock's time (UTC or local, as whoever set it
// chose: the clock does not say). It reads until two readings outside
// an update agree, as Linux's mc146818_get_time; EIO if the clock never
// settles or holds a date that cannot be.
func (c *CMOS) ReadTime() (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var f fields
	ok := false
	for range maxRetries {
		if c.p.ReadReg(regA)&aUIP != 0 {
			continue
		}
		f = c.readFields()
		if c.p.ReadReg(regA)&aUIP == 0 && c.readFields() == f {
			ok = true
			break
		}
	}
	if !ok {
		return time.Time{}, linux.EIO
	}
	b := c.p.ReadReg(regB)
	pm := f.hour&hourPM != 0
	f.hour &^= hourPM
	if b&bBinary == 0 {
		f.sec, f.min, f.hour = fromBCD(f.sec), fromBCD(f.min), fromBCD(f.hour)
		f.mday, f.mon, f.year, f.century = fromBCD(f.mday), fromBCD(f.mon), fromBCD(f.year), fromBCD(f.century)
	}
	if b&b24Hour == 0 {
		f.hour %= 12
		if pm {
			f.hour += 12
		}
	}
	year := int(f.year)
	switch {
	case c.century != 0 && f.century >= 19 && f.century <= 20:
		year += int(f.century) * 100
	case year < 70:
		year += 2000
	default:
		year += 1900
	}
	if f.sec > 59 || f.min > 59 || f.hour > 23 || f.mon < 1 || f.mon > 12 || f.mday < 1 ||
		int(f.mday) > daysIn(time.Month(f.mon), year) || f.year > 99 {
		return time.Time{}, linux.EIO
	}
	return time.Date(year, time.Month(f.mon), int(f.mday), int(f.hour), int(f.min), int(f.sec), 0, time.UTC), nil
}

// SetTime sets the clock to t's calendar fields (seconds; EINVAL outside
// the years the clock can hold, 1970-2069, as Linux's mc146818_set_time).
// Updates halt while the registers are written, in the format the clock
// is in.
func (c *CMOS) SetTime(t time.Time) error {
	year := t.Year()
	if year < 1970 || year > 2069 {
		return linux.EINVAL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.p.ReadReg(regB)
	hour := uint8(t.Hour())
	pm := false
	if b&b24Hour == 0 {
		pm = hour >= 12
		hour %= 12
		if hour == 0 {
			hour = 12
		}
	}
	f := fields{sec: uint8(t.Second()), min: uint8(t.Minute()), hour: hour, mday: uint8(t.Day()),
		mon: uint8(t.Month()), year: uint8(year % 100), century: uint8(year / 100)}
	if b&bBinary == 0 {
		f.sec, f.min, f.hour = toBCD(f.sec), toBCD(f.min), toBCD(f.hour)
		f.mday, f.mon, f.year, f.century = toBCD(f.mday), toBCD(f.mon), toBCD(f.year), toBCD(f.century)
	}
	if pm {
		f.hour |= hourPM
	}
	c.p.WriteReg(regB, b|bSET)
	c.p.WriteReg(regSec, f.sec)
	c.p.WriteReg(regMin, f.min)
	c.p.WriteReg(regHour, f.hour)
	c.p.WriteReg(regMday, f.mday)
	c.p.WriteReg(regMon, f.mon)
	c.p.WriteReg(regYear, f.year)
	if c.century != 0 {
		c.p.WriteReg(c.century, f.century)
	}
	c.p.WriteReg(regB, b&^bSET)
	return nil
}

func fromBCD(v uint8) uint8 { return v&0x0f + (v>>4)*10 }
func toBCD(v uint8) uint8   { return v/10<<4 | v%10 }

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
