package multiboot

import "sort"

// PageSize is the granularity UsableRAM rounds to; the physical page
// allocator can only hand out whole 4 KiB frames.
const PageSize = 4096

type span struct{ start, end uint64 } // [start, end)

// UsableRAM returns the RAM the kernel may allocate from: available
// (type 1) regions, sorted and merged, minus any part that any other
// region type also claims, shrunk inward to whole pages. Firmware maps
// are known to contain overlapping entries, and when they disagree the
// only safe reading is that the memory is not free. ACPI-reclaimable
// memory is excluded too; it becomes usable only after the ACPI tables
// in it have been consumed.
//
// It does not know where the kernel image, boot modules or this boot
// information live; the caller must carve those out.
func (i Info) UsableRAM() []MemRegion {
	var avail, reserved []span
	for _, r := range i.MemoryMap {
		if r.Length == 0 {
			continue
		}
		s := span{r.Base, r.End()}
		if r.Type == MemAvailable {
			avail = append(avail, s)
		} else {
			reserved = append(reserved, s)
		}
	}
	avail = mergeSpans(avail)
	reserved = mergeSpans(reserved)

	var out []MemRegion
	j := 0
	for _, a := range avail {
		// Both lists are sorted and disjoint, so reserved spans that end
		// before this available span can never matter again.
		for j < len(reserved) && reserved[j].end <= a.start {
			j++
		}
		start := a.start
		for k := j; k < len(reserved) && reserved[k].start < a.end; k++ {
			if reserved[k].start > start {
				out = appendAligned(out, start, reserved[k].start)
			}
			if reserved[k].end > start {
				start = reserved[k].end
			}
		}
		if start < a.end {
			out = appendAligned(out, start, a.end)
		}
	}
	return out
}

// mergeSpans sorts spans and coalesces overlapping or touching ones.
func mergeSpans(s []span) []span {
	if len(s) == 0 {
		return nil
	}
	sort.Slice(s, func(a, b int) bool { return s[a].start < s[b].start })
	out := s[:1]
	for _, x := range s[1:] {
		last := &out[len(out)-1]
		if x.start <= last.end {
			last.end = max(last.end, x.end)
			continue
		}
		out = append(out, x)
	}
	return out
}

func appendAligned(out []MemRegion, start, end uint64) []MemRegion {
	const mask = PageSize - 1
	if start > ^uint64(0)-mask {
		return out // rounding up would wrap; no whole page fits
	}
	start = (start + mask) &^ mask
	end &^= mask
	if start >= end {
		return out
	}
	return append(out, MemRegion{Base: start, Length: end - start, Type: MemAvailable})
}

// LowPage returns the lowest free page below 640 KiB, for the application
// processors' real-mode start-up code (a start-up IPI names a page there):
// usable RAM but page 0, clear of the boot information at [infoStart,
// infoEnd) and of every module (UEFI loaders put modules in low memory).
// It reports false if there is none.
func (i Info) LowPage(infoStart, infoEnd uint64) (uint64, bool) {
	const limit = 0xA0000 // the legacy video and ROM area begins
	for _, r := range i.UsableRAM() {
		for p := max(r.Base, PageSize); p+PageSize <= min(r.End(), limit); p += PageSize {
			busy := p < infoEnd && infoStart < p+PageSize
			for _, m := range i.Modules {
				busy = busy || (p < uint64(m.End) && uint64(m.Start) < p+PageSize)
			}
			if !busy {
				return p, true
			}
		}
	}
	return 0, false
}
