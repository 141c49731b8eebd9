package nvme

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// identity is what the driver takes from Identify Controller (§5.15.2.1).
type identity struct {
	serial, model, firmware string
	mdts                    uint8 // max transfer: 2^mdts minimum pages, 0 unlimited
	namespaces              uint32
	vwc                     bool // volatile write cache present
	dbbuf                   bool // Doorbell Buffer Config supported
	dsm                     bool // Dataset Management supported (ONCS bit 2)
}

func parseController(b []byte) (identity, error) {
	id := identity{
		serial:     text(b[4:24]),
		model:      text(b[24:64]),
		firmware:   text(b[64:72]),
		mdts:       b[77],
		namespaces: binary.LittleEndian.Uint32(b[516:]),
		vwc:        b[525]&1 != 0,
		dbbuf:      binary.LittleEndian.Uint16(b[256:])&(1<<8) != 0, // OACS
		dsm:        binary.LittleEndian.Uint16(b[520:])&(1<<2) != 0, // ONCS
	}
	// Entry sizes: required (low nibble) to maximum (high nibble), as
	// powers of two; the driver uses 64-byte and 16-byte entries.
	sqes, cqes := b[512], b[513]
	if sqes&0xf > 6 || sqes>>4 != 0 && sqes>>4 < 6 {
		return id, fmt.Errorf("submission entry sizes %#x exclude 64 bytes", sqes)
	}
	if cqes&0xf > 4 || cqes>>4 != 0 && cqes>>4 < 4 {
		return id, fmt.Errorf("completion entry sizes %#x exclude 16 bytes", cqes)
	}
	return id, nil
}

// text is an identify string: ASCII padded with spaces; anything else
// becomes '?'.
func text(b []byte) string {
	s := []byte(strings.TrimRight(string(b), " \x00"))
	for i, c := range s {
		if c < 0x20 || c > 0x7e {
			s[i] = '?'
		}
	}
	return string(s)
}

// geometry is a namespace's size and block size, from Identify
// Namespace (NVM command set §5.15.2.2 / §4.1.5.1 of the NVM spec).
type geometry struct {
	sectors uint64 // logical blocks (NSZE)
	shift   uint   // log2 of the logical block size
}

func parseNamespace(b []byte) (geometry, error) {
	nsze := binary.LittleEndian.Uint64(b[0:])
	nlbaf := int(b[25]) // 0-based
	flbas := b[26]
	f := int(flbas & 0xf)
	if f > nlbaf {
		return geometry{}, fmt.Errorf("formatted LBA format %d of %d", f, nlbaf+1)
	}
	lbaf := binary.LittleEndian.Uint32(b[128+4*f:])
	ms, lbads := lbaf&0xffff, uint(lbaf>>16&0xff)
	if nsze == 0 {
		return geometry{}, nil
	}
	if lbads < 9 || lbads > 12 {
		return geometry{}, fmt.Errorf("logical block size 2^%d unsupported", lbads)
	}
	if ms != 0 {
		return geometry{}, fmt.Errorf("LBA format %d carries %d bytes of metadata; unsupported", f, ms)
	}
	if nsze > math.MaxInt64>>lbads {
		return geometry{}, fmt.Errorf("size of %d blocks unsupported", nsze)
	}
	return geometry{sectors: nsze, shift: lbads}, nil
}

// dsmLimits bound the Dataset Management (deallocate) commands the
// driver sends: ranges per command, logical blocks per range and per
// command. The defaults are the command's own limits (256 ranges, a
// 32-bit length each); a controller may lower them in the NVM command
// set's Identify Controller (CNS 06h: DMRL, DMRSL, DMSL; 0 means no
// limit), as QEMU's does, and QEMU skips a range longer than DMRSL
// without an error.
type dsmLimits struct {
	ranges        int
	rangeBlocks   uint64
	commandBlocks uint64 // 0: none beyond ranges × rangeBlocks
}

func defaultDSMLimits() dsmLimits {
	return dsmLimits{ranges: maxDSMRanges, rangeBlocks: 1<<32 - 1}
}

func parseNVMController(b []byte) dsmLimits {
	l := defaultDSMLimits()
	if dmrl := int(b[3]); dmrl != 0 {
		l.ranges = min(dmrl, maxDSMRanges)
	}
	if dmrsl := binary.LittleEndian.Uint32(b[4:]); dmrsl != 0 {
		l.rangeBlocks = uint64(dmrsl)
	}
	l.commandBlocks = binary.LittleEndian.Uint64(b[8:])
	return l
}
