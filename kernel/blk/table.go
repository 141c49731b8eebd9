package blk

// Partition tables, read as Linux's block/partitions code reads them:
// GPT when sector 0 is a protective MBR (a type 0xEE entry starting at
// sector 1), else a DOS MBR with its extended partition's chain of
// logical ones. Every field comes from the disk and is checked: a table
// that fails its checks gives no partitions, and an entry reaching past
// the end of the disk is refused with a note (Linux truncates such a
// partition to the disk instead).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Entry is one partition a table describes, in the disk's sectors.
type Entry struct {
	Num     int // 1.. (logical MBR partitions from 5)
	Start   uint64
	Sectors uint64
}

// MaxPartitions bounds the partitions of one disk (Linux's
// DISK_MAX_PARTS).
const MaxPartitions = 256

// Table formats ReadTable reports.
const (
	FormatNone = ""
	FormatMBR  = "dos"
	FormatGPT  = "gpt"
)

// ReadTable reads d's partition table. notes are log lines for what was
// refused or repaired (a damaged primary GPT, an entry past the end); err
// is set only when the disk could not be read.
func ReadTable(d Device) (entries []Entry, format string, notes []string, err error) {
	r := tableReader{d: d, ss: d.SectorSize(), n: d.Sectors()}
	if r.ss < 512 || r.n < 1 {
		return nil, FormatNone, nil, nil
	}
	mbr, err := r.sector(0)
	if err != nil {
		return nil, FormatNone, nil, err
	}
	if binary.LittleEndian.Uint16(mbr[510:]) != 0xaa55 {
		return nil, FormatNone, nil, nil
	}
	if protective(mbr) {
		entries, err = r.gpt()
		if err != nil {
			return nil, FormatNone, r.notes, err
		}
		return entries, FormatGPT, r.notes, nil
	}
	entries, ok, err := r.mbr(mbr)
	if err != nil || !ok {
		return nil, FormatNone, r.notes, err
	}
	return entries, FormatMBR, r.notes, nil
}

type tableReader struct {
	d     Device
	ss    int
	n     uint64 // sectors
	notes []string
}

func (r *tableReader) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf("%s: ", r.d.Name())+fmt.Sprintf(format, args...))
}

func (r *tableReader) sector(lba uint64) ([]byte, error) {
	return r.sectors(lba, 1)
}

func (r *tableReader) sectors(lba, n uint64) ([]byte, error) {
	b := make([]byte, n*uint64(r.ss))
	if _, err := r.d.ReadAt(b, int64(lba)*int64(r.ss)); err != nil {
		return nil, err
	}
	return b, nil
}

// inDisk checks an entry against the disk's size; one outside it is
// refused with a note.
func (r *tableReader) inDisk(num int, start, size uint64) bool {
	if start >= r.n || size > r.n-start {
		r.note("p%d (sectors %d+%d) extends beyond the end of the disk (%d sectors); ignored", num, start, size, r.n)
		return false
	}
	return true
}

// MBR partition entries (four of 16 bytes at 446).
const (
	mbrEntries   = 446
	typeGPT      = 0xee
	typeExtended = 0x05
	typeExtLBA   = 0x0f
	typeExtLinux = 0x85
	maxLogical   = MaxPartitions - 4
)

type mbrEntry struct {
	boot  byte
	typ   byte
	start uint64
	size  uint64
}

func mbrEntryAt(sec []byte, i int) mbrEntry {
	e := sec[mbrEntries+16*i:]
	return mbrEntry{boot: e[0], typ: e[4],
		start: uint64(binary.LittleEndian.Uint32(e[8:])), size: uint64(binary.LittleEndian.Uint32(e[12:]))}
}

func extended(typ byte) bool { return typ == typeExtended || typ == typeExtLBA || typ == typeExtLinux }

// protective reports an MBR that guards a GPT (UEFI 2.9 §5.2.3): an
// entry of type 0xEE starting at sector 1.
func protective(mbr []byte) bool {
	for i := 0; i < 4; i++ {
		if e := mbrEntryAt(mbr, i); e.typ == typeGPT && e.start == 1 {
			return true
		}
	}
	return false
}

// mbr reads a DOS partition table. ok is false when sector 0 is not one
// (a boot indicator other than 0 and 0x80: a FAT boot sector, say, or an
// 0xEE entry: a GPT disk whose GPT is unusable).
func (r *tableReader) mbr(sec []byte) (entries []Entry, ok bool, err error) {
	for i := 0; i < 4; i++ {
		e := mbrEntryAt(sec, i)
		if e.boot != 0 && e.boot != 0x80 || e.typ == typeGPT {
			return nil, false, nil
		}
	}
	var ext []Entry
	for i := 0; i < 4; i++ {
		e := mbrEntryAt(sec, i)
		if e.typ == 0 || e.size == 0 || !r.inDisk(i+1, e.start, e.size) {
			continue
		}
		if extended(e.typ) {
			// The extended partition's own device covers only its
			// first KiB (at least one sector), as on Linux: room for
			// a boot loader, not for a file system.
			size := min(e.size, max(1, uint64(1024/r.ss)))
			entries = append(entries, Entry{Num: i + 1, Start: e.start, Sectors: size})
			ext = append(ext, Entry{Start: e.start, Sectors: e.size})
			continue
		}
		entries = append(entries, Entry{Num: i + 1, Start: e.start, Sectors: e.size})
	}
	num := 5
	for _, x := range ext {
		logical, err := r.logical(x, &num)
		if err != nil {
			return nil, false, err
		}
		entries = append(entries, logical...)
	}
	return entries, true, nil
}

// logical follows the chain of extended boot records in x: each holds
// one logical partition (relative to the record) and a link to the next
// record (relative to x's start). The chain is bounded and may not
// revisit a record or leave x.
func (r *tableReader) logical(x Entry, num *int) ([]Entry, error) {
	var out []Entry
	seen := map[uint64]bool{}
	at := x.Start
	for *num < 5+maxLogical {
		if seen[at] {
			r.note("extended partition chain loops at sector %d; stopped", at)
			break
		}
		seen[at] = true
		sec, err := r.sector(at)
		if err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint16(sec[510:]) != 0xaa55 {
			break
		}
		next := uint64(0)
		data := false
		for i := 0; i < 4; i++ {
			e := mbrEntryAt(sec, i)
			if e.typ == 0 || e.size == 0 {
				continue
			}
			if extended(e.typ) {
				if next == 0 {
					next = x.Start + e.start
				}
				continue
			}
			if data {
				continue // one logical partition per record
			}
			data = true
			start := at + e.start
			if start < x.Start || start+e.size > x.Start+x.Sectors {
				r.note("p%d (sectors %d+%d) lies outside its extended partition; ignored", *num, start, e.size)
			} else if r.inDisk(*num, start, e.size) {
				out = append(out, Entry{Num: *num, Start: start, Sectors: e.size})
			}
			*num++
		}
		if next == 0 || next >= x.Start+x.Sectors {
			break
		}
		at = next
	}
	return out, nil
}

// GPT header fields (UEFI 2.9 §5.3.2).
const (
	gptMinHeader = 92
	gptEntrySize = 128
	gptMaxBytes  = 4 << 20 // bounds the entry array a header may claim
)

var gptSignature = []byte("EFI PART")

type gptHeader struct {
	firstUsable uint64
	lastUsable  uint64
	entriesLBA  uint64
	count       uint32
	entrySize   uint32
	entriesCRC  uint32
}

// gpt reads the primary GPT, or the backup header at the disk's last
// sector when the primary fails its checks.
func (r *tableReader) gpt() ([]Entry, error) {
	h, ents, why, err := r.gptAt(1)
	if err != nil {
		return nil, err
	}
	if why != "" {
		r.note("primary GPT header invalid (%s); trying the backup at sector %d", why, r.n-1)
		var why2 string
		h, ents, why2, err = r.gptAt(r.n - 1)
		if err != nil {
			return nil, err
		}
		if why2 != "" {
			r.note("backup GPT header invalid too (%s); no partitions", why2)
			return nil, nil
		}
	}
	var out []Entry
	for i := uint32(0); i < h.count && len(out) < MaxPartitions; i++ {
		e := ents[i*h.entrySize:]
		if allZero(e[:16]) { // unused entry: no type
			continue
		}
		first, last := binary.LittleEndian.Uint64(e[32:]), binary.LittleEndian.Uint64(e[40:])
		num := int(i) + 1
		if last < first {
			r.note("p%d ends (sector %d) before it starts (%d); ignored", num, last, first)
			continue
		}
		if !r.inDisk(num, first, last-first+1) {
			continue
		}
		out = append(out, Entry{Num: num, Start: first, Sectors: last - first + 1})
	}
	return out, nil
}

// gptAt reads and checks the GPT header at lba and its entry array; why
// says what is wrong with them ("" if nothing).
func (r *tableReader) gptAt(lba uint64) (h gptHeader, ents []byte, why string, err error) {
	sec, err := r.sector(lba)
	if err != nil {
		return h, nil, "", err
	}
	if !bytes.Equal(sec[:8], gptSignature) {
		return h, nil, "no signature", nil
	}
	size := binary.LittleEndian.Uint32(sec[12:])
	if size < gptMinHeader || size > uint32(r.ss) {
		return h, nil, fmt.Sprintf("header size %d", size), nil
	}
	sum := binary.LittleEndian.Uint32(sec[16:])
	hdr := append([]byte(nil), sec[:size]...)
	clear(hdr[16:20])
	if crc32.ChecksumIEEE(hdr) != sum {
		return h, nil, "header CRC mismatch", nil
	}
	if my := binary.LittleEndian.Uint64(sec[24:]); my != lba {
		return h, nil, fmt.Sprintf("header says it is at sector %d, read at %d", my, lba), nil
	}
	h = gptHeader{
		firstUsable: binary.LittleEndian.Uint64(sec[40:]),
		lastUsable:  binary.LittleEndian.Uint64(sec[48:]),
		entriesLBA:  binary.LittleEndian.Uint64(sec[72:]),
		count:       binary.LittleEndian.Uint32(sec[80:]),
		entrySize:   binary.LittleEndian.Uint32(sec[84:]),
		entriesCRC:  binary.LittleEndian.Uint32(sec[88:]),
	}
	last := r.n - 1
	if h.firstUsable > h.lastUsable || h.lastUsable > last {
		return h, nil, fmt.Sprintf("usable sectors %d-%d on a disk of %d", h.firstUsable, h.lastUsable, r.n), nil
	}
	if h.entrySize != gptEntrySize {
		return h, nil, fmt.Sprintf("entry size %d", h.entrySize), nil
	}
	bytes := uint64(h.count) * uint64(h.entrySize)
	if h.count == 0 || bytes > gptMaxBytes {
		return h, nil, fmt.Sprintf("%d entries", h.count), nil
	}
	nsec := (bytes + uint64(r.ss) - 1) / uint64(r.ss)
	if h.entriesLBA < 2 || h.entriesLBA > last || nsec > r.n-h.entriesLBA {
		return h, nil, fmt.Sprintf("entry array at sector %d (%d sectors) outside the disk", h.entriesLBA, nsec), nil
	}
	arr, err := r.sectors(h.entriesLBA, nsec)
	if err != nil {
		return h, nil, "", err
	}
	arr = arr[:bytes]
	if crc32.ChecksumIEEE(arr) != h.entriesCRC {
		return h, nil, "entry array CRC mismatch", nil
	}
	return h, arr, "", nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
