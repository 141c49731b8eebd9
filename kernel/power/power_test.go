package power

import (
	"testing"

	"shortbread/kernel/acpi"
)

func TestResetPort(t *testing.T) {
	io := acpi.GenericAddress{Space: acpi.SpaceIO, BitWidth: 8, Address: 0xcf9}
	for _, c := range []struct {
		name string
		f    acpi.FADT
		port uint16
		ok   bool
	}{
		{"q35", acpi.FADT{Flags: acpi.FlagResetRegSupported, ResetReg: io, ResetValue: 6}, 0xcf9, true},
		{"flag clear", acpi.FADT{ResetReg: io, ResetValue: 6}, 0, false},
		{"memory space", acpi.FADT{Flags: acpi.FlagResetRegSupported,
			ResetReg: acpi.GenericAddress{Space: acpi.SpaceMemory, Address: 0xfed00000}, ResetValue: 1}, 0, false},
		{"no address", acpi.FADT{Flags: acpi.FlagResetRegSupported, ResetReg: acpi.GenericAddress{Space: acpi.SpaceIO}}, 0, false},
		{"port too big", acpi.FADT{Flags: acpi.FlagResetRegSupported,
			ResetReg: acpi.GenericAddress{Space: acpi.SpaceIO, Address: 0x10000}}, 0, false},
	} {
		port, v, ok := resetPort(&c.f)
		if ok != c.ok || port != c.port || (ok && v != c.f.ResetValue) {
			t.Errorf("%s: resetPort = %#x, %#x, %v; want %#x, %v", c.name, port, v, ok, c.port, c.ok)
		}
	}
}
