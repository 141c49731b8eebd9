package acpi

import (
	"bytes"
	"errors"
	"fmt"
)

// GenericAddress is a Generic Address Structure (§5.2.3.2).
type GenericAddress struct {
	Space      uint8 // SpaceMemory, SpaceIO, ...
	BitWidth   uint8
	BitOffset  uint8
	AccessSize uint8
	Address    uint64
}

// Address space IDs (§5.2.3.2).
const (
	SpaceMemory = 0
	SpaceIO     = 1
)

func parseGAS(b []byte) GenericAddress {
	return GenericAddress{Space: b[0], BitWidth: b[1], BitOffset: b[2], AccessSize: b[3], Address: le.Uint64(b[4:])}
}

// FADT holds the Fixed ACPI Description Table fields (§5.2.9) needed
// to switch into ACPI mode, power off and reset.
type FADT struct {
	Header       Header
	FirmwareCtrl uint64 // FACS address
	DSDT         uint64
	SCIInterrupt uint16
	SMICommand   uint32 // I/O port; zero if ACPI mode is always on
	ACPIEnable   uint8
	ACPIDisable  uint8
	// I/O ports of the PM1 register blocks; zero when absent.
	PM1aEventBlock   uint32
	PM1bEventBlock   uint32
	PM1aControlBlock uint32
	PM1bControlBlock uint32
	PMTimerBlock     uint32
	PM1ControlLength uint8
	Century          uint8  // CMOS index of the RTC century, zero if none
	BootArch         uint16 // IA-PC boot architecture flags
	Flags            uint32
	// ResetReg and ResetValue are valid when Flags has FlagResetRegSupported.
	ResetReg   GenericAddress
	ResetValue uint8
}

// FADT flags (§5.2.9, Table "Fixed ACPI Description Table Fixed Feature Flags").
const (
	FlagResetRegSupported = 1 << 10
	FlagHardwareReduced   = 1 << 20
)

// FADT field offsets (§5.2.9, Table "FADT Format").
const (
	fadtFirmwareCtrl = 36
	fadtDSDT         = 40
	fadtSCIInt       = 46
	fadtSMICmd       = 48
	fadtACPIEnable   = 52
	fadtACPIDisable  = 53
	fadtPM1aEvt      = 56
	fadtPM1bEvt      = 60
	fadtPM1aCnt      = 64
	fadtPM1bCnt      = 68
	fadtPMTimer      = 76
	fadtPM1CntLen    = 89
	fadtCentury      = 108
	fadtBootArch     = 109
	fadtFlags        = 112
	fadtMinLen       = 116 // the ACPI 1.0 FADT ends after Flags
	fadtResetReg     = 116
	fadtResetValue   = 128
	fadtXFirmware    = 132
	fadtXDSDT        = 140
	fadtXPM1aEvt     = 148
	fadtXPM1bEvt     = 160
	fadtXPM1aCnt     = 172
	fadtXPM1bCnt     = 184
	fadtXPMTimer     = 208
)

// FADT reads and decodes the table with signature "FACP".
func (t *Tables) FADT() (*FADT, error) {
	b, err := t.Table("FACP")
	if err != nil {
		return nil, err
	}
	return ParseFADT(b)
}

// ParseFADT decodes a FADT of any revision, reading the fields later
// revisions appended only when the table is long enough to hold them.
// Where both a 32-bit field and its 64-bit X_ counterpart are set the
// X_ value wins, as §5.2.9 requires; an X_ register block is only used
// if it is in I/O space, since the PM1 fields here are port numbers.
// Like ParseMADT it does not verify the checksum.
func ParseFADT(b []byte) (*FADT, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "FACP" {
		return nil, fmt.Errorf("acpi: FADT: %w: %q", ErrSignature, h.Signature)
	}
	if h.Length < fadtMinLen || uint64(h.Length) > uint64(len(b)) {
		return nil, fmt.Errorf("acpi: FADT: %w: length field %d, %d bytes available", ErrLength, h.Length, len(b))
	}
	b = b[:h.Length]
	f := &FADT{
		Header:           h,
		FirmwareCtrl:     uint64(le.Uint32(b[fadtFirmwareCtrl:])),
		DSDT:             uint64(le.Uint32(b[fadtDSDT:])),
		SCIInterrupt:     le.Uint16(b[fadtSCIInt:]),
		SMICommand:       le.Uint32(b[fadtSMICmd:]),
		ACPIEnable:       b[fadtACPIEnable],
		ACPIDisable:      b[fadtACPIDisable],
		PM1aEventBlock:   le.Uint32(b[fadtPM1aEvt:]),
		PM1bEventBlock:   le.Uint32(b[fadtPM1bEvt:]),
		PM1aControlBlock: le.Uint32(b[fadtPM1aCnt:]),
		PM1bControlBlock: le.Uint32(b[fadtPM1bCnt:]),
		PMTimerBlock:     le.Uint32(b[fadtPMTimer:]),
		PM1ControlLength: b[fadtPM1CntLen],
		Century:          b[fadtCentury],
		BootArch:         le.Uint16(b[fadtBootArch:]),
		Flags:            le.Uint32(b[fadtFlags:]),
	}
	has := func(off, n int) bool { return len(b) >= off+n }
	if has(fadtResetValue, 1) {
		f.ResetReg = parseGAS(b[fadtResetReg:])
		f.ResetValue = b[fadtResetValue]
	}
	x64 := func(off int, dst *uint64) {
		if has(off, 8) {
			if v := le.Uint64(b[off:]); v != 0 {
				*dst = v
			}
		}
	}
	x64(fadtXFirmware, &f.FirmwareCtrl)
	x64(fadtXDSDT, &f.DSDT)
	xPort := func(off int, dst *uint32) {
		if !has(off, 12) {
			return
		}
		if g := parseGAS(b[off:]); g.Space == SpaceIO && g.Address != 0 && g.Address <= 0xFFFF {
			*dst = uint32(g.Address)
		}
	}
	xPort(fadtXPM1aEvt, &f.PM1aEventBlock)
	xPort(fadtXPM1bEvt, &f.PM1bEventBlock)
	xPort(fadtXPM1aCnt, &f.PM1aControlBlock)
	xPort(fadtXPM1bCnt, &f.PM1bControlBlock)
	xPort(fadtXPMTimer, &f.PMTimerBlock)
	return f, nil
}

// DSDT reads the Differentiated System Description Table the FADT
// points to. It is not listed in the RSDT/XSDT, so it cannot be found
// through Table.
func (t *Tables) DSDT() ([]byte, error) {
	f, err := t.FADT()
	if err != nil {
		return nil, err
	}
	if f.DSDT == 0 {
		return nil, fmt.Errorf("acpi: FADT has no DSDT address: %w", ErrNotFound)
	}
	return ReadTable(t.mem, f.DSDT, "DSDT")
}

// SleepType holds the SLP_TYPa and SLP_TYPb values for a sleep state,
// from the state's \_Sx package (the "\_Sx (System States)" object in
// the ACPI spec's power management chapter).
type SleepType struct{ A, B uint8 }

// PM1 control register bits (§4.8.4.2.1).
const (
	pm1SlpTypShift = 10
	pm1SlpTypMask  = 7 << pm1SlpTypShift
	pm1SlpEn       = 1 << 13
)

// PM1aValue returns the value to write to the PM1a control register to
// enter the sleep state, given the register's current contents. Other
// bits, notably SCI_EN, are preserved, as the spec requires.
func (s SleepType) PM1aValue(current uint16) uint16 { return pm1Value(current, s.A) }

// PM1bValue is PM1aValue for the PM1b control register.
func (s SleepType) PM1bValue(current uint16) uint16 { return pm1Value(current, s.B) }

func pm1Value(cur uint16, typ uint8) uint16 {
	return cur&^(pm1SlpTypMask|pm1SlpEn) | uint16(typ&7)<<pm1SlpTypShift | pm1SlpEn
}

// S5 finds the soft-off sleep type in the DSDT.
func (t *Tables) S5() (SleepType, error) {
	dsdt, err := t.DSDT()
	if err != nil {
		return SleepType{}, err
	}
	return FindS5(dsdt[HeaderSize:])
}

// AML encodings (§20.2.3–§20.2.5).
const (
	amlZero        = 0x00
	amlOne         = 0x01
	amlName        = 0x08
	amlBytePrefix  = 0x0A
	amlWordPrefix  = 0x0B
	amlDWordPrefix = 0x0C
	amlQWordPrefix = 0x0E
	amlPackage     = 0x12
	amlRootChar    = '\\'
)

var errNoS5 = errors.New(`no usable \_S5_ package`)

// FindS5 scans AML for the definition Name(\_S5_, Package(){a, b, ...})
// and returns its first two elements. This is the byte-pattern shortcut
// small kernels use instead of an AML interpreter: it handles the
// encodings firmware emits for this object (a NameOp, optionally with a
// root prefix, then a PackageOp with integer constants) and skips any
// other occurrence of the name, such as a reference inside a method.
func FindS5(aml []byte) (SleepType, error) {
	for i := 0; ; {
		j := bytes.Index(aml[i:], []byte("_S5_"))
		if j < 0 {
			return SleepType{}, fmt.Errorf("acpi: %w", errNoS5)
		}
		pos := i + j
		i = pos + 1
		named := pos >= 1 && aml[pos-1] == amlName ||
			pos >= 2 && aml[pos-1] == amlRootChar && aml[pos-2] == amlName
		if !named {
			continue
		}
		if st, ok := parseS5Package(aml[pos+4:]); ok {
			return st, nil
		}
	}
}

// parseS5Package decodes "PackageOp PkgLength NumElements a b" at the
// start of p, staying within the package's declared length.
func parseS5Package(p []byte) (SleepType, bool) {
	if len(p) < 2 || p[0] != amlPackage {
		return SleepType{}, false
	}
	p = p[1:]
	// PkgLength (§20.2.4): the top two bits of the lead byte count the
	// extra bytes; the length includes the PkgLength bytes themselves.
	extra := int(p[0] >> 6)
	if len(p) < 1+extra {
		return SleepType{}, false
	}
	n := int(p[0] & 0x3F)
	if extra > 0 {
		n = int(p[0] & 0x0F)
		for k := 1; k <= extra; k++ {
			n |= int(p[k]) << (4 + 8*(k-1))
		}
	}
	if n < 1+extra || n > len(p) {
		return SleepType{}, false
	}
	body := p[1+extra : n]
	if len(body) < 1 || body[0] < 2 { // NumElements
		return SleepType{}, false
	}
	body = body[1:]
	a, body, ok := amlInteger(body)
	if !ok {
		return SleepType{}, false
	}
	b, _, ok := amlInteger(body)
	if !ok {
		return SleepType{}, false
	}
	// SLP_TYP is a 3-bit field; anything larger means we misread the
	// package, and writing garbage to PM1 control is worse than failing.
	if a > 7 || b > 7 {
		return SleepType{}, false
	}
	return SleepType{A: uint8(a), B: uint8(b)}, true
}

// amlInteger decodes one integer constant and returns the rest.
func amlInteger(p []byte) (uint64, []byte, bool) {
	if len(p) == 0 {
		return 0, nil, false
	}
	size := 0
	switch p[0] {
	case amlZero:
		return 0, p[1:], true
	case amlOne:
		return 1, p[1:], true
	case amlBytePrefix:
		size = 1
	case amlWordPrefix:
		size = 2
	case amlDWordPrefix:
		size = 4
	case amlQWordPrefix:
		size = 8
	default:
		return 0, nil, false
	}
	if len(p) < 1+size {
		return 0, nil, false
	}
	var v uint64
	for k := size; k >= 1; k-- {
		v = v<<8 | uint64(p[k])
	}
	return v, p[1+size:], true
}
