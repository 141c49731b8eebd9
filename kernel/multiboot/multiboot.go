// Package multiboot decodes the Multiboot2 boot information structure
// that a compliant boot loader (GRUB) leaves in memory for the kernel,
// as specified in the Multiboot2 specification §3.6 "Boot information
// format".
//
// The structure is untrusted input in the sense that a buggy or hostile
// boot loader, or a kernel bug that corrupts it, must produce an error
// rather than a fault: Parse works on a byte slice, checks every length
// before using it, and copies everything it returns so that the
// original memory can be reclaimed afterwards.
package multiboot

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// BootloaderMagic is the value a Multiboot2 loader puts in EAX (§3.3),
// which the entry code checks before trusting EBX.
const BootloaderMagic = 0x36d76289

// Tag types from §3.6. Only the ones Parse decodes are named.
const (
	tagEnd         = 0
	tagCmdline     = 1
	tagBootloader  = 2
	tagModule      = 3
	tagBasicMem    = 4
	tagMemoryMap   = 6
	tagFramebuffer = 8
	tagACPIOld     = 14
	tagACPINew     = 15
	tagLoadBase    = 21
)

// Memory map entry types (§3.6.8).
const (
	MemAvailable       = 1
	MemReserved        = 2
	MemACPIReclaimable = 3
	MemNVS             = 4
	MemBad             = 5
)

// Sentinel errors, wrapped in a *ParseError.
var (
	ErrTruncated  = errors.New("structure truncated")
	ErrMisaligned = errors.New("size not a multiple of 8")
	ErrTagSize    = errors.New("invalid tag size")
	ErrNoEndTag   = errors.New("missing end tag")
)

// ParseError locates a problem in the boot information.
type ParseError struct {
	Offset int    // byte offset of the offending tag, or 0 for the header
	Type   uint32 // tag type, when the problem is inside a tag
	Err    error
}

func (e *ParseError) Error() string {
	if e.Offset == 0 {
		return "multiboot2: " + e.Err.Error()
	}
	return fmt.Sprintf("multiboot2: tag type %d at offset %d: %v", e.Type, e.Offset, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// MemRegion is one memory map entry (§3.6.8).
type MemRegion struct {
	Base   uint64
	Length uint64
	Type   uint32
}

// End returns the first address past the region, saturating instead of
// wrapping so that a bogus length cannot make a region appear to end
// before it starts.
func (r MemRegion) End() uint64 {
	if r.Base+r.Length < r.Base {
		return ^uint64(0)
	}
	return r.Base + r.Length
}

// Module is a boot module (§3.6.6) such as an initial ramdisk; Start
// and End are physical addresses, End exclusive.
type Module struct {
	Start, End uint32
	Cmdline    string
}

// Framebuffer types (§3.6.12).
const (
	FramebufferIndexed = 0
	FramebufferRGB     = 1
	FramebufferEGAText = 2
)

// Framebuffer describes the video mode the loader set up (§3.6.12).
type Framebuffer struct {
	Addr   uint64
	Pitch  uint32 // bytes per scan line
	Width  uint32 // pixels, or characters for EGA text
	Height uint32
	BPP    uint8
	Type   uint8
	// Channel layout, valid when Type is FramebufferRGB.
	RedPos, RedSize     uint8
	GreenPos, GreenSize uint8
	BluePos, BlueSize   uint8
	// Palette, valid when Type is FramebufferIndexed.
	Palette []Color
}

// Color is one palette entry of an indexed framebuffer.
type Color struct{ R, G, B uint8 }

// Info is the decoded boot information. Fields whose tag was absent
// are left at their zero value.
type Info struct {
	Cmdline    string
	Bootloader string
	// MemLower and MemUpper are KiB of lower and upper memory from the
	// basic memory information tag (§3.6.3); HasBasicMem says whether
	// that tag was present.
	MemLower, MemUpper uint32
	HasBasicMem        bool
	MemoryMap          []MemRegion
	Modules            []Module
	// RSDPv1 and RSDPv2 are copies of the ACPI root pointers (§3.6.16,
	// §3.6.17), needed under UEFI where the BIOS area cannot be scanned.
	RSDPv1, RSDPv2 []byte
	Framebuffer    *Framebuffer
	// LoadBase is the physical load address of a relocatable image
	// (§3.6.23); HasLoadBase says whether the tag was present.
	LoadBase    uint32
	HasLoadBase bool
}

var le = binary.LittleEndian

// Parse decodes a boot information block: total_size, reserved, then
// 8-byte aligned tags ending with an end tag. b must start at the
// structure (which the loader 8-byte aligns) and may extend past
// total_size. Unknown tags are skipped, since later spec revisions and
// loaders add tags freely.
func Parse(b []byte) (Info, error) {
	var info Info
	if len(b) < 8 {
		return info, &ParseError{Err: ErrTruncated}
	}
	total := le.Uint32(b)
	switch {
	case total < 16: // header plus the mandatory end tag
		return info, &ParseError{Err: fmt.Errorf("%w: total_size %d too small", ErrTruncated, total)}
	case uint64(total) > uint64(len(b)):
		return info, &ParseError{Err: fmt.Errorf("%w: total_size %d exceeds %d available bytes", ErrTruncated, total, len(b))}
	case total%8 != 0:
		return info, &ParseError{Err: fmt.Errorf("%w: total_size %d", ErrMisaligned, total)}
	}
	b = b[:total]

	for off := 8; off+8 <= len(b); {
		typ, size := le.Uint32(b[off:]), le.Uint32(b[off+4:])
		if size < 8 || uint64(size) > uint64(len(b)-off) {
			return info, &ParseError{Offset: off, Type: typ, Err: fmt.Errorf("%w: %d bytes with %d left", ErrTagSize, size, len(b)-off)}
		}
		if typ == tagEnd {
			return info, nil
		}
		if err := info.decodeTag(typ, b[off:off+int(size)]); err != nil {
			return info, &ParseError{Offset: off, Type: typ, Err: err}
		}
		// Rounding cannot overflow: size <= len(b)-off and len(b) is a multiple of 8.
		off += (int(size) + 7) &^ 7
	}
	return info, &ParseError{Err: ErrNoEndTag}
}

// decodeTag fills in info from one tag; t includes the 8-byte tag
// header and is exactly the tag's declared size.
func (info *Info) decodeTag(typ uint32, t []byte) error {
	body := t[8:]
	need := func(n int) error {
		if len(body) < n {
			return fmt.Errorf("%w: %d-byte body, need %d", ErrTagSize, len(body), n)
		}
		return nil
	}
	switch typ {
	case tagCmdline:
		info.Cmdline = cString(body)
	case tagBootloader:
		info.Bootloader = cString(body)
	case tagModule:
		if err := need(8); err != nil {
			return err
		}
		info.Modules = append(info.Modules, Module{
			Start:   le.Uint32(body),
			End:     le.Uint32(body[4:]),
			Cmdline: cString(body[8:]),
		})
	case tagBasicMem:
		if err := need(8); err != nil {
			return err
		}
		info.MemLower, info.MemUpper, info.HasBasicMem = le.Uint32(body), le.Uint32(body[4:]), true
	case tagMemoryMap:
		return info.decodeMemoryMap(body)
	case tagFramebuffer:
		fb, err := decodeFramebuffer(body)
		if err != nil {
			return err
		}
		info.Framebuffer = fb
	case tagACPIOld:
		info.RSDPv1 = append([]byte(nil), body...)
	case tagACPINew:
		info.RSDPv2 = append([]byte(nil), body...)
	case tagLoadBase:
		if err := need(4); err != nil {
			return err
		}
		info.LoadBase, info.HasLoadBase = le.Uint32(body), true
	}
	return nil
}

// decodeMemoryMap reads §3.6.8 entries. The entry size is taken from
// the tag, not assumed to be 24, because the spec reserves the right to
// append fields; anything shorter than the 24 bytes we read is invalid.
func (info *Info) decodeMemoryMap(body []byte) error {
	if len(body) < 8 {
		return fmt.Errorf("%w: memory map header truncated", ErrTagSize)
	}
	entrySize := le.Uint32(body)
	if entrySize < 24 || entrySize%8 != 0 {
		return fmt.Errorf("%w: memory map entry_size %d", ErrTagSize, entrySize)
	}
	entries := body[8:]
	for len(entries) >= int(entrySize) {
		info.MemoryMap = append(info.MemoryMap, MemRegion{
			Base:   le.Uint64(entries),
			Length: le.Uint64(entries[8:]),
			Type:   le.Uint32(entries[16:]),
		})
		entries = entries[entrySize:]
	}
	return nil
}

// decodeFramebuffer follows the layout GRUB actually emits, which has a
// 16-bit reserved field (colour information at body offset 24) and a
// 16-bit palette count; older spec text shows an 8-bit field and a
// 32-bit count, but no loader in use follows it.
func decodeFramebuffer(body []byte) (*Framebuffer, error) {
	if len(body) < 24 {
		return nil, fmt.Errorf("%w: framebuffer tag truncated", ErrTagSize)
	}
	fb := &Framebuffer{
		Addr:   le.Uint64(body),
		Pitch:  le.Uint32(body[8:]),
		Width:  le.Uint32(body[12:]),
		Height: le.Uint32(body[16:]),
		BPP:    body[20],
		Type:   body[21],
	}
	color := body[24:]
	switch fb.Type {
	case FramebufferRGB:
		if len(color) < 6 {
			return nil, fmt.Errorf("%w: RGB colour info truncated", ErrTagSize)
		}
		fb.RedPos, fb.RedSize = color[0], color[1]
		fb.GreenPos, fb.GreenSize = color[2], color[3]
		fb.BluePos, fb.BlueSize = color[4], color[5]
	case FramebufferIndexed:
		if len(color) < 2 {
			return nil, fmt.Errorf("%w: palette truncated", ErrTagSize)
		}
		n := int(le.Uint16(color))
		pal := color[2:]
		if len(pal) < 3*n {
			return nil, fmt.Errorf("%w: palette of %d colours truncated", ErrTagSize, n)
		}
		fb.Palette = make([]Color, n)
		for i := range fb.Palette {
			fb.Palette[i] = Color{pal[3*i], pal[3*i+1], pal[3*i+2]}
		}
	}
	return fb, nil
}

// cString copies a NUL-terminated string. A missing terminator is
// tolerated (the tag size already bounds the string) because rejecting
// the whole boot over it would gain nothing.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
