package blk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestPartName(t *testing.T) {
	for disk, want := range map[string]string{"sda": "sda3", "vdb": "vdb3", "nvme0n1": "nvme0n1p3", "mmcblk0": "mmcblk0p3"} {
		if got := PartName(disk, 3); got != want {
			t.Errorf("PartName(%q, 3) = %q, want %q", disk, got, want)
		}
	}
}

func TestPartitionBounds(t *testing.T) {
	m := NewMem("sda", 512, 1000)
	putMBREntry(m.data, 1, 0x83, 100, 50)
	s := NewDisks(nil, nil)
	s.Add(m, 8, 0, 16)
	n, ok := s.Find(8, 2)
	if !ok || n.Name != "sda2" || Size(n.Dev) != 50*512 {
		t.Fatalf("sda2: %+v %v", n, ok)
	}
	p := n.Dev
	w := make([]byte, 1024)
	for i := range w {
		w[i] = byte(i*7 + 1)
	}
	if _, err := p.WriteAt(w, 48*512); err != nil {
		t.Fatal(err)
	}
	if string(m.data[148*512:150*512]) != string(w) {
		t.Errorf("write to the partition's last sectors did not land at disk sector 148")
	}
	if _, err := p.WriteAt(w, 49*512); !errors.Is(err, ErrRange) {
		t.Errorf("write across the partition's end: %v", err)
	}
	if _, err := p.ReadAt(w[:512], 50*512); !errors.Is(err, ErrRange) {
		t.Errorf("read past the partition's end: %v", err)
	}
	r := make([]byte, 512)
	if _, err := p.ReadAt(r, 49*512); err != nil || string(r) != string(w[512:]) {
		t.Errorf("read back: %v", err)
	}
	// Byte access (the device file) stops at the partition's end.
	if n, err := WriteBytes(p, w, 50*512-10); n != 10 || err != nil {
		t.Errorf("WriteBytes across the end: %d %v", n, err)
	}
}

func TestDisksNumbersAndProc(t *testing.T) {
	s := NewDisks(nil, nil)
	vda := NewMem("vda", 512, 8192) // 4 MiB, no table
	sda := NewMem("sda", 512, 65536)
	putMBREntry(sda.data, 0, 0x83, 2048, 4096)
	putMBREntry(sda.data, 3, 0x83, 8192, 1024)
	nvme := NewMem("nvme0n1", 4096, 4096)
	putMBREntry(nvme.data, 0, 0x83, 256, 256)
	s.Add(vda, 254, 0, 16)
	s.Add(sda, 8, 0, 16)
	if m := s.AddExt(nvme); m != 0 {
		t.Errorf("first ext minor %d", m)
	}
	var got []string
	for _, n := range s.Nodes() {
		got = append(got, fmt.Sprintf("%s=%d:%d", n.Name, n.Major, n.Minor))
	}
	if want := "vda=254:0 sda=8:0 sda1=8:1 sda4=8:4 nvme0n1=259:0 nvme0n1p1=259:1"; strings.Join(got, " ") != want {
		t.Errorf("nodes %s, want %s", strings.Join(got, " "), want)
	}
	want := "major minor  #blocks  name\n\n" +
		" 254        0       4096 vda\n" +
		"   8        0      32768 sda\n" +
		"   8        1       2048 sda1\n" +
		"   8        4        512 sda4\n" +
		" 259        0      16384 nvme0n1\n" +
		" 259        1       1024 nvme0n1p1\n"
	if p := string(s.ProcPartitions()); p != want {
		t.Errorf("/proc/partitions:\n%s\nwant:\n%s", p, want)
	}
}

func TestReread(t *testing.T) {
	var logged []string
	s := NewDisks(func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }, nil)
	sda := NewMem("sda", 512, 65536)
	s.Add(sda, 8, 16, 16)
	if len(s.Nodes()) != 1 {
		t.Fatalf("partitions on a blank disk")
	}
	putMBREntry(sda.data, 0, 0x83, 2048, 4096)
	if err := s.Reread(sda); err != nil {
		t.Fatal(err)
	}
	n, ok := s.Find(8, 17)
	if !ok || n.Name != "sda1" {
		t.Fatalf("sda1 after BLKRRPART: %+v", s.Nodes())
	}
	if len(logged) != 1 || logged[0] != "sda: dos partition table: sda1" {
		t.Errorf("log %q", logged)
	}
	if err := s.Reread(n.Dev); !errors.Is(err, ErrNotDisk) {
		t.Errorf("BLKRRPART on a partition: %v", err)
	}
	n.Dev.(*Partition).Opened()
	if err := s.Reread(sda); !errors.Is(err, ErrBusy) {
		t.Errorf("BLKRRPART with sda1 open: %v", err)
	}
	n.Dev.(*Partition).Closed()
	putMBREntry(sda.data, 0, 0x83, 2048, 8192)
	if err := s.Reread(sda); err != nil {
		t.Fatal(err)
	}
	if n2, _ := s.Find(8, 17); n2.Dev == n.Dev || n2.Dev.Sectors() != 8192 {
		t.Errorf("sda1 not replaced: %d sectors", n2.Dev.Sectors())
	}
}

// Partitions past a disk's own minors take ExtMajor numbers, given back
// when the table is read again.
func TestExtMinors(t *testing.T) {
	m := NewMem("sda", 512, 65536)
	for i := 0; i < 4; i++ {
		putMBREntry(m.data, i, 0, 0, 0)
	}
	putMBREntry(m.data, 0, typeExtended, 100, 60000)
	// 14 logical partitions: sda5..sda18.
	for i := 0; i < 14; i++ {
		at := uint32(100 + 1000*i)
		ebr := m.data[at*512:]
		putMBREntry(ebr, 0, 0x83, 10, 100)
		if i < 13 {
			putMBREntry(ebr, 1, typeExtended, at+1000-100, 1000)
		}
	}
	s := NewDisks(nil, nil)
	s.Add(m, 8, 0, 16)
	nodes := s.Nodes()
	if len(nodes) != 16 {
		t.Fatalf("%d nodes", len(nodes))
	}
	last := nodes[len(nodes)-1]
	if last.Name != "sda18" || last.Major != ExtMajor || last.Minor != 2 {
		t.Errorf("sda18: %+v", last)
	}
	if n := nodes[len(nodes)-4]; n.Name != "sda15" || n.Major != 8 || n.Minor != 15 {
		t.Errorf("sda15: %+v", n)
	}
	if err := s.Reread(m); err != nil {
		t.Fatal(err)
	}
	if last := s.Nodes()[15]; last.Minor != 2 {
		t.Errorf("ext minors not given back: %+v", last)
	}
}

// discMem is a Mem that takes discards and records them.
type discMem struct {
	*Mem
	got [][2]int64
}

func (d *discMem) CanDiscard() bool { return true }
func (d *discMem) Discard(off, n int64) error {
	d.got = append(d.got, [2]int64{off, n})
	return nil
}

func TestPartitionDiscard(t *testing.T) {
	m := &discMem{Mem: NewMem("sda", 512, 1000)}
	putMBREntry(m.data, 1, 0x83, 100, 50)
	s := NewDisks(nil, nil)
	s.Add(m, 8, 0, 16)
	disk, _ := s.Find(8, 0)
	part, _ := s.Find(8, 2)
	if !CanDiscard(disk.Dev) || !CanDiscard(part.Dev) {
		t.Fatal("the disk or its partition cannot discard through the counting wrapper")
	}
	if err := Discard(part.Dev, 10*512, 40*512); err != nil {
		t.Fatal(err)
	}
	if err := Discard(part.Dev, 10*512, 41*512); !errors.Is(err, ErrRange) {
		t.Errorf("a discard past the partition's end: %v", err)
	}
	if fmt.Sprint(m.got) != fmt.Sprint([][2]int64{{110 * 512, 40 * 512}}) {
		t.Errorf("the disk was asked %v, want sectors 110..149", m.got)
	}
	plain := NewDisks(nil, nil)
	plain.Add(NewMem("vdz", 512, 100), 254, 0, 1)
	n, _ := plain.Find(254, 0)
	if CanDiscard(n.Dev) || !errors.Is(Discard(n.Dev, 0, 512), ErrNoDiscard) {
		t.Error("a device without discard discards")
	}
}
