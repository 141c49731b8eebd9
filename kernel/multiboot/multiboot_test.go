package multiboot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// builder assembles boot information the way GRUB lays it out, so the
// tests exercise the same padding and alignment a real boot does.
type builder struct{ tags []byte }

func (b *builder) tag(typ uint32, body []byte) *builder {
	t := binary.LittleEndian.AppendUint32(nil, typ)
	t = binary.LittleEndian.AppendUint32(t, uint32(8+len(body)))
	t = append(t, body...)
	for len(t)%8 != 0 {
		t = append(t, 0xAA) // padding content is unspecified; make it non-zero to catch misuse
	}
	b.tags = append(b.tags, t...)
	return b
}

func (b *builder) str(typ uint32, s string) *builder { return b.tag(typ, append([]byte(s), 0)) }

func (b *builder) bytes() []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(8+len(b.tags)+8))
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = append(out, b.tags...)
	return append(out, 0, 0, 0, 0, 8, 0, 0, 0) // end tag
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func mmapBody(entrySize uint32, rs ...MemRegion) []byte {
	b := u32s(entrySize, 0)
	for _, r := range rs {
		e := binary.LittleEndian.AppendUint64(nil, r.Base)
		e = binary.LittleEndian.AppendUint64(e, r.Length)
		e = binary.LittleEndian.AppendUint32(e, r.Type)
		e = append(e, make([]byte, int(entrySize)-len(e))...)
		b = append(b, e...)
	}
	return b
}

// qemuMap is the e820 map SeaBIOS reports for a 128 MiB QEMU guest,
// as GRUB passes it on.
var qemuMap = []MemRegion{
	{0x0, 0x9fc00, MemAvailable},
	{0x9fc00, 0x400, MemReserved},
	{0xf0000, 0x10000, MemReserved},
	{0x100000, 0x7ee0000, MemAvailable},
	{0x7fe0000, 0x20000, MemReserved},
	{0xfffc0000, 0x40000, MemReserved},
}

var rsdpV1 = []byte("RSD PTR \x8aBOCHS \x00\xef\x1b\xfe\x07")

func fbBody(typ uint8, color []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, 0xfd000000)
	b = append(b, u32s(4096, 1024, 768)...)
	b = append(b, 32, typ, 0, 0)
	return append(b, color...)
}

func grubInfo() []byte {
	var b builder
	b.str(tagCmdline, `loglevel=debug init="/bin/sh -c x"`).
		str(tagBootloader, "GRUB 2.12").
		tag(tagModule, append(u32s(0x200000, 0x280000), "initrd.cpio\x00"...)).
		tag(tagModule, append(u32s(0x280000, 0x281234), 0)).
		tag(tagBasicMem, u32s(639, 130048)).
		tag(5, u32s(0x80, 0xffffffff, 0xffffffff)). // BIOS boot device: not decoded
		tag(tagMemoryMap, mmapBody(24, qemuMap...)).
		tag(tagFramebuffer, fbBody(FramebufferRGB, []byte{16, 8, 8, 8, 0, 8})).
		tag(tagACPIOld, rsdpV1).
		tag(99, []byte("future tag")).
		tag(tagLoadBase, u32s(0x100000))
	return b.bytes()
}

func TestParseGRUB(t *testing.T) {
	info, err := Parse(grubInfo())
	if err != nil {
		t.Fatal(err)
	}
	want := Info{
		Cmdline:    `loglevel=debug init="/bin/sh -c x"`,
		Bootloader: "GRUB 2.12",
		MemLower:   639, MemUpper: 130048, HasBasicMem: true,
		MemoryMap: qemuMap,
		Modules: []Module{
			{Start: 0x200000, End: 0x280000, Cmdline: "initrd.cpio"},
			{Start: 0x280000, End: 0x281234, Cmdline: ""},
		},
		RSDPv1: rsdpV1,
		Framebuffer: &Framebuffer{
			Addr: 0xfd000000, Pitch: 4096, Width: 1024, Height: 768, BPP: 32, Type: FramebufferRGB,
			RedPos: 16, RedSize: 8, GreenPos: 8, GreenSize: 8, BluePos: 0, BlueSize: 8,
		},
		LoadBase: 0x100000, HasLoadBase: true,
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("Parse mismatch:\n got %+v\nwant %+v", info, want)
	}
}

func TestParseCopiesData(t *testing.T) {
	raw := grubInfo()
	info, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 0xEE
	}
	if !bytes.Equal(info.RSDPv1, rsdpV1) || info.Cmdline == "" || info.Modules[0].Cmdline != "initrd.cpio" {
		t.Error("parsed data aliases the boot information memory")
	}
}

func TestParseMinimalAndTrailingBytes(t *testing.T) {
	min := (&builder{}).bytes()
	info, err := Parse(append(min, 1, 2, 3, 4, 5, 6, 7, 8, 9)) // bytes past total_size are not ours
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(info, Info{}) {
		t.Errorf("empty boot info decoded to %+v", info)
	}
}

func TestParseVariants(t *testing.T) {
	t.Run("RSDPv2", func(t *testing.T) {
		v2 := make([]byte, 36)
		copy(v2, "RSD PTR ")
		info, err := Parse((&builder{}).tag(tagACPINew, v2).bytes())
		if err != nil || !bytes.Equal(info.RSDPv2, v2) || info.RSDPv1 != nil {
			t.Errorf("got %v, %v", info.RSDPv2, err)
		}
	})
	t.Run("LastCmdlineWins", func(t *testing.T) {
		info, err := Parse((&builder{}).str(tagCmdline, "a").str(tagCmdline, "b").bytes())
		if err != nil || info.Cmdline != "b" {
			t.Errorf("got %q, %v", info.Cmdline, err)
		}
	})
	t.Run("UnterminatedString", func(t *testing.T) {
		info, err := Parse((&builder{}).tag(tagCmdline, []byte("abc")).bytes())
		if err != nil || info.Cmdline != "abc" {
			t.Errorf("got %q, %v", info.Cmdline, err)
		}
	})
	t.Run("WideMemoryMapEntries", func(t *testing.T) {
		rs := []MemRegion{{0x1000, 0x2000, 1}, {0x5000, 0x1000, 2}}
		info, err := Parse((&builder{}).tag(tagMemoryMap, mmapBody(32, rs...)).bytes())
		if err != nil || !reflect.DeepEqual(info.MemoryMap, rs) {
			t.Errorf("got %+v, %v", info.MemoryMap, err)
		}
	})
	t.Run("PartialTrailingEntryIgnored", func(t *testing.T) {
		body := append(mmapBody(24, MemRegion{0, 0x1000, 1}), make([]byte, 20)...)
		info, err := Parse((&builder{}).tag(tagMemoryMap, body).bytes())
		if err != nil || len(info.MemoryMap) != 1 {
			t.Errorf("got %+v, %v", info.MemoryMap, err)
		}
	})
	t.Run("IndexedFramebuffer", func(t *testing.T) {
		color := []byte{2, 0, 1, 2, 3, 4, 5, 6}
		info, err := Parse((&builder{}).tag(tagFramebuffer, fbBody(FramebufferIndexed, color)).bytes())
		if err != nil {
			t.Fatal(err)
		}
		if want := []Color{{1, 2, 3}, {4, 5, 6}}; !reflect.DeepEqual(info.Framebuffer.Palette, want) {
			t.Errorf("palette %v, want %v", info.Framebuffer.Palette, want)
		}
	})
	t.Run("EGATextFramebuffer", func(t *testing.T) {
		info, err := Parse((&builder{}).tag(tagFramebuffer, fbBody(FramebufferEGAText, nil)).bytes())
		if err != nil || info.Framebuffer == nil || info.Framebuffer.Type != FramebufferEGAText {
			t.Errorf("got %+v, %v", info.Framebuffer, err)
		}
	})
}

func TestParseErrors(t *testing.T) {
	good := grubInfo()
	withTotal := func(b []byte, total uint32) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b, total)
		return b
	}
	// A tag whose size claims more than the structure holds.
	oversized := (&builder{}).str(tagCmdline, "abc").bytes()
	binary.LittleEndian.PutUint32(oversized[12:], 1000)
	// A tag whose size is smaller than its own header.
	tiny := (&builder{}).str(tagCmdline, "abc").bytes()
	binary.LittleEndian.PutUint32(tiny[12:], 4)
	noEnd := (&builder{}).str(tagCmdline, "abc").bytes()
	noEnd = withTotal(noEnd[:len(noEnd)-8], uint32(len(noEnd)-8))

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"Empty", nil, ErrTruncated},
		{"ShortHeader", good[:7], ErrTruncated},
		{"TotalTooSmall", withTotal(good, 8), ErrTruncated},
		{"TotalPastBuffer", good[:len(good)-8], ErrTruncated},
		{"TotalHuge", withTotal(good, 0xfffffff8), ErrTruncated},
		{"TotalUnaligned", withTotal(append(good, 0, 0, 0, 0), uint32(len(good)+4)), ErrMisaligned},
		{"TagOversized", oversized, ErrTagSize},
		{"TagUndersized", tiny, ErrTagSize},
		{"NoEndTag", noEnd, ErrNoEndTag},
		{"EndTagCutOff", withTotal(good, uint32(len(good)-8)), ErrNoEndTag},
		{"ModuleShort", (&builder{}).tag(tagModule, u32s(1)).bytes(), ErrTagSize},
		{"BasicMemShort", (&builder{}).tag(tagBasicMem, u32s(1)).bytes(), ErrTagSize},
		{"LoadBaseShort", (&builder{}).tag(tagLoadBase, nil).bytes(), ErrTagSize},
		{"MmapHeaderShort", (&builder{}).tag(tagMemoryMap, u32s(24)).bytes(), ErrTagSize},
		{"MmapEntrySizeZero", (&builder{}).tag(tagMemoryMap, u32s(0, 0, 1, 2, 3, 4)).bytes(), ErrTagSize},
		{"MmapNoEntries", (&builder{}).tag(tagMemoryMap, u32s(24, 0)).bytes(), nil},
		{"MmapEntrySize20", (&builder{}).tag(tagMemoryMap, u32s(20, 0)).bytes(), ErrTagSize},
		{"MmapEntrySizeOdd", (&builder{}).tag(tagMemoryMap, u32s(28, 0)).bytes(), ErrTagSize},
		{"FramebufferShort", (&builder{}).tag(tagFramebuffer, make([]byte, 20)).bytes(), ErrTagSize},
		{"RGBShort", (&builder{}).tag(tagFramebuffer, fbBody(FramebufferRGB, []byte{1, 2, 3})).bytes(), ErrTagSize},
		{"PaletteCountShort", (&builder{}).tag(tagFramebuffer, fbBody(FramebufferIndexed, []byte{1})).bytes(), ErrTagSize},
		{"PaletteShort", (&builder{}).tag(tagFramebuffer, fbBody(FramebufferIndexed, []byte{2, 0, 1, 2, 3})).bytes(), ErrTagSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil {
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Error() == "" {
				t.Errorf("error %v is not a *ParseError", err)
			}
		})
	}
}

func TestParseErrorLocation(t *testing.T) {
	b := (&builder{}).str(tagCmdline, "x").tag(tagModule, nil).bytes()
	_, err := Parse(b)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Offset != 24 || pe.Type != tagModule {
		t.Fatalf("err = %#v, want module tag at offset 24", err)
	}
	if got, want := pe.Error(), "multiboot2: tag type 3 at offset 24: invalid tag size: 0-byte body, need 8"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestMemRegionEndSaturates(t *testing.T) {
	if got := (MemRegion{Base: 0x1000, Length: 0x2000}).End(); got != 0x3000 {
		t.Errorf("End = %#x", got)
	}
	if got := (MemRegion{Base: 1 << 63, Length: 1 << 63}).End(); got != ^uint64(0) {
		t.Errorf("overflowing End = %#x, want saturation", got)
	}
}
