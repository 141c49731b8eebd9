package ahci

// Registers and structures of AHCI 1.3.1 (Serial ATA AHCI 1.3.1
// specification, sections cited) and the ATA commands used (ATA8-ACS).

// Generic host control (§3.1), at the start of ABAR (BAR 5).
const (
	regCAP  = 0x00
	regGHC  = 0x04
	regIS   = 0x08
	regPI   = 0x0c
	regVS   = 0x10
	regCAP2 = 0x24
	regBOHC = 0x28

	capNP   = 0x1f    // ports - 1
	capSSS  = 1 << 27 // staggered spin-up
	capSCLO = 1 << 24 // command list override
	capSNCQ = 1 << 30 // native command queuing
	capS64A = 1 << 31 // 64-bit addressing

	ghcHR = 1 << 0  // HBA reset
	ghcIE = 1 << 1  // interrupt enable
	ghcAE = 1 << 31 // AHCI enable

	bohcBOS = 1 << 0 // BIOS owned
	bohcOOS = 1 << 1 // OS owned
	cap2BOH = 1 << 0 // BIOS/OS handoff supported
)

// Port registers (§3.3), 0x80 bytes per port from 0x100.
const (
	portBase = 0x100
	portSize = 0x80

	pxCLB  = 0x00
	pxCLBU = 0x04
	pxFB   = 0x08
	pxFBU  = 0x0c
	pxIS   = 0x10
	pxIE   = 0x14
	pxCMD  = 0x18
	pxTFD  = 0x20
	pxSIG  = 0x24
	pxSSTS = 0x28
	pxSCTL = 0x2c
	pxSERR = 0x30
	pxSACT = 0x34
	pxCI   = 0x38

	cmdST  = 1 << 0  // start
	cmdSUD = 1 << 1  // spin-up device
	cmdPOD = 1 << 2  // power on device
	cmdCLO = 1 << 3  // command list override
	cmdFRE = 1 << 4  // FIS receive enable
	cmdFR  = 1 << 14 // FIS receive running
	cmdCR  = 1 << 15 // command list running
	cmdCPD = 1 << 20 // cold presence detection

	tfdERR = 1 << 0
	tfdDRQ = 1 << 3
	tfdBSY = 1 << 7

	sstsDETPresent = 3 // device present, phy communication established

	sigATA   = 0x00000101
	sigATAPI = 0xeb140101
	sigPM    = 0x96690101

	// PxIS bits (§3.3.5).
	isDHRS = 1 << 0  // D2H register FIS
	isPSS  = 1 << 1  // PIO setup FIS
	isDSS  = 1 << 2  // DMA setup FIS
	isSDBS = 1 << 3  // set device bits FIS
	isUFS  = 1 << 4  // unknown FIS
	isOFS  = 1 << 24 // overflow
	isINFS = 1 << 26 // interface non-fatal error
	isIFS  = 1 << 27 // interface fatal error
	isHBDS = 1 << 28 // host bus data error
	isHBFS = 1 << 29 // host bus fatal error
	isTFES = 1 << 30 // task file error

	isErrors = isUFS | isOFS | isINFS | isIFS | isHBDS | isHBFS | isTFES
	isWanted = isDHRS | isPSS | isDSS | isSDBS | isErrors
)

// Command list, FIS receive area and command tables (§4.2).
const (
	cmdHeaderSize = 32
	maxSlots      = 32
	fisAreaOff    = 1024 // the received-FIS area, after the 1 KiB command list
	tablePRDT     = 0x80 // PRD table offset in a command table
	prdSize       = 16

	hdrWrite = 1 << 6
	fisLen   = 5 // H2D register FIS length in dwords
)

// ATA (ATA8-ACS) and the register FIS that carries it (SATA 3.x §10.3.4).
const (
	fisH2D = 0x27

	ataIdentify     = 0xec
	ataReadDMAExt   = 0x25
	ataWriteDMAExt  = 0x35
	ataReadFPDMA    = 0x60
	ataWriteFPDMA   = 0x61
	ataFlushExt     = 0xea
	ataDSM          = 0x06 // DATA SET MANAGEMENT (§7.10)
	dsmTRIM         = 1 << 0
	deviceLBA       = 1 << 6
	maxSectorsFPDMA = 65536
)

// IDENTIFY DEVICE words (ATA8-ACS §7.16).
const (
	idGeneral     = 0
	idAddlSupport = 69  // bit 14: deterministic read after TRIM; bit 5: zeros
	idDSMBlocks   = 105 // 512-byte blocks of LBA range entries a DSM takes
	idDSM         = 169 // bit 0: TRIM
	idQueueDepth  = 75
	idSATACap     = 76
	idCmdSet2     = 83
	idCmdSet2En   = 86
	idLBA48       = 100
	idSectorSize  = 106
	idLogicalSize = 117

	sataNCQ       = 1 << 8
	cmdSetLBA48   = 1 << 10
	cmdSetFlushEx = 1 << 13
	addlDRAT      = 1 << 14
	addlRZAT      = 1 << 5

	// LBA range entries (§7.10.3.2): a 48-bit LBA and a 16-bit count,
	// 64 to a 512-byte block.
	trimEntry    = 8
	trimMaxCount = 1<<16 - 1
	trimMaxBlks  = PageSize / 512 // payload blocks per command: one page
)
