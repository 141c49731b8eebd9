package igb

import "shortbread/kernel/drivers/intelnic"

// Registers, at their offsets in BAR 0 (Intel 82576EB GbE Controller
// datasheet rev. 2.x §8, "DS" below). Names are the datasheet's. Queue
// 0's registers are used at their 82575-compatible addresses
// (0x2800/0x3800), which the 82576 aliases to 0xC000/0xE000.
const (
	regCTRL     = 0x00000
	regSTATUS   = 0x00008
	regEECD     = 0x00010
	regEERD     = 0x00014
	regCTRLEXT  = 0x00018
	regMDIC     = 0x00020
	regICR      = 0x000c0
	regIMS      = 0x000d0
	regIMC      = 0x000d8
	regEEMNGCTL = 0x01010
	regRCTL     = 0x00100
	regTCTL     = 0x00400
	regGPIE     = 0x01514
	regEIAC     = 0x0152c
	regEIMS     = 0x01524
	regEIMC     = 0x01528
	regEICR     = 0x01580
	regEITR0    = 0x01680 // one per MSI-X vector, 4 bytes apart
	regIVAR0    = 0x01700
	regIVARMSC  = 0x01740
	regRDBAL    = 0x02800
	regRDBAH    = 0x02804
	regRDLEN    = 0x02808
	regSRRCTL   = 0x0280c
	regRDH      = 0x02810
	regRDT      = 0x02818
	regRXDCTL   = 0x02828
	regTDBAL    = 0x03800
	regTDBAH    = 0x03804
	regTDLEN    = 0x03808
	regTDH      = 0x03810
	regTDT      = 0x03818
	regTXDCTL   = 0x03828
	regMPC      = 0x04010 // missed packets (no room), clear on read
	regRXCSUM   = 0x05000
	regMTA      = 0x05200 // 128 words
	regRAL0     = 0x05400
	regRAH0     = 0x05404

	// regsSize is the register file's size (BAR 0 is 128 KiB).
	regsSize = 0x20000
)

// CTRL (DS §8.2.1).
const (
	ctrlLRST = 1 << 3
	ctrlSLU  = 1 << 6
	ctrlRST  = 1 << 26
	ctrlVME  = 1 << 30
	ctrlPHY  = 1 << 31 // PHY_RST
)

// STATUS (DS §8.2.2): link up, and the port's number on the chip
// (LAN_ID, bits 3:2).
const (
	statusLU         = 1 << 1
	statusLANIDShift = 2
)

// EECD (DS §8.2.3): the EEPROM's contents have been loaded after reset.
const eecdAutoRD = 1 << 9

// EEMNGCTL (the manageability EEPROM control register): port 0's configuration has been loaded from the
// EEPROM after a reset; port n's bit is n above it.
const eemngctlCfgDone0 = 1 << 18

// EERD (DS §8.2.4): start in bit 0, done in bit 1, the word address
// from bit 2, the data in the high half.
const (
	eerdStart     = 1 << 0
	eerdDone      = 1 << 1
	eerdAddrShift = 2
)

// CTRL_EXT (DS §8.2.5): the driver has taken the port from the
// firmware (the manageability firmware of server boards watches it).
const ctrlExtDrvLoad = 1 << 28

// MDIC (DS §8.2.6) writes a PHY register: data in the low half, the
// register from bit 16, the PHY address (1, the internal PHY) from bit
// 21, the opcode in bits 26-27; ready in bit 28, error in bit 30.
const (
	mdicRegShift = 16
	mdicPHY1     = 1 << 21
	mdicOpWrite  = 1 << 26
	mdicReady    = 1 << 28
	mdicError    = 1 << 30

	// The PHY's control register (IEEE 802.3 clause 22 register 0):
	// auto-negotiation on and restarted, advertising what the PHY can.
	phyBMCR          = 0
	bmcrAutoNeg      = 1 << 12
	bmcrRestartAN    = 1 << 9
	bmcrFullDuplex   = 1 << 8
	bmcrSpeed1000MSB = 1 << 6
)

// Interrupt causes in ICR, IMS and IMC (DS §8.8.1): the legacy causes,
// used as they are under MSI and INTx; under MSI-X only the non-queue
// ones (link, overrun), which reach a vector through IVAR_MISC.
const (
	icrTXDW  = 1 << 0
	icrLSC   = 1 << 2
	icrRXDMT = 1 << 4
	icrRXO   = 1 << 6
	icrRXDW  = 1 << 7
)

// GPIE (DS §8.8.15): MSI-X mode (EICR bits are vectors), ICR cleared by
// every read, and the pending bit array in MSI-X's sense.
const (
	gpieNSICR    = 1 << 0
	gpieMSIXMode = 1 << 4
	gpiePBA      = 1 << 31
)

// IVAR (DS §8.8.16): a byte per cause, the vector in the low five bits
// and a valid bit at the top; where a queue's bytes are is the model's
// (model.ivar), its transmit cause a byte above its receive cause.
// IVAR_MISC's byte 1 routes the "other" causes (ICR's, under MSI-X).
const (
	ivarValid   = 0x80
	ivarTxShift = 8
	ivarOther   = 8
)

// RCTL (DS §8.10.1): receiver on, broadcasts accepted, the CRC
// stripped so lengths are the frame's. The buffer size comes from
// SRRCTL.
const (
	rctlEN    = 1 << 1
	rctlMPE   = 1 << 4 // every multicast frame: IPv6 neighbour discovery is multicast
	rctlLPE   = 1 << 5
	rctlBAM   = 1 << 15
	rctlSECRC = 1 << 26
)

// SRRCTL (DS §8.10.2): the packet buffer size in KiB units, and the
// advanced one-buffer descriptor format.
const (
	srrctlBSizeShift = 10
	srrctlOneBuf     = 1 << 25
)

// RXDCTL and TXDCTL (DS §8.10.10, §8.12.13): the queue enable, and the
// prefetch, host and write-back thresholds. A write-back threshold of 1
// writes each descriptor back as soon as it is done, so the driver never
// waits on a partly filled write-back burst.
const (
	dctlEnable = 1 << 25
	dctlThresh = 8 | 1<<8 | 1<<16
)

// TCTL (DS §8.12.1): transmitter on, short frames padded, the collision
// threshold and full-duplex collision distance, retransmit on late
// collision.
const (
	tctlEN   = 1 << 1
	tctlPSP  = 1 << 3
	tctlCT   = 0x0f << 4
	tctlCOLD = 0x3f << 12
	tctlRTLC = 1 << 24
)

// RAH's address-valid bit (DS §8.10.14).
const rahAV = intelnic.RahAV

// Descriptors are 16 bytes (DS §7.1.5 receive, §7.2.2.3 transmit).
const descSize = 16

// The advanced receive descriptor. Read format: the buffer's address
// (8 bytes), the header buffer's (8, zero: no header split). Write-back
// format: packet type and RSS (8 bytes), then the extended status and
// errors (4), the length (2) and the VLAN tag (2).
const (
	rxStatus = 8
	rxLen    = 12

	rxdDD  = 1 << 0
	rxdEOP = 1 << 1

	// Extended errors that spoil the frame: CRC, symbol, sequence,
	// carrier extension and RX data errors. The checksum errors (L4E,
	// IPE) are not among them: such a frame goes to the stack unvouched
	// for, which checks it and counts it.
	rxeFrame = 1<<24 | 1<<25 | 1<<26 | 1<<28 | 1<<31

	// Receive checksum offload (82576 §7.1.11, §8.10.15): with RXCSUM's
	// IPOFLD and TUOFLD the card checks the IPv4 header's and the TCP
	// or UDP checksum of each frame and says so in the extended status
	// (IPCS, L4I), flagging a wrong one in the extended errors (IPE,
	// L4E).
	rxcsumIPOFLD = 1 << 8
	rxcsumTUOFLD = 1 << 9
	rxdL4I       = 1 << 5
	rxdIPCS      = 1 << 6
	rxeL4E       = 1 << 29
	rxeIPE       = 1 << 30
)

// The advanced transmit data descriptor: the buffer's address (8),
// then length, type and command (4), then the payload length and
// status (4), where the card writes DD back.
const (
	txCmdLen = 8
	txStatus = 12

	txdtypData = 3 << 20
	txcEOP     = 1 << 24
	txcIFCS    = 1 << 25
	txcRS      = 1 << 27
	txcDEXT    = 1 << 29
	txPaylen   = 14 // shift of the payload length
	txdDD      = 1 << 0
	txcTSE     = 1 << 31
	poptsIXSM  = 1 << 8 // insert the IP checksum
	poptsTXSM  = 1 << 9 // insert the TCP checksum
)

// The advanced context descriptor (82576 §7.2.2.3.1), for TCP
// segmentation: the MAC and IP header lengths (bytes 0-3), TUCMD and
// the type (8-11), the TCP header length and the MSS (12-15). Index 0
// of the queue's two contexts.
const (
	ctxMACIPLens = 0
	ctxTUCMD     = 8
	ctxMSSL4Len  = 12

	ctxMACLenShift = 9
	tucmdIPv4      = 1 << 10
	tucmdL4TCP     = 1 << 11
	txdtypCtxt     = 2 << 20
	ctxL4LenShift  = 8
	ctxMSSShift    = 16
)
