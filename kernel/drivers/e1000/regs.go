package e1000

import "shortbread/kernel/drivers/intelnic"

// Registers, at their offsets in BAR 0 (8254x Family Software
// Developer's Manual rev. 4.0 §13.4, "SDM" below; 82574 datasheet rev.
// 3.4 §10.2, "82574" below). Names are the datasheets'.
const (
	regCTRL   = 0x00000
	regSTATUS = 0x00008
	regEERD   = 0x00014
	regICR    = 0x000c0
	regITR    = 0x000c4
	regIMS    = 0x000d0
	regIMC    = 0x000d8
	regIVAR   = 0x000e4 // 82574 only (§10.2.4.9)
	regEITR0  = 0x000e8 // 82574 only: one per MSI-X vector, 4 bytes apart
	regRCTL   = 0x00100
	regTCTL   = 0x00400
	regTIPG   = 0x00410
	regRDBAL  = 0x02800
	regRDBAH  = 0x02804
	regRDLEN  = 0x02808
	regRDH    = 0x02810
	regRDT    = 0x02818
	regRDTR   = 0x02820
	regRADV   = 0x0282c
	regTDBAL  = 0x03800
	regTDBAH  = 0x03804
	regTDLEN  = 0x03808
	regTDH    = 0x03810
	regTDT    = 0x03818
	regTIDV   = 0x03820
	regTADV   = 0x0382c
	regTARC0  = 0x03840 // 82574 only
	regMPC    = 0x04010 // missed packets (no room in the FIFO), clear on read
	regRXCSUM = 0x05000
	regMTA    = 0x05200 // 128 words
	regRAL0   = 0x05400
	regRAH0   = 0x05404

	// regsSize is how much of BAR 0 the driver touches.
	regsSize = 0x05408
)

// CTRL (SDM §13.4.1).
const (
	ctrlFD   = 1 << 0
	ctrlLRST = 1 << 3
	ctrlASDE = 1 << 5
	ctrlSLU  = 1 << 6
	ctrlILOS = 1 << 7
	ctrlRST  = 1 << 26
	ctrlVME  = 1 << 30
	ctrlPHY  = 1 << 31 // PHY_RST
)

// STATUS (SDM §13.4.2).
const statusLU = 1 << 1

// Interrupt causes, the same bits in ICR, IMS and IMC (SDM §13.4.17;
// 82574 §10.2.4.1 adds the per-queue causes MSI-X routes).
const (
	icrTXDW  = 1 << 0
	icrLSC   = 1 << 2
	icrRXDMT = 1 << 4
	icrRXO   = 1 << 6
	icrRXT0  = 1 << 7
	icrRXQ0  = 1 << 20 // 82574
	icrTXQ0  = 1 << 22 // 82574
	icrOTHER = 1 << 24 // 82574: LSC and the other non-queue causes under MSI-X
)

// RCTL (SDM §13.4.22): receiver on, broadcasts accepted, 2048-byte
// buffers (BSIZE 00 with BSEX 0), the CRC stripped so lengths are the
// frame's.
const (
	rctlEN    = 1 << 1
	rctlMPE   = 1 << 4 // every multicast frame: IPv6 neighbour discovery is multicast
	rctlBAM   = 1 << 15
	rctlSECRC = 1 << 26
)

// TCTL (SDM §13.4.33): transmitter on, short frames padded, the
// collision threshold and full-duplex collision distance the manual
// recommends.
const (
	tctlEN   = 1 << 1
	tctlPSP  = 1 << 3
	tctlCT   = 0x0f << 4
	tctlCOLD = 0x40 << 12
)

// tipg is the inter-packet gap for copper (SDM §13.4.34: IPGT 10,
// IPGR1 8, IPGR2 6).
const tipg = 10 | 8<<10 | 6<<20

// RAH's address-valid bit (SDM §13.4.65).
const rahAV = intelnic.RahAV

// 82574 IVAR (§10.2.4.9): each cause's vector in three bits with a
// valid bit above them.
const (
	ivarValid  = 0x8
	ivarRxQ0   = 0
	ivarTxQ0   = 8
	ivarOther  = 16
	tarcEnable = 1 << 10 // 82574 TARC0 (§10.2.6.11): the queue may transmit
)

// Descriptors (SDM §3.2.3 receive, §3.3.3 transmit; the 82574's legacy
// formats are the same, §7.1.4 and §7.2.10.1): 16 bytes each.
const (
	descSize = 16

	// receive: address (8), length (2), checksum (2), status, errors,
	// special (2)
	rxLen    = 8
	rxStatus = 12
	rxErrors = 13

	rxdDD  = 1 << 0
	rxdEOP = 1 << 1

	// Receive errors that spoil the frame: CRC/alignment, symbol,
	// sequence, carrier extension and RX data errors. The checksum error
	// bits (TCPE, IPE) are not among them: such a frame goes to the
	// stack unvouched for, which checks it and counts it.
	rxeFrame = 1<<0 | 1<<1 | 1<<2 | 1<<4 | 1<<7

	// Receive checksum offload (SDM §3.2.6, §13.4.51; 82574 §7.1.6,
	// §10.2.5.13): with RXCSUM's IPOFL and TUOFL the card checks the
	// IPv4 header's and the TCP or UDP checksum of each frame and says
	// so in the status byte (IPCS, TCPCS), flagging a wrong one in the
	// errors byte (IPE, TCPE); IXSM says it checked nothing (QEMU's
	// 82540EM model always sets it).
	rxcsumIPOFL = 1 << 8
	rxcsumTUOFL = 1 << 9
	rxdIXSM     = 1 << 2
	rxdTCPCS    = 1 << 5
	rxdIPCS     = 1 << 6
	rxeTCPE     = 1 << 5
	rxeIPE      = 1 << 6

	// transmit: address (8), length (2), CSO, CMD, status, CSS,
	// special (2)
	txLen    = 8
	txCmd    = 11
	txStatus = 12

	txcEOP  = 1 << 0
	txcIFCS = 1 << 1
	txcRS   = 1 << 3
	txdDD   = 1 << 0
)

// TCP segmentation (SDM §3.3.6-3.3.7; 82574 §7.2.4-7.2.5): a TCP/IP
// context descriptor (the IP checksum's start, offset and end at bytes
// 0-3, the TCP checksum's at 4-7, the payload length in the low 20
// bits of the word at 8 with TUCMD in its top byte, and the header
// length and MSS at 13 and 14), then extended data descriptors (the
// length in the low 20 bits of the word at 8, DTYP 1 and DCMD in its
// top byte, POPTS at byte 13).
const (
	ctxIPCSS  = 0
	ctxIPCSO  = 1
	ctxIPCSE  = 2
	ctxTUCSS  = 4
	ctxTUCSO  = 5
	ctxLen    = 8
	ctxHdrLen = 13
	ctxMSS    = 14

	tucmdTCP  = 1 << 0 // TCP (not UDP)
	tucmdIP   = 1 << 1 // IPv4 (not IPv6)
	txcTSE    = 1 << 2 // TUCMD and DCMD: segment
	txcDEXT   = 1 << 5 // TUCMD and DCMD: not a legacy descriptor
	dtypData  = 1 << 20
	poptsIXSM = 1 << 0 // insert the IP checksum
	poptsTXSM = 1 << 1 // insert the TCP checksum
	txPopts   = 13
)
