package blk

import (
	"strings"
	"testing"
	"time"
)

// TestDiskstats counts reads, writes, flushes and failures on a disk
// and checks /proc/diskstats's fields, with a clock that moves 2 ms at
// every reading.
func TestDiskstats(t *testing.T) {
	m := NewMem("vda", 512, 2048)
	m.Fail = func(sector uint64, write bool) bool { return sector == 100 && !write }
	s := NewDisks(nil, nil)
	s.Add(m, 254, 0, 16)
	d := s.Nodes()[0].Dev.(*Counted)
	now := time.Unix(0, 0)
	d.Stats.clock = func() time.Time { now = now.Add(2 * time.Millisecond); return now }
	buf := make([]byte, 8192)
	if _, err := d.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadAt(buf[:512], 512); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteAt(buf[:4096], 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadAt(buf[:512], 100*512); err == nil {
		t.Fatal("the bad sector read")
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(s.ProcDiskstats()))
	// Each request takes one 2 ms tick between its start and its end;
	// the failed read's time counts only in the busy and queue totals.
	// The partition-table scan at Add read sector 0 (on the real clock:
	// no time to speak of), as Linux's scan counts too.
	want := strings.Fields("254 0 vda  3 0 18 4  1 0 8 2  0 10 10  0 0 0 0  1 2")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("diskstats:\n got %v\nwant %v", got, want)
	}
}

// Discards count in fields 12, 14 and 15 (requests, sectors, ms), on the
// partition and on its disk, as Linux counts them; one refused for its
// range not at all. The clock ticks 2 ms a reading, shared by both: the
// partition's discard spans the disk's.
func TestDiskstatsDiscards(t *testing.T) {
	m := &discMem{Mem: NewMem("sda", 512, 1000)}
	putMBREntry(m.data, 1, 0x83, 100, 50)
	s := NewDisks(nil, nil)
	s.Add(m, 8, 0, 16)
	disk, _ := s.Find(8, 0)
	part, _ := s.Find(8, 2)
	now := time.Unix(0, 0)
	tick := func() time.Time { now = now.Add(2 * time.Millisecond); return now }
	disk.Dev.(*Counted).Stats.clock = tick
	part.Dev.(*Partition).stats.clock = tick
	if err := Discard(part.Dev, 0, 8*512); err != nil {
		t.Fatal(err)
	}
	if err := Discard(disk.Dev, 0, 3*512); err != nil {
		t.Fatal(err)
	}
	if err := Discard(part.Dev, 0, 51*512); err == nil {
		t.Fatal("a discard past the partition's end")
	}
	lines := strings.Split(strings.TrimSpace(string(s.ProcDiskstats())), "\n")
	if len(lines) != 2 {
		t.Fatalf("diskstats: %q", lines)
	}
	for i, want := range []string{"8 0 sda 1 0 1 0 0 0 0 0 0 4 4 2 0 11 4 0 0", "8 2 sda2 0 0 0 0 0 0 0 0 0 6 6 1 0 8 6 0 0"} {
		if got := strings.Join(strings.Fields(lines[i]), " "); got != want {
			t.Errorf("line %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
