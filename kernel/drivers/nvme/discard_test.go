package nvme_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/nvme/nvmetest"
)

func filled(size int, shift uint) *nvmetest.Namespace {
	n := ns(size, shift)
	for i := range n.Data {
		n.Data[i] = 0xa5
	}
	return n
}

// zeroedOnly checks that exactly the bytes [from, to) of b are zero.
func zeroedOnly(t *testing.T, b []byte, from, to int) {
	t.Helper()
	for i, v := range b {
		in := i >= from && i < to
		if in && v != 0 || !in && v != 0xa5 {
			t.Fatalf("byte %d is %#x after the discard of [%d, %d)", i, v, from, to)
		}
	}
}

// Every range of every Dataset Management command: the deallocate
// attribute, context attributes zero, lengths in blocks (not 0-based),
// split on DMRSL, at most DMRL ranges and DMSL blocks a command.
func TestDiscardSplitsOnLimits(t *testing.T) {
	backing := filled(4<<20, 9)
	dev := nvmetest.New(nvmetest.Options{Vectors: 2, DSM: true, DMRL: 3, DMRSL: 1000, DMSL: 2500}, backing)
	c, _ := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	if !d.CanDiscard() || !blk.CanDiscard(blk.Count(d)) {
		t.Fatal("a controller with Dataset Management cannot discard")
	}
	// 5,000 blocks from block 10: ranges of 1,000; three a command but
	// no more than 2,500 blocks.
	if err := d.Discard(10*512, 5000*512); err != nil {
		t.Fatal(err)
	}
	want := []nvmetest.DSMCommand{
		{Attr: 4, Ranges: [][3]uint64{{0, 1000, 10}, {0, 1000, 1010}, {0, 500, 2010}}},
		{Attr: 4, Ranges: [][3]uint64{{0, 1000, 2510}, {0, 1000, 3510}, {0, 500, 4510}}},
	}
	if got := dev.DSMs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands\n%v\nwant\n%v", got, want)
	}
	zeroedOnly(t, backing.Data, 10*512, 5010*512)

	for _, c := range []struct {
		off, n int64
		err    error
	}{{1, 512, blk.ErrAlign}, {0, 511, blk.ErrAlign}, {4<<20 - 512, 1024, blk.ErrRange}, {-512, 512, blk.ErrAlign}} {
		if err := d.Discard(c.off, c.n); !errors.Is(err, c.err) {
			t.Errorf("Discard(%d, %d) = %v, want %v", c.off, c.n, err, c.err)
		}
	}
	if err := d.Discard(0, 0); err != nil || len(dev.DSMs()) != 2 {
		t.Errorf("an empty discard: %v, %d commands", err, len(dev.DSMs()))
	}
}

// Without CNS 06h the command's own limits hold: 256 ranges of up to
// 2^32-1 blocks, so one range for any disk here; on 4 KiB blocks the
// range counts 4 KiB blocks.
func TestDiscardDefaultLimits(t *testing.T) {
	backing := filled(1<<20, 12)
	dev := nvmetest.New(nvmetest.Options{Vectors: 2, DSM: true, NoCNS6: true}, backing)
	c, _ := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	if err := d.Discard(8192, 200*4096); err != nil {
		t.Fatal(err)
	}
	want := []nvmetest.DSMCommand{{Attr: 4, Ranges: [][3]uint64{{0, 200, 2}}}}
	if got := dev.DSMs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("commands %v, want %v", got, want)
	}
	zeroedOnly(t, backing.Data, 8192, 8192+200*4096)
	if err := d.Discard(512, 4096); !errors.Is(err, blk.ErrAlign) {
		t.Errorf("a discard of 512-byte sectors on 4 KiB blocks: %v", err)
	}
}

// 256 ranges fill the one page of a command; the 257th range goes in a
// second command.
func TestDiscardManyRanges(t *testing.T) {
	backing := filled(1<<20, 9)
	dev := nvmetest.New(nvmetest.Options{Vectors: 2, DSM: true, DMRSL: 1}, backing)
	c, _ := mustOpen(t, dev, setup{})
	if err := c.Namespaces()[0].Discard(0, 257*512); err != nil {
		t.Fatal(err)
	}
	got := dev.DSMs()
	if len(got) != 2 || len(got[0].Ranges) != 256 || len(got[1].Ranges) != 1 || got[1].Ranges[0] != [3]uint64{0, 1, 256} {
		t.Fatalf("%d commands: %v", len(got), got)
	}
	for i, r := range got[0].Ranges {
		if r != [3]uint64{0, 1, uint64(i)} {
			t.Fatalf("range %d is %v", i, r)
		}
	}
	zeroedOnly(t, backing.Data, 0, 257*512)
}

// A controller without Dataset Management: no discard, nothing sent; a
// controller that fails the command: EIO, logged with the sector.
func TestDiscardUnsupportedAndFailing(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 2}, ns(1<<20, 9))
	c, _ := mustOpen(t, dev, setup{})
	d := c.Namespaces()[0]
	if d.CanDiscard() || !errors.Is(d.Discard(0, 512), blk.ErrNoDiscard) || !errors.Is(blk.Discard(d, 0, 512), blk.ErrNoDiscard) {
		t.Error("a controller without Dataset Management discards")
	}
	if len(dev.DSMs()) != 0 {
		t.Errorf("commands sent: %v", dev.DSMs())
	}

	// ONCS says yes, but the command fails (here: identify says the
	// namespace has twice the blocks it has).
	bad := nvmetest.New(nvmetest.Options{Vectors: 2, DSM: true}, ns(1<<20, 9))
	bad.IdentifyHook = func(cns uint8, _ uint32, d []byte) {
		if cns == 0 {
			binary.LittleEndian.PutUint64(d, 4096)
		}
	}
	c2, l := mustOpen(t, bad, setup{})
	err := c2.Namespaces()[0].Discard(3000*512, 8*512)
	if !errors.Is(err, blk.ErrIO) || !l.has("nvme nvme0n1: sector 3000: deallocate") || !l.has("LBA out of range") {
		t.Errorf("failed deallocate: %v\nlog:\n%v", err, l)
	}
}
