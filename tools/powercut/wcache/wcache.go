// Package wcache models a disk with a volatile write cache, the disk a
// power-cut test needs (as CrashMonkey and dm-log-writes model one): a
// completed write sits in the cache until a flush, or its own FUA flag,
// makes it durable. When the power is cut, each cached write may reach
// the medium, be lost, or reach it in part (some of its 512-byte
// sectors), in any order; what a flush or FUA made durable is never lost,
// and a sector is never torn.
//
// The medium is a Store (the image file); everything durable is written
// there at once, so after a cut the Store is the crashed image.
package wcache

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
)

// SectorSize is the unit a write survives or is lost in.
const SectorSize = 512

// Store is the medium under the cache.
type Store interface {
	io.ReaderAt
	io.WriterAt
}

// piece is one sector of a cached write.
type piece struct {
	sector int64
	write  int // which write it came from, counting from 1
	data   []byte
	dead   bool // superseded by a FUA write: it can no longer land
}

// Disk is a Store behind a volatile write cache. It is safe for
// concurrent use.
type Disk struct {
	mu     sync.Mutex
	store  Store
	size   int64
	writes int     // writes so far
	atom   int64   // bytes a Sectors cut keeps whole
	cached []piece // sectors written since the last flush, oldest first
	// versions maps a sector to the indexes in cached of its versions,
	// oldest first.
	versions map[int64][]int
	Stats    Stats // counts, for the report
}

// Stats counts what the disk was asked to do.
type Stats struct {
	Reads, Writes, FUAWrites, Flushes, Zeroes, Trims int
}

// New returns a disk of size bytes (a multiple of SectorSize) over store.
func New(store Store, size int64) (*Disk, error) {
	if size <= 0 || size%SectorSize != 0 {
		return nil, fmt.Errorf("wcache: size %d is not a positive multiple of %d", size, SectorSize)
	}
	return &Disk{store: store, size: size, atom: SectorSize, versions: map[int64][]int{}}, nil
}

// SetAtom sets the unit a Sectors cut keeps whole: SectorSize (the
// default) or a larger power of two, the physical sector of a disk with
// 4 KiB sectors behind 512-byte logical ones.
func (d *Disk) SetAtom(n int64) error {
	if n < SectorSize || n&(n-1) != 0 {
		return fmt.Errorf("wcache: atomic unit %d is not a power of two of at least %d", n, SectorSize)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.atom = n
	return nil
}

// Size is the disk's size in bytes.
func (d *Disk) Size() int64 { return d.size }

func (d *Disk) check(off, n int64) error {
	if off < 0 || n < 0 || off > d.size || n > d.size-off {
		return fmt.Errorf("wcache: range [%d, +%d) outside a disk of %d bytes", off, n, d.size)
	}
	return nil
}

// ReadAt reads what the disk holds now: the medium with the cache over it.
func (d *Disk) ReadAt(p []byte, off int64) error {
	if err := d.check(off, int64(len(p))); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Stats.Reads++
	return d.readLocked(p, off)
}

func (d *Disk) readLocked(p []byte, off int64) error {
	if _, err := d.store.ReadAt(p, off); err != nil && err != io.EOF {
		return err
	}
	if len(d.versions) == 0 {
		return nil
	}
	for s := off / SectorSize; s*SectorSize < off+int64(len(p)); s++ {
		v := d.versions[s]
		if len(v) == 0 {
			continue
		}
		i := v[len(v)-1]
		lo, hi := s*SectorSize, (s+1)*SectorSize
		src := d.cached[i].data
		if lo < off {
			src = src[off-lo:]
			lo = off
		}
		if end := off + int64(len(p)); hi > end {
			src = src[:len(src)-int(hi-end)]
		}
		copy(p[lo-off:], src)
	}
	return nil
}

// Write writes p at off: into the cache, or to the medium if fua. A write
// that does not cover whole sectors is completed from what the disk holds.
func (d *Disk) Write(p []byte, off int64, fua bool) error {
	if err := d.check(off, int64(len(p))); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Stats.Writes++
	if fua {
		d.Stats.FUAWrites++
	}
	return d.writeLocked(p, off, fua)
}

func (d *Disk) writeLocked(p []byte, off int64, fua bool) error {
	lo := off / SectorSize * SectorSize
	hi := (off + int64(len(p)) + SectorSize - 1) / SectorSize * SectorSize
	buf := p
	if lo != off || hi != off+int64(len(p)) {
		buf = make([]byte, hi-lo)
		if err := d.readLocked(buf, lo); err != nil {
			return err
		}
		copy(buf[off-lo:], p)
	}
	d.writes++
	if fua {
		if _, err := d.store.WriteAt(buf, lo); err != nil {
			return err
		}
		// Older cached versions of these sectors can no longer land.
		for s := lo / SectorSize; s < hi/SectorSize; s++ {
			for _, i := range d.versions[s] {
				d.cached[i].dead = true
			}
			delete(d.versions, s)
		}
		return nil
	}
	for s := lo / SectorSize; s < hi/SectorSize; s++ {
		data := make([]byte, SectorSize)
		copy(data, buf[(s*SectorSize-lo):])
		d.versions[s] = append(d.versions[s], len(d.cached))
		d.cached = append(d.cached, piece{sector: s, write: d.writes, data: data})
	}
	return nil
}

// WriteZeroes writes n zero bytes at off.
func (d *Disk) WriteZeroes(off, n int64, fua bool) error {
	if err := d.check(off, n); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Stats.Zeroes++
	return d.writeLocked(make([]byte, n), off, fua)
}

// Trim discards n bytes at off. A discarded range may read as anything;
// this disk reads it as zeros, written like any other cached write.
func (d *Disk) Trim(off, n int64) error {
	if err := d.check(off, n); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Stats.Trims++
	return d.writeLocked(make([]byte, n), off, false)
}

// Flush makes every cached write durable.
func (d *Disk) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Stats.Flushes++
	for s, v := range d.versions {
		if _, err := d.store.WriteAt(d.cached[v[len(v)-1]].data, s*SectorSize); err != nil {
			return err
		}
	}
	d.cached, d.versions = nil, map[int64][]int{}
	return nil
}

// Cached is how many writes and sectors the cache holds (sectors counted
// with every version).
func (d *Disk) Cached() (writes, sectors int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[int]bool{}
	for _, p := range d.cached {
		if !p.dead {
			seen[p.write] = true
			sectors++
		}
	}
	return len(seen), sectors
}

// Mode is how a cut picks the cached writes that land.
type Mode int

const (
	// Lose: none lands.
	Lose Mode = iota
	// Keep: all land, in order (as if flushed).
	Keep
	// Prefix: the writes up to a random one land, in order (a disk
	// that writes its cache in order).
	Prefix
	// Writes: each write lands whole or not at all, in random order.
	Writes
	// Sectors: each sector (or atomic unit, SetAtom) of each write lands
	// or not, in random order.
	Sectors
	nModes
)

func (m Mode) String() string {
	return [...]string{"lose", "keep", "prefix", "writes", "sectors"}[m]
}

// ParseMode is the Mode named s (as String names it).
func ParseMode(s string) (Mode, bool) {
	for m := Mode(0); m < nModes; m++ {
		if m.String() == s {
			return m, true
		}
	}
	return 0, false
}

// Cut is what a power cut did.
type Cut struct {
	Mode          Mode
	Atom          int64 // the unit Sectors keeps whole
	Writes        int   // cached writes at the cut
	Sectors       int   // cached sector versions at the cut
	Landed        int   // sector versions that reached the medium
	WritesTouched int   // writes of which at least one sector landed
}

func (c Cut) String() string {
	mode := c.Mode.String()
	if c.Mode == Sectors && c.Atom != SectorSize {
		mode = fmt.Sprintf("sectors in %d-byte units", c.Atom)
	}
	return fmt.Sprintf("%s: %d of %d cached sector versions landed (from %d of %d writes)",
		mode, c.Landed, c.Sectors, c.WritesTouched, c.Writes)
}

// CutWith cuts the power: mode picks which cached sector versions reach
// the medium and in what order (rng decides within it); the cache is
// empty afterwards.
func (d *Disk) CutWith(mode Mode, rng *rand.Rand) (Cut, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var live []int
	writes := map[int]bool{}
	for i, p := range d.cached {
		if !p.dead {
			live = append(live, i)
			writes[p.write] = true
		}
	}
	ids := make([]int, 0, len(writes)) // the cached writes, oldest first
	for w := range writes {
		ids = append(ids, w)
	}
	sort.Ints(ids)
	cut := Cut{Mode: mode, Atom: d.atom, Writes: len(ids), Sectors: len(live)}
	var order []int
	switch mode {
	case Lose:
	case Keep:
		order = live
	case Prefix:
		last := 0 // none
		if k := rng.IntN(len(ids) + 1); k > 0 {
			last = ids[k-1]
		}
		for _, i := range live {
			if d.cached[i].write <= last {
				order = append(order, i)
			}
		}
	case Writes:
		// Each write lands with probability p, whole, at a random place
		// in the order: rank[w] orders the writes, a sector's versions
		// follow their write.
		p := rng.Float64()
		rank := map[int]int{}
		for _, w := range ids {
			if rng.Float64() < p {
				rank[w] = rng.Int()
			}
		}
		for _, i := range live {
			if _, ok := rank[d.cached[i].write]; ok {
				order = append(order, i)
			}
		}
		sort.SliceStable(order, func(a, b int) bool {
			return rank[d.cached[order[a]].write] < rank[d.cached[order[b]].write]
		})
	case Sectors:
		// Each atomic unit of each write lands whole or not at all.
		p := rng.Float64()
		per := d.atom / SectorSize
		type unit struct {
			write int
			n     int64
		}
		units := map[unit][]int{}
		var keys, kept []unit
		for _, i := range live {
			u := unit{d.cached[i].write, d.cached[i].sector / per}
			if _, ok := units[u]; !ok {
				keys = append(keys, u)
			}
			units[u] = append(units[u], i)
		}
		for _, u := range keys {
			if rng.Float64() < p {
				kept = append(kept, u)
			}
		}
		rng.Shuffle(len(kept), func(a, b int) { kept[a], kept[b] = kept[b], kept[a] })
		for _, u := range kept {
			order = append(order, units[u]...)
		}
	default:
		return Cut{}, fmt.Errorf("wcache: unknown cut mode %d", mode)
	}
	if err := d.landLocked(order); err != nil {
		return cut, err
	}
	touched := map[int]bool{}
	for _, i := range order {
		touched[d.cached[i].write] = true
	}
	cut.Landed, cut.WritesTouched = len(order), len(touched)
	d.cached, d.versions = nil, map[int64][]int{}
	return cut, nil
}

// landLocked writes the cached sector versions order names to the
// medium, in that order.
func (d *Disk) landLocked(order []int) error {
	for _, i := range order {
		p := d.cached[i]
		if p.dead {
			return fmt.Errorf("wcache: a superseded sector %d cannot land", p.sector)
		}
		if _, err := d.store.WriteAt(p.data, p.sector*SectorSize); err != nil {
			return err
		}
	}
	return nil
}
