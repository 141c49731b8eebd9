package e1000

import "shortbread/kernel/drivers/pci"

// Model is what differs between the cards this package drives. The
// 82540EM (e1000) and the 82574L (e1000e) share the register map, the
// legacy descriptor formats, the interrupt cause bits and interrupt
// throttling (ITR); they differ in how the EEPROM is read, in MSI-X
// (82574 only, with IVAR routing causes to vectors and one EITR per
// vector) and in the 82574's transmit arbitration enable. Linux has two
// drivers because it also serves dozens of other family members and
// their offloads; for these two one driver with this table is smaller
// than two copies of the same rings.
type Model struct {
	Name string // as the kernel log and Linux name the driver
	Chip string
	// EERD layout (SDM §13.4.4; 82574 §10.2.2.6).
	eerdDone      uint32
	eerdAddrShift uint
	msix          bool // MSI-X with IVAR and EITR
	tarc          bool // TARC0 has a queue enable bit
}

var (
	E1000 = &Model{Name: "e1000", Chip: "82540EM", eerdDone: 1 << 4, eerdAddrShift: 8}
	// The 82574L also has MSI; QEMU's e1000e offers MSI-X, MSI and INTx.
	E1000E = &Model{Name: "e1000e", Chip: "82574L", eerdDone: 1 << 1, eerdAddrShift: 2, msix: true, tarc: true}
)

const intel = 0x8086

// Models maps the PCI IDs this package drives to their model.
var Models = map[pci.ID]*Model{
	{Vendor: intel, Device: 0x100e}: E1000,  // 82540EM, QEMU -device e1000 (pc's default NIC)
	{Vendor: intel, Device: 0x10d3}: E1000E, // 82574L, QEMU -device e1000e (q35's default NIC)
}

// IDs lists Models' keys for the PCI driver table.
func IDs(m *Model) []pci.ID {
	var ids []pci.ID
	for id, mm := range Models {
		if mm == m {
			ids = append(ids, id)
		}
	}
	return ids
}
