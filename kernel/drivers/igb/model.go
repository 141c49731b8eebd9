package igb

import "shortbread/kernel/drivers/pci"

// The controllers this package drives, and how they differ in the
// registers it uses. The i350 (Intel Ethernet Controller I350 datasheet
// rev. 2.x, "DS350" below) keeps the 82576's register file for what
// this driver does with one queue pair: the same CTRL, STATUS, EERD,
// MDIC (internal PHY at address 1), interrupt registers and GPIE bits,
// queue 0's registers at the same 82575-compatible addresses, the same
// advanced descriptors, SRRCTL and EITR (1 µs units from bit 2). What
// differs:
//
//   - The NVM: each of the i350's (up to four) ports has its own
//     section, port n > 0 at word 0x40 + 0x40·n (DS350's NVM map), with the
//     port's MAC address in its first three words; the 82576's ports
//     read one section at word 0. The hardware loads the port's own
//     address into RAL0/RAH0 at reset, so the NVM is read only when it
//     did not (QEMU's card has no EEPROM to load from).
//   - IVAR: the 82576 keeps queue q's causes in IVAR[q mod 8], receive
//     in byte 0 (q < 8) or 2, transmit in byte 1 or 3; the i350 in
//     IVAR[q/2], receive in byte 0 (even q) or 2, transmit in 1 or 3.
//     For queue 0, the one used, both put receive in IVAR0's byte 0 and
//     transmit in byte 1.
//   - The port's number (STATUS.LAN_ID, bits 3:2) picks the NVM section
//     and the EEMNGCTL.CFG_DONE bit (18 + port) that says the port's
//     configuration from the NVM is loaded after a reset (both models).
//
// Only the copper parts are matched: the fibre, SerDes and SGMII
// variants (82576 0x10e6, 0x10e7; i350 0x1522-0x1524) bring their link
// up through the PCS or an external PHY, which this driver does not
// program, and the i350's virtual function (0x1520) is another device.
// The 82576's other copper IDs (82576NS, the quad-port cards) wait for
// someone to try them.
type model struct {
	name string
	// nvmBase returns the NVM word where port's section begins.
	nvmBase func(port int) int
	// ivar returns the IVAR register holding queue q's receive cause
	// and its bit shift there; the transmit cause is the byte above.
	ivar func(q int) (reg uint32, shift uint)
}

var (
	model82576 = &model{
		name:    "82576",
		nvmBase: func(int) int { return 0 },
		ivar: func(q int) (uint32, uint) {
			return regIVAR0 + 4*uint32(q%8), uint(q/8) * 16
		},
	}
	modelI350 = &model{
		name: "i350",
		nvmBase: func(port int) int {
			if port == 0 {
				return 0
			}
			return 0x40 + 0x40*port
		},
		ivar: func(q int) (uint32, uint) {
			return regIVAR0 + 4*uint32(q/2), uint(q%2) * 16
		},
	}
)

// models maps the device IDs this package drives to their models.
var models = map[pci.ID]*model{
	{Vendor: 0x8086, Device: 0x10c9}: model82576, // 82576 copper (QEMU -device igb)
	{Vendor: 0x8086, Device: 0x1521}: modelI350,  // i350 copper (I350-T2/T4, many servers' onboard ports)
}

// IDs are the PCI IDs this package drives.
var IDs = []pci.ID{{Vendor: 0x8086, Device: 0x10c9}, {Vendor: 0x8086, Device: 0x1521}}

// modelOf returns d's model, or nil for a device this package does not
// drive.
func modelOf(d *pci.Device) *model {
	return models[pci.ID{Vendor: d.Vendor, Device: d.Device}]
}
