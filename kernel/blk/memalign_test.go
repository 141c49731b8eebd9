package blk

import "testing"

type looseDisk struct{ *Mem }

func (looseDisk) MemAlign() int { return 4 }

// MemAlign looks through the counting wrapper and partitions to the disk.
func TestMemAlign(t *testing.T) {
	m := NewMem("vda", 512, 64)
	if a := MemAlign(Count(m)); a != DefaultMemAlign {
		t.Errorf("a plain disk: %d", a)
	}
	l := looseDisk{NewMem("nvme0n1", 512, 64)}
	p := &Partition{disk: Count(l), name: "nvme0n1p1", start: 8, sectors: 8}
	if a := MemAlign(Count(p)); a != 4 {
		t.Errorf("a partition of a disk that takes 4: %d", a)
	}
}
