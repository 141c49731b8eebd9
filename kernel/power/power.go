// Package power turns the machine off or resets it: QEMU's isa-debug-exit
// device first (so a test run reports its status as QEMU's exit code),
// then ACPI S5 soft-off through the FADT's PM1 control registers (ACPI
// 6.x §4.8.4.2.1, §7.4.2), then the FADT reset register or the keyboard
// controller's reset line.
package power

import (
	"time"

	"shortbread/kernel/acpi"
	"shortbread/kernel/arch"
	"shortbread/kernel/machine"
)

// debugExitPort is where QEMU's isa-debug-exit device listens (see the
// Makefile's QEMU flags); on hardware the write goes nowhere.
const debugExitPort = 0xf4

// Off stops the machine with status (0 = success). It does not return.
func Off(tables *acpi.Tables, status uint8) {
	arch.Outb(debugExitPort, status)
	if tables != nil {
		acpiOff(tables)
	}
	machine.Exit(status)
}

func acpiOff(t *acpi.Tables) {
	fadt, err := t.FADT()
	if err != nil || fadt.PM1aControlBlock == 0 {
		return
	}
	s5, err := t.S5()
	if err != nil {
		return
	}
	a := uint16(fadt.PM1aControlBlock)
	arch.Outw(a, s5.PM1aValue(arch.Inw(a)))
	if b := uint16(fadt.PM1bControlBlock); b != 0 {
		arch.Outw(b, s5.PM1bValue(arch.Inw(b)))
	}
}

// Reset restarts the machine: through the FADT's reset register when the
// firmware names one in I/O space (ACPI 6.x §4.8.3.6; port 0xCF9 on most
// PCs, some of which have no keyboard controller), else, or if that did
// nothing, the keyboard controller's pulse-reset command. logf says which.
func Reset(tables *acpi.Tables, logf func(format string, args ...any)) {
	if tables != nil {
		if fadt, err := tables.FADT(); err == nil {
			if port, v, ok := resetPort(fadt); ok {
				logf("power: reset through the ACPI reset register (port %#x, value %#x)", port, v)
				arch.Outb(port, v)
				time.Sleep(100 * time.Millisecond) // the reset is not instantaneous
			}
		}
	}
	logf("power: reset through the keyboard controller")
	for i := 0; i < 1000 && arch.Inb(0x64)&2 != 0; i++ {
	}
	arch.Outb(0x64, 0xFE)
	time.Sleep(100 * time.Millisecond)
	machine.Exit(0xff)
}

// resetPort is the FADT's reset register when it is a usable I/O port.
// Memory and PCI configuration space registers are left to the keyboard
// controller's reset: no machine this kernel targets has only those.
func resetPort(f *acpi.FADT) (port uint16, value uint8, ok bool) {
	r := f.ResetReg
	if f.Flags&acpi.FlagResetRegSupported == 0 || r.Space != acpi.SpaceIO || r.Address == 0 || r.Address > 0xffff {
		return 0, 0, false
	}
	return uint16(r.Address), f.ResetValue, true
}
