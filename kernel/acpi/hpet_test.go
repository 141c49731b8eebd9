package acpi

import (
	"errors"
	"testing"
)

func TestHPETFromQEMU(t *testing.T) {
	for _, file := range []string{"qemu-pc.bin", "qemu-q35.bin", "qemu-ovmf.bin"} {
		c, err := loadCapture(file)
		if err != nil {
			t.Fatal(err)
		}
		tabs, err := FindTables(c.mem, c.rsdp)
		if err != nil {
			t.Fatal(err)
		}
		h, err := tabs.HPET()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		// QEMU places its HPET at the PC-standard 0xFED00000.
		if h.Address.Address != 0xFED00000 || h.Address.Space != SpaceMemory {
			t.Errorf("%s: HPET at %#x space %d", file, h.Address.Address, h.Address.Space)
		}
	}
}

func TestHPETRejectsBadTables(t *testing.T) {
	c, err := loadCapture("qemu-q35.bin")
	if err != nil {
		t.Fatal(err)
	}
	good := append([]byte(nil), c.table("HPET")...)
	if _, err := ParseHPET(good); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseHPET(good[:50]); err == nil {
		t.Error("truncated HPET table accepted")
	}
	io := append([]byte(nil), good...)
	io[40] = SpaceIO
	if _, err := ParseHPET(io); err == nil {
		t.Error("HPET in I/O space accepted")
	}
	wrong := append([]byte(nil), good...)
	copy(wrong, "APIC")
	if _, err := ParseHPET(wrong); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong signature: %v", err)
	}
}
