package ahci

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"shortbread/kernel/blk"
)

func trimDisk(size, ss int) *simDisk {
	d := newDisk(size, ss, true)
	d.trim, d.drat = true, true
	for i := range d.data {
		d.data[i] = 0xa5
	}
	return d
}

// onlyZeroed checks that exactly the bytes [from, to) of b are zero.
func onlyZeroed(t *testing.T, b []byte, from, to int) {
	t.Helper()
	for i, v := range b {
		in := i >= from && i < to
		if in && v != 0 || !in && v != 0xa5 {
			t.Fatalf("byte %d is %#x after the trim of [%d, %d)", i, v, from, to)
		}
	}
}

// A range longer than one entry's 65,535 sectors: two entries in one
// 512-byte payload (the rest of it zero), sent as a non-queued DSM
// with the TRIM bit (the simulated HBA checks the FIS and the payload's
// size), amid queued reads.
func TestTrim(t *testing.T) {
	d := trimDisk(64<<20, 512)
	c, h, _ := start(t, true, true, d)
	k := c.Disks()[0]
	if !k.CanDiscard() || !blk.CanDiscard(blk.Count(k)) || k.DiscardZeroes() {
		t.Fatalf("TRIM %v, zeroes %v: want TRIM without the zeroes promise (QEMU's word 69)", k.CanDiscard(), k.DiscardZeroes())
	}
	done := make(chan error)
	go func() {
		_, err := k.ReadAt(make([]byte, 1<<20), 60<<20)
		done <- err
	}()
	if err := k.Discard(10*512, 131000*512); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := [][2]uint64{{10, 65535}, {65545, 65465}}; fmt.Sprint(d.trims) != fmt.Sprint(want) || d.dsms != 1 {
		t.Errorf("%d commands, entries %v; want one with %v", d.dsms, d.trims, want)
	}
	onlyZeroed(t, d.data, 10*512, 131010*512)
}

// On 4 KiB sectors the entries count 4 KiB sectors.
func TestTrim4K(t *testing.T) {
	d := trimDisk(4<<20, 4096)
	c, h, _ := start(t, true, true, d)
	k := c.Disks()[0]
	if err := k.Discard(8192, 100*4096); err != nil {
		t.Fatal(err)
	}
	if err := k.Discard(512, 4096); !errors.Is(err, blk.ErrAlign) {
		t.Errorf("a trim of 512-byte sectors on a 4 KiB-sector disk: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if fmt.Sprint(d.trims) != "[[2 100]]" {
		t.Errorf("entries %v", d.trims)
	}
	onlyZeroed(t, d.data, 8192, 8192+100*4096)
}

// The payload: 64 entries a block, each at most 65,535 sectors, LBA in
// the low 48 bits, count in the high 16, as many blocks as word 105
// allows (one page at most), the last block padded with zero entries.
func TestTrimPayload(t *testing.T) {
	lba, left := uint64(1)<<40, uint64(200*65535+7)
	p := trimPayload(&lba, &left, 1)
	if len(p) != 512 || left != 136*65535+7 || lba != 1<<40+64*65535 {
		t.Fatalf("first payload: %d bytes, %d sectors left, next LBA %d", len(p), left, lba)
	}
	for i := 0; i < 64; i++ {
		e := binary.LittleEndian.Uint64(p[8*i:])
		if e&(1<<48-1) != 1<<40+uint64(i)*65535 || e>>48 != 65535 {
			t.Fatalf("entry %d: %#x", i, e)
		}
	}
	p = trimPayload(&lba, &left, 3)
	if len(p) != 3*512 || left != 0 {
		t.Fatalf("second payload: %d bytes, %d sectors left", len(p), left)
	}
	last := binary.LittleEndian.Uint64(p[8*136:])
	if last>>48 != 7 || last&(1<<48-1) != 1<<40+200*65535 || binary.LittleEndian.Uint64(p[8*137:]) != 0 {
		t.Errorf("last entry %#x, padding %#x", last, binary.LittleEndian.Uint64(p[8*137:]))
	}
	lba, left = 0, 1
	if p := trimPayload(&lba, &left, 8); len(p) != 512 {
		t.Errorf("one sector: %d bytes of payload", len(p))
	}
}

// Word 105 sets the payload blocks a command carries: 0 (QEMU's) is one,
// and more than a page's worth is held to a page.
func TestTrimIdentify(t *testing.T) {
	for _, c := range []struct{ w105, blocks int }{{0, 1}, {4, 4}, {100, 8}} {
		d := trimDisk(1<<20, 512)
		d.trimBlocks = uint16(c.w105)
		ctl, _, _ := start(t, true, true, d)
		if got := ctl.Disks()[0].trimBlocks; got != c.blocks {
			t.Errorf("word 105 = %d: %d blocks a command, want %d", c.w105, got, c.blocks)
		}
	}
}

// No TRIM in IDENTIFY: no discard, and nothing sent. A disk that fails
// the command (a range beyond what it holds): EIO, logged with the
// first sector, and the port works afterwards.
func TestTrimUnsupportedAndFailing(t *testing.T) {
	plain := newDisk(1<<20, 512, true)
	c, h, _ := start(t, true, true, plain)
	k := c.Disks()[0]
	if k.CanDiscard() || !errors.Is(k.Discard(0, 512), blk.ErrNoDiscard) {
		t.Error("a disk without TRIM discards")
	}
	h.mu.Lock()
	if plain.dsms != 0 {
		t.Errorf("%d DSM commands sent", plain.dsms)
	}
	h.mu.Unlock()

	d := trimDisk(1<<20, 512)
	c, h, l := start(t, true, true, d)
	k = c.Disks()[0]
	for _, cs := range []struct {
		off, n int64
		err    error
	}{{1, 512, blk.ErrAlign}, {0, 511, blk.ErrAlign}, {1<<20 - 512, 1024, blk.ErrRange}, {-512, 512, blk.ErrAlign}} {
		if err := k.Discard(cs.off, cs.n); !errors.Is(err, cs.err) {
			t.Errorf("Discard(%d, %d) = %v, want %v", cs.off, cs.n, err, cs.err)
		}
	}
	h.mu.Lock()
	d.data = d.data[:512<<9] // the disk now holds less than IDENTIFY said
	h.mu.Unlock()
	err := k.Discard(1000*512, 8*512)
	if !errors.Is(err, blk.ErrIO) || !strings.Contains(err.Error(), "sda: sector 1000") || !l.has("ahci sda: sector 1000:") {
		t.Errorf("failed trim: %v; log %q", err, l.lines)
	}
	if _, err := k.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Errorf("after the failed trim: %v", err)
	}
}
