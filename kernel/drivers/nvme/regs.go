package nvme

import "fmt"

// Controller registers (NVMe 1.4 §3.1), in BAR0. The 64-bit ones are
// read and written as two 32-bit halves, low first, which §3.1 allows.
const (
	regCAP   = 0x00 // capabilities (64-bit)
	regVS    = 0x08 // version
	regINTMS = 0x0c // interrupt mask set (pin and MSI only)
	regINTMC = 0x10 // interrupt mask clear
	regCC    = 0x14 // controller configuration
	regCSTS  = 0x1c // controller status
	regAQA   = 0x24 // admin queue attributes
	regASQ   = 0x28 // admin submission queue base (64-bit)
	regACQ   = 0x30 // admin completion queue base (64-bit)
	regDB    = 0x1000
)

// CC fields (§3.1.5).
const (
	ccEnable   = 1 << 0
	ccCSSNVM   = 0 << 4
	ccMPS4K    = 0 << 7
	ccAMSRR    = 0 << 11
	ccIOSQES64 = 6 << 16 // 2^6-byte submission entries
	ccIOCQES16 = 4 << 20 // 2^4-byte completion entries
)

// CSTS fields (§3.1.6).
const (
	cstsReady = 1 << 0
	cstsFatal = 1 << 1
)

// capability is CAP decoded (§3.1.1).
type capability uint64

func (c capability) maxQueueEntries() int { return int(c&0xffff) + 1 } // MQES is 0-based
func (c capability) contiguous() bool     { return c>>16&1 != 0 }      // CQR
// timeoutMs is how long the controller may take to change CSTS.RDY
// (TO, in 500 ms units).
func (c capability) timeoutMs() int  { return int(c>>24&0xff) * 500 }
func (c capability) stride() uint32  { return 4 << (c >> 32 & 0xf) } // DSTRD
func (c capability) nvmSet() bool    { return c>>37&1 != 0 }         // CSS bit 0
func (c capability) pageMinLog() int { return 12 + int(c>>48&0xf) }  // MPSMIN
func (c capability) pageMaxLog() int { return 12 + int(c>>52&0xf) }  // MPSMAX

// Submission and completion entries (§4.2, §4.6).
const (
	sqeSize = 64
	cqeSize = 16
)

// Admin opcodes (§5).
const (
	adminCreateSQ    = 0x01
	adminCreateCQ    = 0x05
	adminIdentify    = 0x06
	adminSetFeatures = 0x09
	adminDoorbellBuf = 0x7c // Doorbell Buffer Config (§5.7)
)

// NVM command set opcodes (§6).
const (
	ioFlush = 0x00
	ioWrite = 0x01
	ioRead  = 0x02
	ioDSM   = 0x09 // Dataset Management (§6.7 of the NVM command set)

	dsmDeallocate = 1 << 2 // CDW11 attribute AD
	dsmRangeSize  = 16     // context attributes, length, starting LBA
	maxDSMRanges  = 256    // NR is 8 bits, 0-based: 256 × 16 bytes = one page
)

// Identify CNS values (§5.15.1) and the feature this driver sets.
const (
	cnsNamespace  = 0x00
	cnsController = 0x01
	cnsActiveNS   = 0x02
	cnsNVMCtrl    = 0x06 // I/O command set specific controller (CSI in CDW11)
	featureQueues = 0x07 // Number of Queues (§5.21.1.7)
)

// Status is the status field of a completion without the phase bit
// (§4.6.1, dword 3 bits 31:17): code, code type, retry delay, more, and
// do-not-retry.
type Status uint16

func (s Status) Code() uint8      { return uint8(s) }
func (s Status) CodeType() uint8  { return uint8(s>>8) & 7 }
func (s Status) DoNotRetry() bool { return s>>14&1 != 0 }

func (s Status) String() string {
	name := ""
	switch [2]uint8{s.CodeType(), s.Code()} {
	case [2]uint8{0, 0x01}:
		name = " (invalid opcode)"
	case [2]uint8{0, 0x02}:
		name = " (invalid field)"
	case [2]uint8{0, 0x04}:
		name = " (data transfer error)"
	case [2]uint8{0, 0x06}:
		name = " (internal error)"
	case [2]uint8{0, 0x0b}:
		name = " (invalid namespace)"
	case [2]uint8{0, 0x80}:
		name = " (LBA out of range)"
	case [2]uint8{2, 0x80}:
		name = " (write fault)"
	case [2]uint8{2, 0x81}:
		name = " (unrecovered read error)"
	}
	dnr := ""
	if s.DoNotRetry() {
		dnr = ", do not retry"
	}
	return fmt.Sprintf("status type %d code %#02x", s.CodeType(), s.Code()) + name + dnr
}
