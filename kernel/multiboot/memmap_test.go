package multiboot

import (
	"encoding/binary"
	"reflect"
	"testing"
)

func TestUsableRAMQEMU(t *testing.T) {
	got := Info{MemoryMap: qemuMap}.UsableRAM()
	want := []MemRegion{
		{0x0, 0x9f000, MemAvailable}, // 0x9fc00 rounded down to a page
		{0x100000, 0x7ee0000, MemAvailable},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestUsableRAM(t *testing.T) {
	const max = ^uint64(0)
	tests := []struct {
		name string
		in   []MemRegion
		want []MemRegion
	}{
		{"Empty", nil, nil},
		{"OnlyReserved", []MemRegion{{0, 0x10000, MemReserved}}, nil},
		{"Unaligned", []MemRegion{{0x1001, 0x2fff, 1}}, []MemRegion{{0x2000, 0x2000, 1}}},
		{"SmallerThanPage", []MemRegion{{0x1001, 0x1000, 1}}, nil},
		{"ZeroLength", []MemRegion{{0x1000, 0, 1}, {0x3000, 0x1000, 1}}, []MemRegion{{0x3000, 0x1000, 1}}},
		{
			"UnsortedOverlappingAndAdjacentMerge",
			[]MemRegion{{0x5000, 0x1000, 1}, {0x1000, 0x2000, 1}, {0x2800, 0x1000, 1}, {0x3800, 0x1800, 1}},
			[]MemRegion{{0x1000, 0x5000, 1}},
		},
		{
			// Merging must happen before rounding, or the seam would lose a page.
			"UnalignedSeam",
			[]MemRegion{{0x1000, 0x1800, 1}, {0x2800, 0x1800, 1}},
			[]MemRegion{{0x1000, 0x3000, 1}},
		},
		{
			"ReservedSplits",
			[]MemRegion{{0x0, 0x10000, 1}, {0x4800, 0x100, MemReserved}},
			[]MemRegion{{0x0, 0x4000, 1}, {0x5000, 0xb000, 1}},
		},
		{
			"ReservedOverlapsEdges",
			[]MemRegion{{0x2000, 0x8000, 1}, {0x1000, 0x1800, MemNVS}, {0x9000, 0x4000, MemBad}},
			[]MemRegion{{0x3000, 0x6000, 1}},
		},
		{
			"ReservedCoversAll",
			[]MemRegion{{0x2000, 0x2000, 1}, {0x0, 0x10000, MemReserved}},
			nil,
		},
		{
			"ACPIReclaimableExcluded",
			[]MemRegion{{0x0, 0x8000, 1}, {0x6000, 0x2000, MemACPIReclaimable}},
			[]MemRegion{{0x0, 0x6000, 1}},
		},
		{
			"UnknownTypeExcluded",
			[]MemRegion{{0x0, 0x8000, 1}, {0x0, 0x1000, 20}},
			[]MemRegion{{0x1000, 0x7000, 1}},
		},
		{
			"OneReservedManyAvailable",
			[]MemRegion{{0x0, 0x2000, 1}, {0x3000, 0x2000, 1}, {0x6000, 0x2000, 1}, {0x1000, 0x6000, 2}},
			[]MemRegion{{0x0, 0x1000, 1}, {0x7000, 0x1000, 1}},
		},
		{
			"ManyReservedOneAvailable",
			[]MemRegion{{0x0, 0x10000, 1}, {0x1000, 0x1000, 2}, {0x3000, 0x1000, 4}, {0x3800, 0x1000, 2}, {0xf000, 0x5000, 2}},
			[]MemRegion{{0x0, 0x1000, 1}, {0x2000, 0x1000, 1}, {0x5000, 0xa000, 1}},
		},
		{
			"TopOfAddressSpace",
			[]MemRegion{{max - 0x2fff, 0x3000, 1}},
			[]MemRegion{{max - 0x2fff, 0x2000, 1}}, // the last partial page is dropped
		},
		{"OverflowingLength", []MemRegion{{0xffff_ffff_ffff_f001, max, 1}}, nil},
		{
			"OverflowingLengthClamped",
			[]MemRegion{{0xffff_ffff_ffff_0000, max, 1}},
			[]MemRegion{{0xffff_ffff_ffff_0000, 0xf000, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Info{MemoryMap: tt.in}.UsableRAM()
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestUsableRAMDoesNotModifyMap(t *testing.T) {
	in := []MemRegion{{0x5000, 0x1000, 1}, {0x1000, 0x1000, 1}}
	orig := append([]MemRegion(nil), in...)
	Info{MemoryMap: in}.UsableRAM()
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("memory map reordered to %v", in)
	}
}

// checkUsable verifies UsableRAM's contract against a brute-force
// reading of the map: output sorted, page-aligned, separated, inside
// available memory and clear of every other region.
func checkUsable(t *testing.T, mm []MemRegion, out []MemRegion) {
	t.Helper()
	for i, r := range out {
		if r.Type != MemAvailable || r.Length == 0 || r.Base%PageSize != 0 || r.Length%PageSize != 0 || r.End() < r.Base+r.Length {
			t.Fatalf("bad region %d: %#v", i, r)
		}
		if i > 0 && out[i-1].End() >= r.Base {
			t.Fatalf("regions %d and %d not sorted and separated: %#v", i-1, i, out)
		}
		for _, m := range mm {
			if m.Type != MemAvailable && m.Length > 0 && m.Base < r.End() && r.Base < m.End() {
				t.Fatalf("usable %#v overlaps non-available %#v", r, m)
			}
		}
	}
}

// FuzzParse feeds arbitrary bytes to Parse. Beyond not panicking, any
// memory map it accepts must yield a UsableRAM result that satisfies
// the documented contract.
func FuzzParse(f *testing.F) {
	f.Add(grubInfo())
	f.Add((&builder{}).bytes())
	f.Add((&builder{}).tag(tagMemoryMap, mmapBody(24, MemRegion{0x1000, 0x10000, 1}, MemRegion{0x3000, 0x800, 2})).bytes())
	f.Add((&builder{}).tag(tagFramebuffer, fbBody(FramebufferIndexed, []byte{2, 0, 1, 2, 3, 4, 5, 6})).bytes())
	f.Add([]byte{16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := Parse(b)
		if err != nil {
			return
		}
		if total := binary.LittleEndian.Uint32(b); int(total) > len(b) || total%8 != 0 {
			t.Fatalf("accepted total_size %d with %d bytes", total, len(b))
		}
		checkUsable(t, info.MemoryMap, info.UsableRAM())
	})
}

// FuzzUsableRAM checks completeness as well as soundness on small
// address spaces where every 64-byte chunk can be examined: a page must
// be returned exactly when all of it is available and none of it is
// claimed by another region.
func FuzzUsableRAM(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 1, 64, 0, 1, 0, 2})
	f.Add([]byte{1, 0, 200, 1, 1, 3, 0, 10, 0, 3, 100, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		const chunk, space = 64, 1 << 18
		var mm []MemRegion
		for ; len(b) >= 5 && len(mm) < 16; b = b[5:] {
			base := uint64(binary.LittleEndian.Uint16(b)) * chunk % space
			length := uint64(binary.LittleEndian.Uint16(b[2:])) * chunk % space
			typ := uint32(b[4]%3) + 1
			mm = append(mm, MemRegion{base, length, typ})
		}
		out := Info{MemoryMap: mm}.UsableRAM()
		checkUsable(t, mm, out)

		inOut := func(a uint64) bool {
			for _, r := range out {
				if a >= r.Base && a < r.End() {
					return true
				}
			}
			return false
		}
		for page := uint64(0); page < 2*space; page += PageSize {
			usable := true
			for a := page; a < page+PageSize && usable; a += chunk {
				avail, other := false, false
				for _, m := range mm {
					if a >= m.Base && a < m.End() {
						if m.Type == MemAvailable {
							avail = true
						} else {
							other = true
						}
					}
				}
				usable = avail && !other
			}
			if usable != inOut(page) {
				t.Fatalf("page %#x: usable=%v but UsableRAM says %v; map %#v, result %#v", page, usable, !usable, mm, out)
			}
		}
	})
}

func TestLowPage(t *testing.T) {
	tests := []struct {
		name       string
		mem        []MemRegion
		mods       []Module
		start, end uint64
		want       uint64
		wantOK     bool
	}{
		{"QEMU", qemuMap, nil, 0x9000, 0x9800, 0x1000, true},
		{"InfoOnFirstPage", qemuMap, nil, 0x1000, 0x1010, 0x2000, true},
		{"ModulesLow", qemuMap, []Module{{Start: 0x1000, End: 0x3001}, {Start: 0x4000, End: 0x5000}}, 0x6000, 0x6100, 0x5000, true},
		{"OnlyPageZero", []MemRegion{{0, 0x1000, MemAvailable}, {0x100000, 0x1000000, MemAvailable}}, nil, 0, 0, 0, false},
		{"ReservedOverlap", []MemRegion{{0, 0x9fc00, MemAvailable}, {0x1000, 0x3000, MemReserved}}, nil, 0, 0, 0x4000, true},
		{"AllBusy", []MemRegion{{0, 0x3000, MemAvailable}}, []Module{{Start: 0x1000, End: 0x3000}}, 0, 0, 0, false},
		{"AboveLegacyLimit", []MemRegion{{0xA0000, 0x10000, MemAvailable}}, nil, 0, 0, 0, false},
	}
	for _, tc := range tests {
		got, ok := Info{MemoryMap: tc.mem, Modules: tc.mods}.LowPage(tc.start, tc.end)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: got %#x, %v; want %#x, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}
