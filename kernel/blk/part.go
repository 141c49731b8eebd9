package blk

import (
	"fmt"
	"sync/atomic"
)

// Partition is a range of a disk seen as a Device of its own (/dev/sda1),
// in the disk's sectors. Requests are checked against the partition's
// bounds before they reach the disk, so no access through it touches
// sectors outside it.
type Partition struct {
	disk    Device
	name    string
	num     int    // 1, 2, ...: the number in the name
	start   uint64 // first sector on the disk
	sectors uint64
	opens   atomic.Int32 // open device files (BLKRRPART's EBUSY)
	stats   Stats        // its own requests; the disk counts them too
}

// PartName is Linux's name of partition n of disk: sda1, vdb2, but
// nvme0n1p1 and mmcblk0p1, with a 'p' when the disk's name ends in a
// digit (block/partitions/core.c).
func PartName(disk string, n int) string {
	if c := disk[len(disk)-1]; c >= '0' && c <= '9' {
		return fmt.Sprintf("%sp%d", disk, n)
	}
	return fmt.Sprintf("%s%d", disk, n)
}

func (p *Partition) Name() string    { return p.name }
func (p *Partition) SectorSize() int { return p.disk.SectorSize() }
func (p *Partition) Sectors() uint64 { return p.sectors }

// Disk is the whole disk p lies on.
func (p *Partition) Disk() Device { return p.disk }

// Number is p's partition number (1 for sda1).
func (p *Partition) Number() int { return p.num }

// Start is p's first sector on the disk.
func (p *Partition) Start() uint64 { return p.start }

// ReadOnly follows the disk.
func (p *Partition) ReadOnly() bool {
	ro, ok := p.disk.(interface{ ReadOnly() bool })
	return ok && ro.ReadOnly()
}

// ReadAt reads whole sectors at off within the partition.
func (p *Partition) ReadAt(b []byte, off int64) (int, error) {
	if err := Check(p, len(b), off); err != nil {
		return 0, err
	}
	t := p.stats.begin()
	n, err := p.disk.ReadAt(b, off+p.offset())
	p.stats.end(t, statRead, int64(n), err == nil)
	return n, err
}

// WriteAt writes whole sectors at off within the partition.
func (p *Partition) WriteAt(b []byte, off int64) (int, error) {
	if err := Check(p, len(b), off); err != nil {
		return 0, err
	}
	t := p.stats.begin()
	n, err := p.disk.WriteAt(b, off+p.offset())
	p.stats.end(t, statWrite, int64(n), err == nil)
	return n, err
}

// Flush flushes the disk's cache: a partition has none of its own (and
// Linux counts flushes on the disk only).
func (p *Partition) Flush() error { return p.disk.Flush() }

// CanDiscard and Discard pass discards on to the disk, within the
// partition.
func (p *Partition) CanDiscard() bool { return CanDiscard(p.disk) }

func (p *Partition) Discard(off, n int64) error {
	if err := CheckRange(p, off, n); err != nil {
		return err
	}
	t := p.stats.begin()
	err := Discard(p.disk, off+p.offset(), n)
	p.stats.end(t, statDiscard, n, err == nil)
	return err
}

func (p *Partition) offset() int64 { return int64(p.start) * int64(p.disk.SectorSize()) }

// Opened and Closed count the open device files of p.
func (p *Partition) Opened() { p.opens.Add(1) }
func (p *Partition) Closed() { p.opens.Add(-1) }
