package ext4

import (
	"errors"
	"fmt"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
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
//  1. if the log has no room for it, checkpoint: write the blocks of
//     the transactions in the log home, flush, point the journal
//     superblock at an empty log, flush;
//  2. write a descriptor and the blocks after the last transaction in
//     the log (into an empty log, the journal superblock first points at
//     it);
//  3. flush, so the file data written so far (straight to its blocks)
//     and the log are durable; write the commit block, flush.
//
// So an fsync costs two flushes and two or three writes, as on Linux,
// and the blocks go home only when the log fills (or at unmount),
// however often they were committed. Steps 2 and 3 run without FS.mu
// (Sync, the periodic Commit), as does the write-back of file data
// before them: operations go on into the next transaction while one is
// written, and fsyncs that arrive meanwhile share the next commit.
//
// The journal superblock is 1024 bytes like the file system's, but
// commits change only s_sequence, s_start and s_checksum, all in its
// first 512 bytes: a write of it torn at a sector leaves either the old
// or the new one, both whole (TestTornJournalSuper).
//
// No revoke records are written. Instead a block freed while the log
// holds a copy of it stays out of the allocator's reach until the
// checkpoint empties the log: reused as file data before then, a replay
// would write the old copy over it. A block freed in the running
// transaction leaves it (it may come back as file data). Commits happen
// on Sync, when the transaction nears the journal's size, and between
// operations once it holds a quarter of it.

// maxCheckpoint bounds the committed blocks kept in memory for the
// checkpoint (4 MiB of 4 KiB blocks): a large journal is not a license
// to hold its size in kernel memory.
const maxCheckpoint = 1024

type journal struct {
	r       *journalReader
	jsbPhys uint64
	seq     uint32
	blocks  map[uint64][]byte // the running transaction: block -> cache buffer
	order   []uint64
	cap     int // blocks a transaction may hold
	// reserved counts the blocks the open handles may still add
	// (handle.go). It, blocks, order and freed are guarded by FS.jmu
	// under FS.mu held for reading, by FS.mu alone held for writing.
	reserved int
	// freed holds, per group, the blocks freed by the running
	// transaction. They stay out of reach of the allocator until it
	// commits: written with new data before then, a crash would leave
	// the file they still belong to holding it.
	freed map[uint32][]byte
	// The log: committed transactions waiting for the checkpoint.
	head uint32            // the log block the next transaction starts at
	ckpt map[uint64][]byte // block -> its last committed contents
	// held holds, per group, blocks freed by committed transactions of
	// which the log has a copy: free only after the checkpoint.
	held map[uint32][]byte
	// inflight is the transaction being written to the log with FS.mu
	// released (nil: none); done is the first sequence number not yet
	// known durable.
	inflight *commitIO
	done     uint32
	// ckptIO is the checkpoint being written with FS.mu released (nil:
	// none; checkpoint.go). No transaction closes meanwhile.
	ckptIO *ckptIO
}

// commitIO is a closed transaction on its way to the log: everything it
// writes, resolved to device blocks while FS.mu was held, so that the
// writes and flushes need no lock of the file system.
type commitIO struct {
	seq uint32
	// data: the files written in the transaction, whose pages go
	// before its log (data=ordered); dataErr their write-back's
	// failure, for the next Sync.
	data    []*pagecache.File
	dataErr error
	writes  []physWrite // the journal superblock (into an empty log), the log
	commit  physWrite
	// freed: blocks the transaction freed, reserved until it is durable.
	freed map[uint32][]byte
	ready chan struct{} // closed when the writes are done (err set)
	err   error
}

type physWrite struct {
	blk  uint64
	data []byte
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
	if fs.hasCsum() && jsb.incompat&jbdIncompatCsumV3 == 0 && be.Uint32(jsb.raw[4:]) == jbdSuperV2 {
		// As Linux at a read-write mount of a metadata_csum file
		// system (mke2fs leaves the journal without): the log gets
		// checksums, v3, so that a replay tells a torn or stale block
		// from a logged one; v2's 16-bit tag checksums become v3's
		// too. The log is empty here. Every field changed is in the
		// first 512 bytes (TestTornJournalSuper).
		jsb.incompat = jsb.incompat&^jbdIncompatCsumV2 | jbdIncompatCsumV3
		jsb.compat &^= jbdCompatChecksum
		be.PutUint32(jsb.raw[0x24:], jsb.compat)
		be.PutUint32(jsb.raw[0x28:], jsb.incompat)
		jsb.raw[0x50] = 4 // crc32c
		jsb.csumSeed = crc32c(^uint32(0), jsb.uuid[:])
		be.PutUint32(jsb.raw[0xFC:], journalSuperCsum(jsb.raw))
		if err := fs.devWrite(jsb.raw, phys); err != nil {
			return err
		}
		if err := fs.flush(); err != nil {
			return err
		}
	}
	j := &journal{r: r, jsbPhys: phys, seq: jsb.sequence, blocks: map[uint64][]byte{},
		head: jsb.first, ckpt: map[uint64][]byte{}, done: jsb.sequence}
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
	fs.jmu.Lock()
	if _, ok := j.blocks[n]; !ok {
		j.order = append(j.order, n)
	}
	j.blocks[n] = b
	full := len(j.blocks) >= j.cap-16
	fs.jmu.Unlock()
	if full && !fs.inHandle() {
		// An operation bigger than the journal: commit in its middle
		// rather than fail it. (A handle's credits keep the
		// transaction below half the journal: hbegin.)
		return fs.commitOrStop()
	}
	return nil
}

// unlog drops the cnt blocks from n from the running transaction: they
// were freed.
func (fs *FS) unlog(n uint64, cnt uint32) {
	if fs.jnl == nil {
		return
	}
	fs.jmu.Lock()
	defer fs.jmu.Unlock()
	fs.unlogLocked(n, cnt)
}

// unlogLocked is unlog under jmu.
func (fs *FS) unlogLocked(n uint64, cnt uint32) {
	j := fs.jnl
	for k := range uint64(cnt) {
		if _, ok := j.blocks[n+k]; !ok {
			continue
		}
		delete(j.blocks, n+k)
		for i, m := range j.order {
			if m == n+k {
				j.order = append(j.order[:i], j.order[i+1:]...)
				break
			}
		}
	}
}

// noteFreed records that the running transaction freed bits [i, i+cnt)
// of group g, blocks [n, n+cnt), and drops any of them it logged, under
// one hold of jmu.
func (fs *FS) noteFreed(g, i, cnt uint32, n uint64) {
	j := fs.jnl
	if j == nil {
		return
	}
	fs.jmu.Lock()
	defer fs.jmu.Unlock()
	fs.unlogLocked(n, cnt)
	if j.freed == nil {
		j.freed = map[uint32][]byte{}
	}
	b := j.freed[g]
	if b == nil {
		b = make([]byte, fs.blockSize)
		j.freed[g] = b
	}
	for k := range cnt {
		setBit(b, i+k)
	}
}

// freedInGroup returns the bitmaps of group g's blocks that are free
// but not yet to be reused: freed by the running transaction, by the one
// being committed, and by committed ones while the log holds copies of
// them, and those a FITRIM is discarding (nil where none).
func (fs *FS) freedInGroup(g uint32) [4][]byte {
	j := fs.jnl
	if j == nil {
		return [4][]byte{3: fs.trimming[g]}
	}
	var c []byte
	if j.inflight != nil {
		c = j.inflight.freed[g]
	}
	fs.jmu.Lock()
	defer fs.jmu.Unlock()
	return [4][]byte{j.freed[g], c, j.held[g], fs.trimming[g]}
}

// inTransaction reports whether block n waits in the running transaction
// (the cache must keep it: its home copy is stale).
func (fs *FS) inTransaction(n uint64) bool {
	if fs.stopped {
		// No block the cache holds is safe to read again from the
		// disk: a failed commit or checkpoint left the disk behind.
		return true
	}
	if fs.jnl == nil {
		return false
	}
	fs.jmu.Lock()
	defer fs.jmu.Unlock()
	_, ok := fs.jnl.blocks[n]
	return ok
}

// Sync commits the running transaction and flushes the device: every
// operation that returned before it began is durable when it returns.
//
// Neither the file data nor the log is written under FS.mu, so other
// operations go on (into the next transaction) meanwhile; a Sync that
// finds its changes in a transaction being written waits for that one,
// and the changes of every Sync that waits meanwhile go to the log
// together (group commit).
func (fs *FS) Sync() error {
	fs.mu.Lock()
	if fs.ro {
		fs.mu.Unlock()
		return nil
	}
	// The caller's writes of file data are done once the dirty pages
	// are written back; a failure is reported after the commit, which
	// goes on (the metadata is sound either way). The commit that
	// makes their blocks part of the file system waits for this
	// write-back (writeCommit).
	files, dataErr := fs.takeUnsynced()
	fs.mu.Unlock()
	for _, f := range files {
		f.CleanMapped() // needs the locks a fault takes: none held here
	}
	dataErr = syncFiles(files, dataErr)
	fs.mu.Lock()
	if fs.ro {
		// Gone read-only meanwhile: by a remount, which made everything
		// durable, or by a failed commit, which lost what it held.
		fs.mu.Unlock()
		if fs.stopped {
			return errors.Join(dataErr, fmt.Errorf("ext4: %s: %w", fs.roWhy, linux.EIO))
		}
		return dataErr
	}
	if fs.jnl == nil {
		defer fs.mu.Unlock()
		if fs.written.Load() == fs.durable.Load() {
			return dataErr // everything written is behind a completed flush already
		}
		// No journal (ext2): the free counts go home here, as Linux's
		// ext2 writes its superblock at sync_fs.
		return errors.Join(dataErr, fs.writeSuperHome())
	}
	mine := fs.written.Load()
	if err := fs.commitAsync(); err != nil {
		fs.mu.Unlock()
		return errors.Join(dataErr, err)
	}
	fs.mu.Unlock()
	if fs.durable.Load() >= mine {
		return dataErr // a commit's flush covered them
	}
	return errors.Join(dataErr, fs.flush()) // file data written without a metadata change
}

// commitAsync makes the transactions holding every change made so far
// durable, releasing FS.mu while it writes (the files written in the
// transaction back, the log, a checkpoint) and while it waits for
// another caller's commit.
// Preconditions: fs.mu is held and fs.jnl is not nil; it is held again
// on return.
func (fs *FS) commitAsync() error {
	j := fs.jnl
	var target uint32
	switch {
	case len(j.order) > 0:
		target = j.seq
	case j.inflight != nil:
		target = j.inflight.seq
	default:
		return nil
	}
	for {
		if err := fs.reapLocked(); err != nil {
			return err
		}
		if fs.jnl == nil {
			return fmt.Errorf("ext4: %s: %w", fs.roWhy, linux.EIO)
		}
		if int32(j.done-target) > 0 {
			return nil
		}
		if fs.waitInFlightLocked() {
			continue
		}
		if fs.needCheckpoint() {
			k := fs.startCheckpoint()
			fs.mu.Unlock()
			fs.writeCheckpoint(k)
			fs.mu.Lock()
			continue
		}
		c, err := fs.closeLocked()
		if err != nil {
			fs.stop(err)
			return err
		}
		j.inflight = c
		fs.mu.Unlock()
		fs.writeCommit(c)
		fs.mu.Lock()
	}
}

// waitInFlightLocked waits, with FS.mu released, for the commit or
// checkpoint being written, if there is one, and says whether it waited
// (the caller then looks again: anything may have changed meanwhile).
// Preconditions: fs.mu is held and fs.jnl is not nil; it is held again
// on return.
func (fs *FS) waitInFlightLocked() bool {
	var ready chan struct{}
	switch j := fs.jnl; {
	case j.inflight != nil:
		ready = j.inflight.ready
	case j.ckptIO != nil:
		ready = j.ckptIO.ready
	default:
		return false
	}
	fs.mu.Unlock()
	<-ready
	fs.mu.Lock()
	return true
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
	return true, fs.commitAsync()
}

// flush makes every write completed so far durable.
func (fs *FS) flush() error {
	w := fs.written.Load()
	if err := fs.dev.Flush(); err != nil {
		return fmt.Errorf("ext4: flush: %w", errors.Join(linux.EIO, err))
	}
	for {
		d := fs.durable.Load()
		if d >= w || fs.durable.CompareAndSwap(d, w) {
			return nil
		}
	}
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
	if err != nil {
		fs.stop(err)
	}
	return err
}

// stop makes the mount read-only after a failed commit.
func (fs *FS) stop(err error) {
	if !fs.ro {
		fs.ro, fs.roWhy = true, "journal commit failed: "+err.Error()
		if fs.jnl != nil {
			fs.stoppedCkpt = fs.jnl.ckpt
		}
		fs.jnl = nil
		fs.stopped = true
	}
}

// reapLocked finishes the bookkeeping of a commit or checkpoint whose
// writes are done.
// Preconditions: fs.mu is held.
func (fs *FS) reapLocked() error {
	j := fs.jnl
	if j == nil {
		return nil
	}
	if j.ckptIO != nil {
		return fs.reapCheckpointLocked()
	}
	if j.inflight == nil {
		return nil
	}
	c := j.inflight
	select {
	case <-c.ready:
	default:
		return nil
	}
	j.inflight = nil
	fs.dataErr = errors.Join(fs.dataErr, c.dataErr)
	if c.err != nil {
		fs.stop(c.err)
		return c.err
	}
	j.done = c.seq + 1
	return nil
}

// commitLocked commits the running transaction with FS.mu held
// throughout: for commits in the middle of an operation (a transaction
// grown too big, blocks needed back) and for unmount.
func (fs *FS) commitLocked() error {
	j := fs.jnl
	if j == nil {
		return nil
	}
	if c := j.inflight; c != nil {
		<-c.ready // its writer does not need FS.mu
		if err := fs.reapLocked(); err != nil {
			return err
		}
	}
	if k := j.ckptIO; k != nil {
		<-k.ready // nor does a checkpoint's
		if err := fs.reapLocked(); err != nil {
			return err
		}
	}
	if len(j.order) == 0 {
		return nil
	}
	c, err := fs.closeLocked()
	if err != nil {
		return err
	}
	j.inflight = c
	fs.writeCommit(c)
	return fs.reapLocked()
}

// writeCommit writes a closed transaction: the dirty pages of the files
// written in it, the log, a flush that makes them durable, the commit
// block, a flush. It needs no lock (a write-back takes only the file's
// dataMap lock, as the cache's own).
func (fs *FS) writeCommit(c *commitIO) {
	defer close(c.ready)
	for _, f := range c.data {
		// A failure is the next Sync's to report; the metadata
		// commits all the same, as after a failed background
		// write-back.
		c.dataErr = errors.Join(c.dataErr, f.Writeback())
	}
	for _, w := range c.writes {
		if c.err = fs.devWrite(w.data, w.blk); c.err != nil {
			return
		}
	}
	if c.err = fs.flush(); c.err != nil {
		return
	}
	if c.err = fs.devWrite(c.commit.data, c.commit.blk); c.err != nil {
		return
	}
	if c.err = fs.flush(); c.err == nil && fs.discardFreed {
		// The transaction that freed them is durable, and the blocks
		// stay out of the allocator's reach until c is reaped.
		fs.discardBitmaps(c.freed)
	}
}

// closeLocked closes the running transaction: it checkpoints first if
// the log has no room for it, and returns what it writes to the log;
// the next transaction starts running. Its blocks count as committed
// from here for the cache and the checkpoint (no checkpoint can run
// before its writes are done).
// Preconditions: fs.mu is held, no commit in flight, and the running
// transaction holds something.
func (fs *FS) closeLocked() (*commitIO, error) {
	if e := fs.metaErr.Load(); e != nil {
		err := fmt.Errorf("ext4: stopped after an error: %w", *e)
		fs.stop(err)
		return nil, err
	}
	j := fs.jnl
	jsb := j.r.jsb
	bs := int(fs.blockSize)
	if fs.sb.incompat&incompatRecover == 0 {
		// Mount sets it, flushed, before the first commit: Linux
		// wipes a log its superblock does not ask to replay.
		return nil, errors.New("ext4: commit without needs_recovery set")
	}
	if b, ok := j.blocks[uint64(superOffset/fs.blockSize)]; ok {
		// A logged superblock (the orphan list's head changed) goes
		// with the free counts as this transaction leaves them.
		fs.encodeSuper()
		copy(b[superOffset%fs.blockSize:], fs.sb.raw)
	}
	tagSize := jsb.tagSize()
	limit := bs
	if jsb.csumV23() {
		limit -= jbdTailSize
	}
	need := fs.logNeed()
	if fs.needCheckpoint() {
		if err := fs.checkpoint(); err != nil { // 1
			return nil, err
		}
	}
	seq := j.seq
	header := func(b []byte, kind uint32) {
		be.PutUint32(b[0:], jbdMagic)
		be.PutUint32(b[4:], kind)
		be.PutUint32(b[8:], seq)
	}
	// The blocks as logged: copies, which the checkpoint writes home
	// (the cache's buffers may change again before it). A block
	// starting with the journal's magic number has it zeroed in the log
	// and its tag flagged.
	snap := make(map[uint64][]byte, len(j.order))
	log := make([]byte, 0, int(need)*bs)
	for i := 0; i < len(j.order); {
		desc := make([]byte, bs)
		header(desc, jbdDescriptor)
		off := jbdHeaderSize
		lastFlags := 0
		var batch [][]byte // the blocks as logged
		for ; i < len(j.order); i++ {
			need := tagSize
			if len(batch) == 0 {
				need += 16 // the first tag carries the UUID
			}
			if off+need > limit {
				break
			}
			n := j.order[i]
			data := append([]byte(nil), j.blocks[n]...)
			snap[n] = data
			logged := data
			var flags uint32
			if len(batch) > 0 {
				flags |= tagSameUUID
			}
			if be.Uint32(data) == jbdMagic {
				flags |= tagEscape
				logged = append([]byte(nil), data...)
				be.PutUint32(logged, 0)
			}
			be.PutUint32(desc[off:], uint32(n))
			if jsb.incompat&jbdIncompat64bit != 0 {
				be.PutUint32(desc[off+8:], uint32(n>>32))
			} else if n >= 1<<32 {
				return nil, corrupt("block %d does not fit a 32-bit journal", n)
			}
			if jsb.incompat&jbdIncompatCsumV3 != 0 {
				be.PutUint32(desc[off+4:], flags)
				be.PutUint32(desc[off+12:], jsb.dataCsum(seq, logged))
			} else {
				if jsb.incompat&jbdIncompatCsumV2 != 0 {
					be.PutUint16(desc[off+4:], uint16(jsb.dataCsum(seq, logged)))
				}
				be.PutUint16(desc[off+6:], uint16(flags))
			}
			lastFlags = off
			off += tagSize
			if len(batch) == 0 {
				copy(desc[off:], jsb.uuid[:])
				off += 16
			}
			batch = append(batch, logged)
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
		log = append(log, desc...)
		for _, b := range batch {
			log = append(log, b...)
		}
	}
	commit := make([]byte, bs)
	header(commit, jbdCommit)
	now := fs.now()
	be.PutUint64(commit[0x30:], uint64(now.Sec))
	be.PutUint32(commit[0x38:], uint32(now.Nsec))
	if jsb.csumV23() {
		// The type and size bytes stay zero: they describe checksum
		// v1's sum of the whole transaction, which v2 and v3 replace
		// with this one of the commit block (jbd2 writes them zero).
		c := crc32c(jsb.csumSeed, commit[:16])
		c = crc32c(c, []byte{0, 0, 0, 0})
		be.PutUint32(commit[16:], crc32c(c, commit[20:]))
	}
	// 2: the log. Into an empty log, the journal superblock first
	// points at it (jbd2 does the same at the first commit after a
	// checkpoint): until the commit block is durable, a replay from
	// there finds this transaction incomplete and does nothing.
	c := &commitIO{seq: seq, freed: j.freed, ready: make(chan struct{}), data: fs.takeOrdered()}
	if jsb.start == 0 {
		c.writes = append(c.writes, physWrite{j.jsbPhys, fs.journalSuperImage(j.head, seq)})
	}
	runs, err := fs.logRuns(j.head, log)
	if err != nil {
		return nil, err
	}
	c.writes = append(c.writes, runs...)
	runs, err = fs.logRuns(j.head+need-1, commit)
	if err != nil {
		return nil, err
	}
	c.commit = runs[0]
	// The blocks of the transaction wait in the log for the
	// checkpoint. The blocks it freed stay out of the allocator's reach
	// until it is durable (c.freed), and after that until the
	// checkpoint if the log holds an older copy of them (a replay would
	// write that copy over whatever they came to hold).
	j.head += need
	j.seq++
	for n, b := range snap {
		j.ckpt[n] = b
	}
	for n := range j.ckpt {
		g := uint32((n - uint64(fs.sb.firstDataBlock)) / uint64(fs.sb.blocksPerGroup))
		i := uint32(n - fs.groupFirstBlock(g))
		if bm := j.freed[g]; bm == nil || !testBit(bm, i) {
			continue
		}
		if j.held == nil {
			j.held = map[uint32][]byte{}
		}
		if j.held[g] == nil {
			j.held[g] = make([]byte, fs.blockSize)
		}
		setBit(j.held[g], i)
	}
	j.blocks = map[uint64][]byte{}
	j.order = nil
	j.freed = nil
	return c, nil
}

// logNeed returns the log blocks the running transaction takes: its
// blocks, their descriptors and the commit block (the first
// descriptor's first tag carries the UUID).
// Preconditions: fs.mu is held and fs.jnl is not nil.
func (fs *FS) logNeed() uint32 {
	j := fs.jnl
	limit := int(fs.blockSize)
	if j.r.jsb.csumV23() {
		limit -= jbdTailSize
	}
	perDesc := (limit - jbdHeaderSize - 16) / j.r.jsb.tagSize()
	return uint32(len(j.order) + (len(j.order)+perDesc-1)/perDesc + 1)
}

// logRuns maps b, whole blocks for the log from journal block pos, to
// device writes: one per extent of the journal it crosses.
func (fs *FS) logRuns(pos uint32, b []byte) ([]physWrite, error) {
	j := fs.jnl
	bs := int(fs.blockSize)
	var out []physWrite
	for len(b) > 0 {
		want := uint32(len(b) / bs)
		if pos+want > j.r.jsb.maxLen {
			return nil, corrupt("journal write of %d blocks at %d past its end", want, pos)
		}
		p, n, _, err := j.r.fm.lookup(pos, want)
		if err != nil {
			return nil, err
		}
		if p == 0 || n == 0 {
			return nil, corrupt("journal block %d is a hole", pos)
		}
		n = min(n, want)
		out = append(out, physWrite{p, b[:int(n)*bs]})
		b = b[int(n)*bs:]
		pos += n
	}
	return out, nil
}

// journalSuperImage returns the journal superblock, as the log will
// stand once it is written, pointing at start (0: empty) with the first
// transaction seq.
func (fs *FS) journalSuperImage(start, seq uint32) []byte {
	jsb := fs.jnl.r.jsb
	jsb.start, jsb.sequence = start, seq
	be.PutUint32(jsb.raw[0x18:], seq)
	be.PutUint32(jsb.raw[0x1C:], start)
	if jsb.csumV23() {
		be.PutUint32(jsb.raw[0xFC:], journalSuperCsum(jsb.raw))
	}
	return append([]byte(nil), jsb.raw...)
}
