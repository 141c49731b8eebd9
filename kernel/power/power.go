// Package power turns the machine off or resets it: QEMU's isa-debug-exit
// device first (so a test run reports its status as QEMU's exit code),
// then ACPI S5 soft-off through the FADT's PM1 control registers (ACPI
// 6.x §4.8.4.2.1, §7.4.2), then the FADT reset register or the keyboard
// controller's reset line.
package power

import (
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

// Reset restarts the machine through the keyboard controller (the 8042
// pulse-reset command), which every PC and QEMU machine honours.
func Reset() {
	for i := 0; i < 1000 && arch.Inb(0x64)&2 != 0; i++ {
	}
	arch.Outb(0x64, 0xFE)
	machine.Exit(0xff)
}
