package ext4

import (
	"errors"
	"fmt"
	"math/bits"

	"shortbread/kernel/abi/linux"
)

// Block and inode allocation through the groups' bitmaps. A group made by
// mke2fs with lazy initialization may have BLOCK_UNINIT or INODE_UNINIT
// set: its bitmap block was never written, and its contents are implied
// (the group's own metadata in use, every inode free). The first
// allocation in such a group writes the bitmap and clears the flag.
//
// Each group's bitmaps and descriptor are guarded by the group's own
// lock (FS.glocks), as Linux's ext4 locks a group at a time: two handles
// allocating or freeing in different groups go side by side, and an
// operation holds one group's lock at a time. The file system's free
// counts are atomic (FS.freeBlocks, FS.freeInodes), Linux's per-CPU
// counters in spirit: each allocation adds to them as it changes its
// group's count, the superblock is written with them, and a mount sums
// them afresh from the descriptors.

var errFileTooBig = linux.EFBIG

// bitmapCsum is the crc32c of the first n bytes of a bitmap block.
func (fs *FS) bitmapCsum(b []byte, nbits uint32) uint32 {
	return crc32c(fs.csumSeed, b[:nbits/8])
}

// blockBitmap returns group g's block bitmap, building it when the group
// is BLOCK_UNINIT, else reading and checking it.
func (fs *FS) blockBitmap(g uint32) ([]byte, error) {
	d := &fs.groups[g]
	if d.flags&bgBlockUninit != 0 && (fs.hasCsum() || fs.hasGdtCsum()) {
		b := fs.cache.zero(fs, d.blockBitmap)
		fs.initBlockBitmap(g, b)
		return b, nil
	}
	b, err := fs.cache.get(fs, d.blockBitmap)
	if err != nil {
		return nil, err
	}
	if fs.hasCsum() {
		want := fs.bitmapCsum(b, fs.sb.blocksPerGroup)
		if len(d.raw) < 64 {
			want &= 0xFFFF
		}
		if want != d.blockBitmapCsum {
			return nil, corrupt("group %d block bitmap checksum %#x, computed %#x", g, d.blockBitmapCsum, want)
		}
	}
	return b, nil
}

// initBlockBitmap fills b with what an uninitialized group's bitmap
// implies: its superblock backup and descriptor blocks, any group's
// bitmaps and inode table placed in it, and the bits past its end.
func (fs *FS) initBlockBitmap(g uint32, b []byte) {
	first := fs.groupFirstBlock(g)
	n := uint64(fs.groupBlocks(g))
	if fs.groupHasSuper(g) {
		meta := uint64(1) + uint64((fs.groupCount()+fs.descPerBlk-1)/fs.descPerBlk) + uint64(fs.sb.reservedGdt)
		for i := uint64(0); i < meta && i < n; i++ {
			setBit(b, uint32(i))
		}
	}
	itBlocks := (uint64(fs.sb.inodesPerGroup)*uint64(fs.sb.inodeSize) + uint64(fs.blockSize) - 1) / uint64(fs.blockSize)
	mark := func(start, count uint64) {
		for i := start; i < start+count; i++ {
			if i >= first && i < first+n {
				setBit(b, uint32(i-first))
			}
		}
	}
	for h := range fs.groups {
		d := &fs.groups[h]
		mark(d.blockBitmap, 1)
		mark(d.inodeBitmap, 1)
		mark(d.inodeTable, itBlocks)
	}
	for i := uint32(n); i < fs.blockSize*8; i++ {
		setBit(b, i)
	}
}

// inodeBitmap returns group g's inode bitmap, zeroed (with the padding
// bits set) for an INODE_UNINIT group.
func (fs *FS) inodeBitmap(g uint32) ([]byte, error) {
	d := &fs.groups[g]
	if d.flags&bgInodeUninit != 0 && (fs.hasCsum() || fs.hasGdtCsum()) {
		b := fs.cache.zero(fs, d.inodeBitmap)
		for i := fs.sb.inodesPerGroup; i < fs.blockSize*8; i++ {
			setBit(b, i)
		}
		return b, nil
	}
	b, err := fs.cache.get(fs, d.inodeBitmap)
	if err != nil {
		return nil, err
	}
	if fs.hasCsum() {
		want := fs.bitmapCsum(b, fs.sb.inodesPerGroup)
		if len(d.raw) < 64 {
			want &= 0xFFFF
		}
		if want != d.inodeBitmapCsum {
			return nil, corrupt("group %d inode bitmap checksum %#x, computed %#x", g, d.inodeBitmapCsum, want)
		}
	}
	return b, nil
}

func setBit(b []byte, i uint32)       { b[i/8] |= 1 << (i % 8) }
func clearBit(b []byte, i uint32)     { b[i/8] &^= 1 << (i % 8) }
func testBit(b []byte, i uint32) bool { return b[i/8]&(1<<(i%8)) != 0 }

// writeBlockBitmap writes group g's block bitmap and descriptor.
func (fs *FS) writeBlockBitmap(g uint32, b []byte) error {
	d := &fs.groups[g]
	if err := fs.cache.write(fs, d.blockBitmap, b); err != nil {
		return err
	}
	d.flags &^= bgBlockUninit
	if fs.hasCsum() {
		d.blockBitmapCsum = fs.bitmapCsum(b, fs.sb.blocksPerGroup)
	}
	return fs.writeGroupLocked(g)
}

func (fs *FS) writeInodeBitmap(g uint32, b []byte) error {
	d := &fs.groups[g]
	if err := fs.cache.write(fs, d.inodeBitmap, b); err != nil {
		return err
	}
	d.flags &^= bgInodeUninit
	if fs.hasCsum() {
		d.inodeBitmapCsum = fs.bitmapCsum(b, fs.sb.inodesPerGroup)
	}
	return fs.writeGroupLocked(g)
}

var errNoSpace = linux.ENOSPC

// allocRun allocates up to want contiguous blocks, trying at goal first,
// then onward through the groups; it returns the first block and how
// many it got (at least one). Out of space while blocks freed by
// committed transactions wait for the checkpoint, it checkpoints and
// tries again. Blocks freed by the running transaction only its commit
// gives back, and the operation asking is half made in it: a commit now
// would make that half durable alone (a power cut or a failed commit
// after it leaves blocks or inodes taken and owned by nothing). So it
// fails with errHeldBack (an ENOSPC): the operation undoes what it did,
// and retryHeld commits and runs it again whole.
func (fs *FS) allocRun(goal uint64, want uint32) (uint64, uint32, error) {
	b, n, err := fs.allocRunOnce(goal, want)
	if !errors.Is(err, errNoSpace) || fs.jnl == nil {
		return b, n, err
	}
	if fs.inHandle() {
		// Perhaps held back, and only a commit or checkpoint, which a
		// handle cannot make, gives them back: the operation runs
		// again alone.
		return 0, 0, errExclusive
	}
	if fs.jnl.held != nil || fs.jnl.inflight != nil {
		if err := fs.checkpoint(); err != nil {
			return 0, 0, err
		}
		if b, n, err = fs.allocRunOnce(goal, want); !errors.Is(err, errNoSpace) || fs.jnl == nil {
			return b, n, err
		}
	}
	if fs.jnl.freed != nil {
		return 0, 0, errHeldBack
	}
	return b, n, err
}

// errHeldBack is ENOSPC while the running transaction holds freed
// blocks back (allocRun).
var errHeldBack = fmt.Errorf("%w (blocks freed by the running transaction)", errNoSpace)

// retryHeld runs op, an operation holding FS.mu for writing, and once
// more after a commit and a checkpoint if it failed for want of the
// blocks the running transaction freed (errHeldBack): failed, it undid
// what it did, so the commit closes the transaction between operations.
func (fs *FS) retryHeld(op func() error) error {
	err := op()
	if !errors.Is(err, errHeldBack) {
		return err
	}
	if err := fs.commitOrStop(); err != nil {
		return err
	}
	if err := fs.checkpoint(); err != nil {
		return err
	}
	return op()
}

// allocData is allocRun for a file's own blocks (data, directory
// blocks): it leaves the last resvBlocks free blocks to metadata. An
// extent tree grows after its data is allocated (writeExtents), and a
// tree that found no block would leave the data allocated on the disk
// and mapped by nothing; the reserve makes that need a tree of more
// blocks than 2% of the disk. Linux keeps the same reserve
// (s_resv_clusters) for the same reason. Concurrent handles may each
// take up to the last free block above the reserve, so it is a margin,
// not a count: a tree that still finds no room undoes the blocks mapped
// since it was last stored (saveExtents).
func (fs *FS) allocData(goal uint64, want uint32) (uint64, uint32, error) {
	// Blocks freed and held back count as free here: allocRun's
	// checkpoint, or retryHeld's commit, reaches them.
	avail := fs.freeBlocks.Load() - fs.resvBlocks
	if avail <= 0 {
		return 0, 0, errNoSpace
	}
	return fs.allocRun(goal, uint32(min(int64(want), avail)))
}

func (fs *FS) allocRunOnce(goal uint64, want uint32) (uint64, uint32, error) {
	if fs.ro {
		return 0, 0, linux.EROFS
	}
	if fs.freeBlocks.Load() <= 0 {
		return 0, 0, errNoSpace
	}
	if goal < uint64(fs.sb.firstDataBlock) || goal >= fs.sb.blocksCount {
		goal = uint64(fs.sb.firstDataBlock)
	}
	ng := fs.groupCount()
	g0 := uint32((goal - uint64(fs.sb.firstDataBlock)) / uint64(fs.sb.blocksPerGroup))
	// The goal group from the goal on, the other groups, then the goal
	// group's blocks before the goal: each group under its own lock,
	// one at a time. A group whose lock another holds is passed over at
	// first, and gone back to only if no other group has room: two
	// handles that meet in a group go on in two, as Linux's allocator
	// spreads small files by CPU. Not the goal group where the goal is
	// in its middle: a file growing keeps its blocks together.
	goalOff := uint32(goal - fs.groupFirstBlock(g0))
	type span struct{ g, start, end uint32 }
	var busy []span
	for k := uint32(0); k <= ng; k++ {
		g := (g0 + k) % ng
		start, end := uint32(0), fs.groupBlocks(g)
		switch {
		case k == 0:
			start = goalOff
		case k == ng:
			end = goalOff
		}
		if start >= end {
			continue
		}
		wait := k == 0 && goalOff != 0
		b, got, ok, err := fs.allocInGroup(g, start, end, want, wait)
		if err != nil || got > 0 {
			return b, got, err
		}
		if !ok {
			busy = append(busy, span{g, start, end})
		}
	}
	for _, s := range busy {
		b, got, _, err := fs.allocInGroup(s.g, s.start, s.end, want, true)
		if err != nil || got > 0 {
			return b, got, err
		}
	}
	return 0, 0, errNoSpace
}

// allocInGroup allocates up to want contiguous blocks among blocks
// [start, end) of group g, holding only g's lock; got is 0 if none is
// free there. Unless wait, it only tries the lock: ok false says
// another holds it.
func (fs *FS) allocInGroup(g, start, end, want uint32, wait bool) (blk uint64, got uint32, ok bool, err error) {
	gl := &fs.glocks[g]
	if wait {
		fs.lockGroup(gl)
	} else if !gl.TryLock() {
		return 0, 0, false, nil
	}
	defer gl.Unlock()
	blk, got, err = fs.allocLocked(g, start, end, want)
	return blk, got, true, err
}

// blockUsed reports, for a group whose block bitmap is b and whose
// blocks freed by transactions not yet committed are reserved (they must
// not be reused before the commit that frees them), whether block i is
// taken.
func blockUsed(b []byte, reserved [4][]byte) func(i uint32) bool {
	return func(i uint32) bool {
		if testBit(b, i) {
			return true
		}
		for _, r := range reserved {
			if r != nil && testBit(r, i) {
				return true
			}
		}
		return false
	}
}

// allocLocked is allocInGroup's work, under g's lock.
func (fs *FS) allocLocked(g, start, end, want uint32) (uint64, uint32, error) {
	d := &fs.groups[g]
	if d.freeBlocks == 0 {
		return 0, 0, nil
	}
	b, err := fs.blockBitmap(g)
	if err != nil {
		return 0, 0, err
	}
	reserved := fs.freedInGroup(g)
	used := blockUsed(b, reserved)
	for i := start; i < end; i++ {
		if i%64 == 0 && i+64 <= end {
			// A word at a time to the first block free in the
			// bitmap and not reserved: a transaction that freed
			// thousands of blocks would otherwise make every
			// allocation test them one by one (under the group's
			// lock).
			w := le.Uint64(b[i/8:])
			for _, r := range reserved {
				if r != nil {
					w |= le.Uint64(r[i/8:])
				}
			}
			if w == ^uint64(0) {
				i += 63 // 64 blocks in use
				continue
			}
			i += uint32(bits.TrailingZeros64(^w))
		}
		if used(i) {
			continue
		}
		got := uint32(0)
		for i+got < end && got < want && !used(i+got) {
			setBit(b, i+got)
			got++
		}
		if got > d.freeBlocks {
			return 0, 0, corrupt("group %d free block count %d below its bitmap's", g, d.freeBlocks)
		}
		d.freeBlocks -= got
		fs.freeBlocks.Add(-int64(got))
		if err := fs.writeBlockBitmap(g, b); err != nil {
			return 0, 0, err
		}
		return fs.groupFirstBlock(g) + uint64(i), got, nil
	}
	return 0, 0, nil
}

// allocBlockList allocates n blocks, not necessarily contiguous, near goal.
func (fs *FS) allocBlockList(goal uint64, n int, owner uint32) ([]uint64, error) {
	var out []uint64
	for len(out) < n {
		b, got, err := fs.allocRun(goal, uint32(n-len(out)))
		if err != nil {
			fs.freeBlockList(out)
			return nil, err
		}
		for i := uint32(0); i < got; i++ {
			out = append(out, b+uint64(i))
		}
		goal = b + uint64(got)
	}
	return out, nil
}

// freeRun frees n blocks from start; freeing a free block is corruption.
func (fs *FS) freeRun(start uint64, n uint32) error {
	for n > 0 {
		if start < uint64(fs.sb.firstDataBlock) || start+uint64(n) > fs.sb.blocksCount {
			return corrupt("free of blocks %d+%d outside the file system", start, n)
		}
		g := uint32((start - uint64(fs.sb.firstDataBlock)) / uint64(fs.sb.blocksPerGroup))
		off := uint32(start - fs.groupFirstBlock(g))
		cnt := min(n, fs.groupBlocks(g)-off)
		if err := fs.freeInGroup(g, off, cnt); err != nil {
			return err
		}
		if fs.discardFreed && fs.jnl == nil {
			// No journal: nothing to wait for (Linux's no-journal
			// ext4 discards as it frees too).
			fs.discardRun(start, uint64(cnt))
		}
		start += uint64(cnt)
		n -= cnt
	}
	return nil
}

// freeInGroup frees blocks [off, off+cnt) of group g under g's lock.
func (fs *FS) freeInGroup(g, off, cnt uint32) error {
	gl := &fs.glocks[g]
	fs.lockGroup(gl)
	defer gl.Unlock()
	first := fs.groupFirstBlock(g) + uint64(off)
	b, err := fs.blockBitmap(g)
	if err != nil {
		return err
	}
	for i := uint32(0); i < cnt; i++ {
		if !testBit(b, off+i) {
			return corrupt("block %d freed twice", first+uint64(i))
		}
	}
	for i := uint32(0); i < cnt; i++ {
		clearBit(b, off+i)
	}
	fs.cache.drop(first, cnt)
	fs.noteFreed(g, off, cnt, first)
	fs.groups[g].freeBlocks += cnt
	fs.freeBlocks.Add(int64(cnt))
	if fs.trimmed != nil {
		fs.trimmed[g] = false // the next FITRIM looks at it again
	}
	fs.frees.Add(1)
	return fs.writeBlockBitmap(g, b)
}

func (fs *FS) freeBlockList(bs []uint64) error {
	var errs []error
	for i := 0; i < len(bs); {
		j := i + 1
		for j < len(bs) && bs[j] == bs[j-1]+1 {
			j++
		}
		if err := fs.freeRun(bs[i], uint32(j-i)); err != nil {
			errs = append(errs, err)
		}
		i = j
	}
	return errors.Join(errs...)
}

// allocInode takes a free inode, in the parent's group if it has one
// (a directory: dirGroup's), and one for which take, if not nil, says
// yes (a handle takes its lock there, passing over inodes whose lock
// another holds), and returns the next generation number too. Each
// group is searched under its own lock, one at a time.
func (fs *FS) allocInode(parent uint32, dir bool, take func(ino uint32) bool) (uint32, uint32, error) {
	gen := fs.genCounter.Add(1)
	if fs.ro {
		return 0, 0, linux.EROFS
	}
	if fs.freeInodes.Load() <= 0 {
		return 0, 0, errNoSpace
	}
	ng := fs.groupCount()
	g0 := (parent - 1) / fs.sb.inodesPerGroup
	if dir {
		g0 = fs.dirGroup(g0)
	}
	// As for blocks (allocRunOnce), a group whose lock another holds
	// is passed over at first, the parent's too: a file's inode near
	// its directory's is worth less than two creates side by side.
	var busy []uint32
	for k := uint32(0); k < ng; k++ {
		g := (g0 + k) % ng
		ino, ok, err := fs.allocInodeInGroup(g, dir, take, false)
		if err != nil || ino != 0 {
			return ino, gen, err
		}
		if !ok {
			busy = append(busy, g)
		}
	}
	for _, g := range busy {
		ino, _, err := fs.allocInodeInGroup(g, dir, take, true)
		if err != nil || ino != 0 {
			return ino, gen, err
		}
	}
	return 0, 0, errNoSpace
}

// dirGroup picks the group for a new directory whose parent is in group
// parent: the one with the most free inodes if it has more than twice
// the parent's, else the parent's. Directories are not spread further
// (as Linux's Orlov allocator spreads those made in the root): each
// group a file system's work touches adds its bitmaps and inode table
// blocks to every commit, 8% more bytes logged per message for the mail
// benchmark's tree. Handles side by side spread instead where they meet
// (allocInode and allocRunOnce pass over a group another holds).
// With FS.mu held for writing the groups' counts are read without
// their locks; in a handle (Mkdir) each under its group's lock.
func (fs *FS) dirGroup(parent uint32) uint32 {
	free := func(g uint32) uint32 { return fs.groups[g].freeInodes }
	if fs.inHandle() {
		free = func(g uint32) uint32 {
			fs.lockGroup(&fs.glocks[g])
			defer fs.glocks[g].Unlock()
			return fs.groups[g].freeInodes
		}
	}
	best, bestFree := parent, free(parent)
	parentFree := bestFree
	for g := range fs.groupCount() {
		if n := free(g); n > bestFree {
			best, bestFree = g, n
		}
	}
	if bestFree > parentFree*2 {
		return best
	}
	return parent
}

// allocInodeInGroup takes a free inode of group g for which take says
// yes, under g's lock; 0 if there is none. Unless wait, it only tries
// the lock: ok false says another holds it.
func (fs *FS) allocInodeInGroup(g uint32, dir bool, take func(ino uint32) bool, wait bool) (ino uint32, ok bool, err error) {
	gl := &fs.glocks[g]
	if wait {
		fs.lockGroup(gl)
	} else if !gl.TryLock() {
		return 0, false, nil
	}
	defer gl.Unlock()
	ino, err = fs.allocInodeLocked(g, dir, take)
	return ino, true, err
}

// allocInodeLocked is allocInodeInGroup's work, under g's lock.
func (fs *FS) allocInodeLocked(g uint32, dir bool, take func(ino uint32) bool) (uint32, error) {
	d := &fs.groups[g]
	if d.freeInodes == 0 {
		return 0, nil
	}
	b, err := fs.inodeBitmap(g)
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < fs.sb.inodesPerGroup; i++ {
		if i%64 == 0 && i+64 <= fs.sb.inodesPerGroup {
			w := le.Uint64(b[i/8:])
			if w == ^uint64(0) {
				i += 63 // 64 inodes in use
				continue
			}
			i += uint32(bits.TrailingZeros64(^w))
		}
		ino := g*fs.sb.inodesPerGroup + i + 1
		if testBit(b, i) || ino < fs.sb.firstIno || take != nil && !take(ino) {
			continue
		}
		setBit(b, i)
		d.freeInodes--
		fs.freeInodes.Add(-1)
		if dir {
			d.usedDirs++
		}
		if unused := fs.sb.inodesPerGroup - i - 1; (fs.hasCsum() || fs.hasGdtCsum()) && unused < d.itableUnused {
			d.itableUnused = unused
		}
		return ino, fs.writeInodeBitmap(g, b)
	}
	return 0, nil
}

func (fs *FS) freeInode(ino uint32, dir bool) error {
	g := (ino - 1) / fs.sb.inodesPerGroup
	i := (ino - 1) % fs.sb.inodesPerGroup
	gl := &fs.glocks[g]
	fs.lockGroup(gl)
	defer gl.Unlock()
	b, err := fs.inodeBitmap(g)
	if err != nil {
		return err
	}
	if !testBit(b, i) {
		return corrupt("inode %d freed twice", ino)
	}
	clearBit(b, i)
	d := &fs.groups[g]
	d.freeInodes++
	fs.freeInodes.Add(1)
	if dir && d.usedDirs > 0 {
		d.usedDirs--
	}
	return fs.writeInodeBitmap(g, b)
}
