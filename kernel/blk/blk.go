// Package blk is the kernel's view of a disk: a fixed number of sectors
// of one size, read and written by byte offset. Drivers (virtio-blk,
// AHCI, NVMe) implement Device; file systems and the block device files
// in /dev use it. Device-independent parts live here too: partition
// tables (table.go: GPT and MBR) and the partitions they describe as
// Devices of their own (part.go), the set of disks with their device
// numbers that /dev, /proc/partitions and BLKRRPART work on (disks.go),
// byte-range access for device files (bytes.go), and the request
// timeout drivers share (watch.go). Mem is an in-memory Device for host
// tests.
package blk

import (
	"errors"
	"fmt"
	"sync"
)

// Device is a disk. ReadAt and WriteAt follow io.ReaderAt and
// io.WriterAt, with two more rules: off and len(p) must be multiples of
// SectorSize (else ErrAlign), and a range past the end is ErrRange
// (never a short count). Several calls may be in flight at once from
// different goroutines. A request the device fails is ErrIO (wrapped
// with the sector, the driver logs it); one it never completes is
// ErrTimeout. Flush returns once everything written before it is on
// stable storage.
type Device interface {
	Name() string    // Linux's name: vda, sda, nvme0n1
	SectorSize() int // bytes per sector (logical block size)
	Sectors() uint64 // capacity in sectors
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Flush() error
}

// Errors a Device returns (compare with errors.Is).
var (
	ErrIO       = errors.New("blk: I/O error")
	ErrTimeout  = errors.New("blk: request timed out")
	ErrAlign    = errors.New("blk: offset or length not a multiple of the sector size")
	ErrRange    = errors.New("blk: beyond the end of the device")
	ErrReadOnly = errors.New("blk: read-only device")
	// ErrNoDiscard is a discard asked of a device that takes none.
	ErrNoDiscard = errors.New("blk: the device does not discard")
)

// Discarder is a Device that can be told a range holds nothing worth
// keeping (TRIM, UNMAP, virtio's discard). Reads of a discarded range
// return old data or zeros, as the device chooses.
type Discarder interface {
	CanDiscard() bool
	Discard(off, n int64) error
}

// CanDiscard reports whether d takes discards.
func CanDiscard(d Device) bool {
	x, ok := d.(Discarder)
	return ok && x.CanDiscard()
}

// Discard discards n bytes at off on d (whole sectors), or returns
// ErrNoDiscard.
func Discard(d Device, off, n int64) error {
	if x, ok := d.(Discarder); ok && x.CanDiscard() {
		return x.Discard(off, n)
	}
	return ErrNoDiscard
}

// MemAligner is a Device whose transfers may start at memory addresses
// aligned more loosely than DefaultMemAlign.
type MemAligner interface {
	MemAlign() int // bytes; a power of two
}

// DefaultMemAlign is the alignment of the memory a direct transfer
// (O_DIRECT) moves, unless the Device says otherwise: Linux's queues
// ask 512 bytes by default (virtio-blk and SATA disks keep it).
const DefaultMemAlign = 512

// MemAlign is the alignment d asks of the memory of a direct transfer,
// looking through the wrappers (Counted, Partition) to the disk.
func MemAlign(d Device) int {
	for {
		if a, ok := d.(MemAligner); ok {
			return a.MemAlign()
		}
		switch w := d.(type) {
		case *Counted:
			d = w.Device
		case *Partition:
			d = w.disk
		default:
			return DefaultMemAlign
		}
	}
}

// Check validates a request of n bytes at off against d's geometry.
func Check(d Device, n int, off int64) error {
	ss := int64(d.SectorSize())
	if off < 0 || off%ss != 0 || int64(n)%ss != 0 {
		return ErrAlign
	}
	size := int64(d.Sectors()) * ss
	if off > size || int64(n) > size-off {
		return ErrRange
	}
	return nil
}

// CheckRange validates a range of n bytes at off (a discard's, whose
// length need not fit an int) against d's geometry.
func CheckRange(d Device, off, n int64) error {
	ss := int64(d.SectorSize())
	if off < 0 || n < 0 || off%ss != 0 || n%ss != 0 {
		return ErrAlign
	}
	if size := int64(d.Sectors()) * ss; off > size || n > size-off {
		return ErrRange
	}
	return nil
}

// Size is d's capacity in bytes.
func Size(d Device) int64 { return int64(d.Sectors()) * int64(d.SectorSize()) }

// Mem is a Device in memory. Fail, when set, makes requests touching
// that sector fail with ErrIO, as a bad block would.
type Mem struct {
	name string
	ss   int
	mu   sync.RWMutex
	data []byte
	// Fail, if not nil, is asked for each sector of a request; true
	// makes the request fail with ErrIO.
	Fail    func(sector uint64, write bool) bool
	Flushes int // number of Flush calls
}

// NewMem returns a zeroed in-memory disk of sectors sectors of ss bytes.
func NewMem(name string, ss int, sectors uint64) *Mem {
	return &Mem{name: name, ss: ss, data: make([]byte, uint64(ss)*sectors)}
}

func (m *Mem) Name() string    { return m.name }
func (m *Mem) SectorSize() int { return m.ss }
func (m *Mem) Sectors() uint64 { return uint64(len(m.data) / m.ss) }

func (m *Mem) fail(off int64, n int, write bool) error {
	if m.Fail == nil {
		return nil
	}
	for s := uint64(off) / uint64(m.ss); s < uint64(off+int64(n))/uint64(m.ss); s++ {
		if m.Fail(s, write) {
			return fmt.Errorf("%s: sector %d: %w", m.name, s, ErrIO)
		}
	}
	return nil
}

// ReadAt reads whole sectors at off.
func (m *Mem) ReadAt(p []byte, off int64) (int, error) {
	if err := Check(m, len(p), off); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if err := m.fail(off, len(p), false); err != nil {
		return 0, err
	}
	return copy(p, m.data[off:]), nil
}

// WriteAt writes whole sectors at off.
func (m *Mem) WriteAt(p []byte, off int64) (int, error) {
	if err := Check(m, len(p), off); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fail(off, len(p), true); err != nil {
		return 0, err
	}
	return copy(m.data[off:], p), nil
}

// Flush counts the call; memory is always stable.
func (m *Mem) Flush() error {
	m.mu.Lock()
	m.Flushes++
	m.mu.Unlock()
	return nil
}
