package ext4

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// Discards: telling the device which blocks hold nothing worth keeping,
// so that a thin image or an SSD can drop them. Two ways, as on Linux:
// FITRIM (fstrim) discards the free blocks of a range on request, and
// the discard mount option discards the blocks each transaction frees
// once the commit that frees them is durable — never before: a crash
// before then leaves the files that still own them on disk. Blocks are
// discarded only while nothing can allocate them: FITRIM reserves the
// runs it discards (FS.trimming, which the allocator skips), and a
// commit's freed blocks stay reserved until the commit is reaped.
// Discard errors are not reported, as on Linux: a discard is advice,
// and the blocks are free whatever the device did.
//
// As Linux's, FITRIM skips a group it trimmed whole before (with no
// smaller minimum) in which nothing was freed since: a second fstrim
// reports 0 bytes. The mark is in memory only, and a group is marked
// only if none of its blocks was held back from the trim (freed but not
// yet durable), so that those are trimmed once they are free.

// discarder is a device that takes discards (blk.Discarder, by its
// methods: byte offsets and lengths in whole sectors).
type discarder interface {
	CanDiscard() bool
	Discard(off, n int64) error
}

// CanDiscard reports whether the device under fs takes discards.
func (fs *FS) CanDiscard() bool { return fs.disc != nil }

// discardRun discards n blocks from block start.
func (fs *FS) discardRun(start, n uint64) error {
	bs := int64(fs.blockSize)
	return fs.disc.Discard(int64(start)*bs, int64(n)*bs)
}

// discardBitmaps discards the blocks set in freed (per group), a run at
// a time.
func (fs *FS) discardBitmaps(freed map[uint32][]byte) {
	for g, bm := range freed {
		first := fs.groupFirstBlock(g)
		n := fs.groupBlocks(g)
		for i := uint32(0); i < n; {
			if !testBit(bm, i) {
				i++
				continue
			}
			j := i + 1
			for j < n && testBit(bm, j) {
				j++
			}
			fs.discardRun(first+uint64(i), uint64(j-i))
			i = j
		}
	}
}

// Trim is FITRIM: it discards the free blocks in the byte range
// [start, start+length) that lie in free runs of at least minLen bytes
// (at least a block), group by group, and returns the bytes discarded.
// Linux 6.1's checks: EOPNOTSUPP for a device without discards; EINVAL
// for a minimum longer than a group, a start past the end or a length
// under a block; a range past the end is cut there. Blocks freed but
// not yet durable (or held while the log has a copy) are not free here.
func (fs *FS) Trim(start, length, minLen uint64) (uint64, error) {
	if fs.disc == nil {
		return 0, linux.EOPNOTSUPP
	}
	bs := uint64(fs.blockSize)
	first, minBlocks := start/bs, max(minLen/bs, 1)
	total := fs.sb.blocksCount
	if minLen/bs > uint64(fs.sb.blocksPerGroup) || first >= total || length < bs {
		return 0, linux.EINVAL
	}
	last := min(first+length/bs-1, total-1)
	fd := uint64(fs.sb.firstDataBlock)
	if last <= fd {
		return 0, nil
	}
	first = max(first, fd)
	fs.mu.Lock()
	if fs.ro && fs.roWhy != "" {
		// Forced read-only after an error: the bitmaps in memory may
		// call blocks free that the durable state still uses.
		fs.mu.Unlock()
		return 0, linux.EROFS
	}
	fs.mu.Unlock()
	var trimmed uint64
	for g := fs.groupOf(first); g <= fs.groupOf(last); g++ {
		gf := fs.groupFirstBlock(g)
		from, to := uint32(0), fs.groupBlocks(g)
		if first > gf {
			from = uint32(first - gf)
		}
		if last < gf+uint64(to) {
			to = uint32(last-gf) + 1
		}
		n, err := fs.trimGroup(g, from, to, minBlocks)
		trimmed += n
		if err != nil {
			return trimmed * bs, err
		}
	}
	fs.mu.Lock()
	fs.lastTrimMin = minBlocks
	fs.mu.Unlock()
	return trimmed * bs, nil
}

func (fs *FS) groupOf(b uint64) uint32 {
	return uint32((b - uint64(fs.sb.firstDataBlock)) / uint64(fs.sb.blocksPerGroup))
}

// trimGroup discards the free runs of at least minBlocks blocks among
// blocks [from, to) of group g: found and reserved under FS.mu,
// discarded without it (allocation goes on around them), released.
func (fs *FS) trimGroup(g, from, to uint32, minBlocks uint64) (uint64, error) {
	fs.begin()
	whole := from == 0 && to == fs.groupBlocks(g)
	if fs.groups[g].freeBlocks == 0 || whole && fs.trimmed != nil && fs.trimmed[g] && minBlocks >= fs.lastTrimMin {
		fs.mu.Unlock()
		return 0, nil
	}
	b, err := fs.blockBitmap(g)
	if err != nil {
		fs.mu.Unlock()
		return 0, err
	}
	used := blockUsed(b, fs.freedInGroup(g))
	var runs [][2]uint32
	held := false // a free block held back: freed, not yet durable
	for i := from; i < to; {
		if used(i) {
			held = held || !testBit(b, i)
			i++
			continue
		}
		j := i + 1
		for j < to && !used(j) {
			j++
		}
		if uint64(j-i) >= minBlocks {
			runs = append(runs, [2]uint32{i, j})
		}
		i = j
	}
	frees := fs.frees.Load()
	mark := func() { // under mu, held for writing
		if whole && !held && fs.frees.Load() == frees {
			if fs.trimmed == nil {
				fs.trimmed = make([]bool, fs.groupCount())
			}
			fs.trimmed[g] = true
		}
	}
	if len(runs) == 0 {
		mark()
		fs.mu.Unlock()
		return 0, nil
	}
	if fs.trimming == nil {
		fs.trimming = map[uint32][]byte{}
	}
	mine := make([]byte, fs.blockSize)
	for _, r := range runs {
		for i := r[0]; i < r[1]; i++ {
			setBit(mine, i)
		}
	}
	// Another FITRIM's reservation of this group was skipped above as
	// in use; the two are merged here and taken apart after.
	if cur := fs.trimming[g]; cur != nil {
		for i := range cur {
			cur[i] |= mine[i]
		}
	} else {
		fs.trimming[g] = append([]byte(nil), mine...)
	}
	fs.mu.Unlock()

	var n uint64
	var errs []error
	first := fs.groupFirstBlock(g)
	for _, r := range runs {
		err := fs.discardRun(first+uint64(r[0]), uint64(r[1]-r[0]))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n += uint64(r[1] - r[0])
	}

	fs.mu.Lock()
	cur := fs.trimming[g]
	empty := true
	for i := range cur {
		cur[i] &^= mine[i]
		empty = empty && cur[i] == 0
	}
	if empty {
		delete(fs.trimming, g)
	}
	if len(errs) == 0 {
		mark()
	}
	fs.mu.Unlock()
	if len(errs) > 0 {
		return n, errors.Join(append([]error{linux.EIO}, errs...)...)
	}
	return n, nil
}
