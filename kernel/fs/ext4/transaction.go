package ext4

import (
	"errors"
	"fmt"

	"shortbread/kernel/abi/linux"
)

// Writing through the journal. On a read-write mount of a file system
// with a journal, metadata blocks changed by an operation (through
// cache.write) join the running transaction instead of going home.
// The file system superblock says needs_recovery for as long as the
// mount is read-write (set, flushed, at mount; cleared at Unmount), so
// that a crash at any point leaves a log that Linux, e2fsck and this
// package replay. Commit makes a transaction durable, in jbd2's ordered
// mode:
//
//  1. flush the device, so the file data written so far (straight to its
//     blocks) is durable before the metadata that points at it;
//  2. write a descriptor, the blocks and a commit block at the start of
//     the log, flush;
//  3. point the journal superblock at the log, flush: from here a crash
//     replays;
//  4. write the blocks home (checkpoint), flush;
//  5. empty the log (the journal superblock again).
//
// The journal superblock is 1024 bytes like the file system's, but
// commits change only s_sequence, s_start and s_checksum, all in its
// first 512 bytes: a write of it torn at a sector leaves either the old
// or the new one, both whole (TestTornJournalSuper).
//
// Each commit empties the log again, so a transaction never needs revoke
// records for blocks an earlier one logged. A block freed while in the
// running transaction leaves it (it may come back as file data). Commits
// happen on Sync, when the transaction nears the journal's size, and
// between operations once it holds a quarter of it.

type journal struct {
	r       *journalReader
	jsbPhys uint64
	seq     uint32
	blocks  map[uint64][]byte // the running transaction: block -> cache buffer
	order   []uint64
	cap     int // blocks a transaction may hold
	// freed holds, per group, the blocks freed by the running
	// transaction. They stay out of reach of the allocator until it
	// commits: written with new data before then, a crash would leave
	// the file they still belong to holding it.
	freed map[uint32][]byte
}

// openJournal prepares writing through the journal of a read-write mount.
func (fs *FS) openJournal() error {
	if fs.ro || fs.sb.compat&compatHasJournal == 0 || fs.sb.journalInum == 0 {
		return nil
	}
	r, phys, err := fs.readJournal()
	if err != nil {
		return err
	}
	jsb := r.jsb
	if jsb.incompat&^jbdIncompatKnown != 0 {
		fs.ro, fs.roWhy = true, "journal features not handled"
		return nil
	}
	if jsb.start != 0 {
		// A log the superblock does not ask to replay (needs_recovery is
		// clear): its transactions reached home already (a crash as a
		// commit emptied the log), or its writer meant it dropped. Like
		// Linux, wipe it, numbering new transactions past any in it so
		// that a later scan cannot run on into the old ones.
		end, err := r.scan()
		if err != nil {
			return err
		}
		be.PutUint32(jsb.raw[0x18:], end)
		be.PutUint32(jsb.raw[0x1C:], 0)
		if jsb.csumV23() {
			be.PutUint32(jsb.raw[0xFC:], journalSuperCsum(jsb.raw))
		}
		if err := fs.devWrite(jsb.raw, phys); err != nil {
			return err
		}
		if err := fs.flush(); err != nil {
			return err
		}
		jsb.sequence, jsb.start = end, 0
	}
	j := &journal{r: r, jsbPhys: phys, seq: jsb.sequence, blocks: map[uint64][]byte{}}
	// Room for the blocks, their descriptors and the commit block.
	perDesc := (int(fs.blockSize) - jbdHeaderSize - jbdTailSize - 16) / jsb.tagSize()
	logLen := int(jsb.maxLen - jsb.first)
	j.cap = (logLen - 2) * perDesc / (perDesc + 1)
	if j.cap < 64 {
		fs.ro, fs.roWhy = true, "journal too small"
		return nil
	}
	fs.jnl = j
	return nil
}

// logBlock adds block n (the cache's buffer b) to the running transaction.
func (fs *FS) logBlock(n uint64, b []byte) error {
	j := fs.jnl
	if _, ok := j.blocks[n]; !ok {
		j.order = append(j.order, n)
	}
	j.blocks[n] = b
	if len(j.blocks) >= j.cap-16 {
		// An operation bigger than the journal: commit in its middle
		// rather than fail it.
		return fs.commitOrStop()
	}
	return nil
}

// unlog drops block n from the running transaction: it was freed.
func (fs *FS) unlog(n uint64) {
	if j := fs.jnl; j != nil {
		if _, ok := j.blocks[n]; ok {
			delete(j.blocks, n)
			for i, m := range j.order {
				if m == n {
					j.order = append(j.order[:i], j.order[i+1:]...)
					break
				}
			}
		}
	}
}

// noteFreed records that the running transaction freed bit i of group g.
func (fs *FS) noteFreed(g, i uint32) {
	j := fs.jnl
	if j == nil {
		return
	}
	if j.freed == nil {
		j.freed = map[uint32][]byte{}
	}
	b := j.freed[g]
	if b == nil {
		b = make([]byte, fs.blockSize)
		j.freed[g] = b
	}
	setBit(b, i)
}

// freedInGroup returns the bitmap of group g's blocks freed by the
// running transaction, or nil if none.
func (fs *FS) freedInGroup(g uint32) []byte {
	if fs.jnl == nil || fs.jnl.freed == nil {
		return nil
	}
	return fs.jnl.freed[g]
}

// inTransaction reports whether block n waits in the running transaction
// (the cache must keep it: its home copy is stale).
func (fs *FS) inTransaction(n uint64) bool {
	if fs.jnl == nil {
		return false
	}
	_, ok := fs.jnl.blocks[n]
	return ok
}

// Sync commits the running transaction and flushes the device: every
// operation that returned before it is durable.
func (fs *FS) Sync() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.ro {
		return nil
	}
	if (fs.jnl == nil || len(fs.jnl.order) == 0) && fs.written.Load() == fs.durable {
		return nil // everything written is behind a completed flush already
	}
	if err := fs.commitOrStop(); err != nil {
		return err
	}
	if fs.jnl == nil {
		// No journal (ext2): the free counts go home here, as Linux's
		// ext2 writes its superblock at sync_fs.
		return fs.writeSuperHome()
	}
	return fs.flush()
}

// Commit commits the running transaction if it holds anything, and says
// whether it did: what a timer calls every few seconds (Linux commits
// every 5 s), without flushing an idle device.
func (fs *FS) Commit() (bool, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.ro || fs.jnl == nil || len(fs.jnl.order) == 0 {
		return false, nil
	}
	return true, fs.commitOrStop()
}

// flush makes every write issued so far durable.
// Preconditions: fs.mu is held.
func (fs *FS) flush() error {
	w := fs.written.Load()
	if err := fs.dev.Flush(); err != nil {
		return fmt.Errorf("ext4: flush: %w", errors.Join(linux.EIO, err))
	}
	fs.durable = max(fs.durable, w)
	return nil
}

func (fs *FS) devWrite(b []byte, n uint64) error {
	if _, err := fs.dev.WriteAt(b, int64(n)*int64(fs.blockSize)); err != nil {
		return fmt.Errorf("ext4: write block %d: %w", n, errors.Join(linux.EIO, err))
	}
	return nil
}

// maybeCommit commits between operations once the transaction is large.
// A commit that fails leaves the file system read-only (Linux's
// errors=remount-ro): what was not committed is lost, and nothing after
// it may pretend otherwise.
func (fs *FS) maybeCommit() {
	if j := fs.jnl; j != nil && len(j.blocks) >= j.cap/4 {
		fs.commitOrStop()
	}
}

func (fs *FS) commitOrStop() error {
	err := fs.commitLocked()
	if err != nil && !fs.ro {
		fs.ro, fs.roWhy = true, "journal commit failed: "+err.Error()
		fs.jnl = nil
	}
	return err
}

// commitLocked runs the five steps above.
func (fs *FS) commitLocked() error {
	j := fs.jnl
	if j == nil || len(j.order) == 0 {
		return nil
	}
	jsb := j.r.jsb
	bs := int(fs.blockSize)
	if err := fs.flush(); err != nil { // 1
		return err
	}
	if fs.sb.incompat&incompatRecover == 0 {
		// Mount sets it, flushed, before the first commit: Linux
		// wipes a log its superblock does not ask to replay.
		return errors.New("ext4: commit without needs_recovery set")
	}
	if b, ok := j.blocks[uint64(superOffset/fs.blockSize)]; ok {
		// A logged superblock (the orphan list's head changed) goes
		// with the free counts as this transaction leaves them.
		fs.encodeSuper()
		copy(b[superOffset%fs.blockSize:], fs.sb.raw)
	}
	// 2: the log, from its first block.
	seq := j.seq
	pos := jsb.first
	var writeErr error
	put := func(b []byte) {
		if writeErr != nil {
			return
		}
		p, _, _, err := j.r.fm.lookup(pos, 1)
		if err == nil && p == 0 {
			err = corrupt("journal block %d is a hole", pos)
		}
		if err == nil {
			err = fs.devWrite(b, p)
		}
		writeErr = err
		pos++
	}
	header := func(b []byte, kind uint32) {
		be.PutUint32(b[0:], jbdMagic)
		be.PutUint32(b[4:], kind)
		be.PutUint32(b[8:], seq)
	}
	tagSize := jsb.tagSize()
	limit := bs
	if jsb.csumV23() {
		limit -= jbdTailSize
	}
	// The blocks as logged: a block starting with the journal's magic
	// number has it zeroed and its tag flagged.
	logged := make(map[uint64][]byte, len(j.order))
	escaped := make(map[uint64]bool)
	for _, n := range j.order {
		data := append([]byte(nil), j.blocks[n]...)
		if be.Uint32(data) == jbdMagic {
			be.PutUint32(data, 0)
			escaped[n] = true
		}
		logged[n] = data
	}
	for i := 0; i < len(j.order); {
		desc := make([]byte, bs)
		header(desc, jbdDescriptor)
		off := jbdHeaderSize
		lastFlags := 0
		var batch []uint64
		for ; i < len(j.order); i++ {
			need := tagSize
			if len(batch) == 0 {
				need += 16 // the first tag carries the UUID
			}
			if off+need > limit {
				break
			}
			n := j.order[i]
			var flags uint32
			if len(batch) > 0 {
				flags |= tagSameUUID
			}
			if escaped[n] {
				flags |= tagEscape
			}
			be.PutUint32(desc[off:], uint32(n))
			if jsb.incompat&jbdIncompat64bit != 0 {
				be.PutUint32(desc[off+8:], uint32(n>>32))
			} else if n >= 1<<32 {
				return corrupt("block %d does not fit a 32-bit journal", n)
			}
			if jsb.incompat&jbdIncompatCsumV3 != 0 {
				be.PutUint32(desc[off+4:], flags)
				be.PutUint32(desc[off+12:], jsb.dataCsum(seq, logged[n]))
			} else {
				if jsb.incompat&jbdIncompatCsumV2 != 0 {
					be.PutUint16(desc[off+4:], uint16(jsb.dataCsum(seq, logged[n])))
				}
				be.PutUint16(desc[off+6:], uint16(flags))
			}
			lastFlags = off
			off += tagSize
			if len(batch) == 0 {
				copy(desc[off:], jsb.uuid[:])
				off += 16
			}
			batch = append(batch, n)
		}
		// The last tag says so.
		if jsb.incompat&jbdIncompatCsumV3 != 0 {
			be.PutUint32(desc[lastFlags+4:], be.Uint32(desc[lastFlags+4:])|tagLast)
		} else {
			be.PutUint16(desc[lastFlags+6:], be.Uint16(desc[lastFlags+6:])|tagLast)
		}
		if jsb.csumV23() {
			c := crc32c(jsb.csumSeed, desc[:bs-jbdTailSize])
			be.PutUint32(desc[bs-jbdTailSize:], crc32c(c, []byte{0, 0, 0, 0}))
		}
		put(desc)
		for _, n := range batch {
			put(logged[n])
		}
	}
	commit := make([]byte, bs)
	header(commit, jbdCommit)
	now := fs.now()
	be.PutUint64(commit[0x30:], uint64(now.Sec))
	be.PutUint32(commit[0x38:], uint32(now.Nsec))
	if jsb.csumV23() {
		commit[12], commit[13] = 4, 4 // crc32c, 4 bytes
		c := crc32c(jsb.csumSeed, commit[:16])
		c = crc32c(c, []byte{0, 0, 0, 0})
		be.PutUint32(commit[16:], crc32c(c, commit[20:]))
	}
	if writeErr != nil {
		return writeErr
	}
	if err := fs.flush(); err != nil {
		return err
	}
	put(commit)
	if writeErr != nil {
		return writeErr
	}
	if err := fs.flush(); err != nil {
		return err
	}
	// 3: the journal superblock points at the log (the file system's
	// says needs_recovery since the mount).
	if err := fs.writeJournalSuper(jsb.first, seq); err != nil {
		return err
	}
	if err := fs.flush(); err != nil {
		return err
	}
	// 4: checkpoint.
	for _, n := range j.order {
		if err := fs.devWrite(j.blocks[n], n); err != nil {
			return err
		}
	}
	if err := fs.flush(); err != nil {
		return err
	}
	// 5: empty log. Unflushed: the next commit's first flush covers it,
	// and until then a replay of the log only rewrites what is home.
	j.seq++
	j.blocks = map[uint64][]byte{}
	j.order = nil
	j.freed = nil
	return fs.writeJournalSuper(0, j.seq)
}

func (fs *FS) writeJournalSuper(start, seq uint32) error {
	jsb := fs.jnl.r.jsb
	be.PutUint32(jsb.raw[0x18:], seq)
	be.PutUint32(jsb.raw[0x1C:], start)
	if jsb.csumV23() {
		be.PutUint32(jsb.raw[0xFC:], journalSuperCsum(jsb.raw))
	}
	return fs.devWrite(jsb.raw, fs.jnl.jsbPhys)
}
