package blk

// The kernel's disks and their partitions: the block device files
// /dev lists, the table /proc/partitions prints, and BLKRRPART.

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ExtMajor is Linux's BLOCK_EXT_MAJOR: the device numbers of
// partitions past a disk's own minors (and of NVMe namespaces), handed
// out in order.
const ExtMajor = 259

// Errors of Reread.
var (
	ErrBusy    = errors.New("blk: a partition is in use")
	ErrNotDisk = errors.New("blk: not a whole disk")
)

// Node is a block device: a whole disk or a partition, with its number.
type Node struct {
	Name         string
	Major, Minor uint32
	Dev          Device
}

// Disks is the set of disks, in the order they were added, with the
// partitions read from each.
type Disks struct {
	info  func(format string, args ...any) // the tables found
	warn  func(format string, args ...any) // what was refused
	mu    sync.Mutex
	disks []*disk // protected by mu
	ext   []bool  // ExtMajor minors in use; protected by mu
}

type disk struct {
	node   Node
	minors int // device numbers of its own: the disk's and partitions 1..minors-1
	parts  []Node
}

// NewDisks returns an empty set; info receives the partition tables
// found, warn what scans refuse (either may be nil).
func NewDisks(info, warn func(format string, args ...any)) *Disks {
	nop := func(string, ...any) {}
	if info == nil {
		info = nop
	}
	if warn == nil {
		warn = nop
	}
	return &Disks{info: info, warn: warn}
}

// Add registers d as major:minor with minors device numbers of its own
// (16 for sd and vd disks, 1 when every partition takes an ExtMajor
// number) and reads its partition table. An unreadable table leaves the
// disk without partitions (logged), as on Linux.
func (s *Disks) Add(d Device, major, minor uint32, minors int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &disk{node: Node{Name: d.Name(), Major: major, Minor: minor, Dev: Count(d)}, minors: max(minors, 1)}
	s.disks = append(s.disks, k)
	s.scanLocked(k)
}

// AddExt registers d with a number of ExtMajor and no minors of its own
// (NVMe namespaces), and reads its partitions; it returns the minor.
func (s *Disks) AddExt(d Device) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.extLocked()
	k := &disk{node: Node{Name: d.Name(), Major: ExtMajor, Minor: m, Dev: Count(d)}, minors: 1}
	s.disks = append(s.disks, k)
	s.scanLocked(k)
	return m
}

func (s *Disks) extLocked() uint32 {
	for i, used := range s.ext {
		if !used {
			s.ext[i] = true
			return uint32(i)
		}
	}
	s.ext = append(s.ext, true)
	return uint32(len(s.ext) - 1)
}

// scanLocked replaces k's partitions with those its table describes now.
// Preconditions: s.mu is held.
func (s *Disks) scanLocked(k *disk) {
	for _, p := range k.parts {
		if p.Major == ExtMajor {
			s.ext[p.Minor] = false
		}
	}
	k.parts = nil
	entries, format, notes, err := ReadTable(k.node.Dev)
	for _, n := range notes {
		s.warn("%s", n)
	}
	if err != nil {
		s.warn("%s: unable to read partition table: %v", k.node.Name, err)
		return
	}
	names := []string{}
	for _, e := range entries {
		p := &Partition{disk: k.node.Dev, name: PartName(k.node.Name, e.Num), num: e.Num, start: e.Start, sectors: e.Sectors}
		n := Node{Name: p.name, Major: k.node.Major, Minor: k.node.Minor + uint32(e.Num), Dev: p}
		if e.Num >= k.minors {
			n.Major, n.Minor = ExtMajor, s.extLocked()
		}
		k.parts = append(k.parts, n)
		names = append(names, p.name)
	}
	if format != FormatNone {
		s.info("%s: %s partition table: %s", k.node.Name, format, strings.Join(names, " "))
	}
}

// Reread reads the partition table of whole disk d again (BLKRRPART):
// ErrNotDisk for a partition or an unknown device, ErrBusy while one of
// its partitions is open (open files keep the old partition).
func (s *Disks) Reread(d Device) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.disks {
		if k.node.Dev != d && k.node.Dev.(*Counted).Device != d {
			continue // d is the disk as Nodes lists it, or as it was added
		}
		for _, p := range k.parts {
			if p.Dev.(*Partition).opens.Load() > 0 {
				return ErrBusy
			}
		}
		s.scanLocked(k)
		return nil
	}
	return ErrNotDisk
}

// ProcDiskstats is /proc/diskstats in Linux 6.1's format: every disk
// and partition (but partitions of zero size) with its request counts.
func (s *Disks) ProcDiskstats() []byte {
	var b []byte
	for _, n := range s.Nodes() {
		var st *Stats
		switch d := n.Dev.(type) {
		case *Counted:
			st = &d.Stats
		case *Partition:
			if d.Sectors() == 0 {
				continue
			}
			st = &d.stats
		default:
			continue
		}
		b = append(b, st.Line(n.Major, n.Minor, n.Name)...)
	}
	return b
}

// Sectors returns the 512-byte sectors read from and written to all the
// disks since boot (/proc/vmstat's pgpgin and pgpgout, in KiB, are half).
func (s *Disks) Sectors() (read, written uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.disks {
		if c, ok := k.node.Dev.(*Counted); ok {
			c.Stats.mu.Lock()
			read += c.Stats.sectors[statRead]
			written += c.Stats.sectors[statWrite]
			c.Stats.mu.Unlock()
		}
	}
	return read, written
}

// Nodes lists every disk, each followed by its partitions in table
// order.
func (s *Disks) Nodes() []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Node
	for _, k := range s.disks {
		out = append(out, k.node)
		out = append(out, k.parts...)
	}
	return out
}

// Find returns the block device numbered major:minor.
func (s *Disks) Find(major, minor uint32) (Node, bool) {
	for _, n := range s.Nodes() {
		if n.Major == major && n.Minor == minor {
			return n, true
		}
	}
	return Node{}, false
}

// ProcPartitions is /proc/partitions in Linux's format (block/genhd.c):
// sizes in KiB, disks of zero size left out.
func (s *Disks) ProcPartitions() []byte {
	b := []byte("major minor  #blocks  name\n\n")
	for _, n := range s.Nodes() {
		if n.Dev.Sectors() == 0 {
			continue
		}
		b = fmt.Appendf(b, "%4d  %7d %10d %s\n", n.Major, n.Minor, uint64(Size(n.Dev))>>10, n.Name)
	}
	return b
}
