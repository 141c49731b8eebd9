package rtc

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// fakeCMOS is a register file with an update-in-progress flag that can
// be raised for a number of status reads.
type fakeCMOS struct {
	regs    [128]uint8
	uipLeft int
	writes  []uint8 // status B values written, in order
}

func (f *fakeCMOS) ReadReg(r uint8) uint8 {
	if r == regA && f.uipLeft > 0 {
		f.uipLeft--
		return aUIP
	}
	return f.regs[r]
}

func (f *fakeCMOS) WriteReg(r, v uint8) {
	if r == regB {
		f.writes = append(f.writes, v)
	}
	f.regs[r] = v
}

func TestReadBCD(t *testing.T) {
	f := &fakeCMOS{uipLeft: 3}
	f.regs[regB] = b24Hour
	f.regs[regSec], f.regs[regMin], f.regs[regHour] = 0x59, 0x07, 0x23
	f.regs[regMday], f.regs[regMon], f.regs[regYear], f.regs[0x32] = 0x29, 0x02, 0x24, 0x20
	got, err := New(f, 0x32).ReadTime()
	want := time.Date(2024, 2, 29, 23, 7, 59, 0, time.UTC)
	if err != nil || !got.Equal(want) {
		t.Errorf("BCD read %v %v, want %v", got, err, want)
	}
}

func TestReadBinary12Hour(t *testing.T) {
	f := &fakeCMOS{}
	f.regs[regB] = bBinary                                             // 12-hour
	f.regs[regSec], f.regs[regMin], f.regs[regHour] = 5, 30, 12|hourPM // 12 PM is noon
	f.regs[regMday], f.regs[regMon], f.regs[regYear] = 1, 12, 99
	got, err := New(f, 0).ReadTime()
	if want := time.Date(1999, 12, 1, 12, 30, 5, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("binary 12-hour read %v %v, want %v", got, err, want)
	}
	f.regs[regHour] = 12 // 12 AM is midnight
	if got, _ := New(f, 0).ReadTime(); got.Hour() != 0 {
		t.Errorf("12 AM read as hour %d", got.Hour())
	}
}

func TestReadBadDate(t *testing.T) {
	f := &fakeCMOS{}
	f.regs[regB] = b24Hour | bBinary
	f.regs[regMday], f.regs[regMon], f.regs[regYear] = 30, 2, 23 // February 30
	if _, err := New(f, 0).ReadTime(); !errors.Is(err, linux.EIO) {
		t.Errorf("February 30: %v, want EIO", err)
	}
	f.uipLeft = 1 << 30 // never settles
	f.regs[regMday] = 1
	if _, err := New(f, 0).ReadTime(); !errors.Is(err, linux.EIO) {
		t.Errorf("clock always updating: %v, want EIO", err)
	}
}

func TestSetRoundTrip(t *testing.T) {
	for _, b := range []uint8{b24Hour, b24Hour | bBinary, 0, bBinary} {
		f := &fakeCMOS{}
		f.regs[regB] = b
		c := New(f, 0x32)
		for _, want := range []time.Time{
			time.Date(2031, 7, 4, 0, 1, 2, 0, time.UTC),
			time.Date(1985, 1, 31, 13, 59, 58, 0, time.UTC),
			time.Date(2069, 12, 31, 23, 59, 59, 0, time.UTC),
		} {
			if err := c.SetTime(want); err != nil {
				t.Fatal(err)
			}
			if got, err := c.ReadTime(); err != nil || !got.Equal(want) {
				t.Errorf("status B %#x: set %v, read %v %v", b, want, got, err)
			}
		}
		if n := len(f.writes); n < 2 || f.writes[n-2] != b|bSET || f.writes[n-1] != b {
			t.Errorf("status B writes %#x: updates not halted around the set", f.writes)
		}
	}
	c := New(&fakeCMOS{}, 0)
	for _, y := range []int{1969, 2070} {
		if err := c.SetTime(time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, linux.EINVAL) {
			t.Errorf("year %d: %v, want EINVAL", y, err)
		}
	}
}
