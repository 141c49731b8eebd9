package ext4

import "slices"

// The checkpoint: when the log has no room for the next transaction,
// every block the committed transactions logged is written home, the
// home writes are flushed before the journal superblock stops pointing
// at the log, and that is flushed before new transactions overwrite it
// (a replay must never read a log partly overwritten).
//
// A commit that finds the log full (commitAsync: fsync, the periodic
// commit) runs the checkpoint with FS.mu released, as it writes the log:
// operations go on meanwhile, into the running transaction, and no
// transaction closes until the checkpoint is done (the log is full).
// Until then the log's copies are what the cache reads in place of the
// stale home copies (checkpointed), and the blocks freed by logged
// transactions stay out of the allocator's reach (journal.held). Other
// checkpoints (a commit in the middle of an operation, the allocator
// wanting held blocks back, unmount) run under FS.mu throughout.

// ckptIO is a checkpoint on its way to the disk: everything it writes,
// taken while FS.mu was held, so that the writes and flushes need no
// lock of the file system. The committed copies it writes are never
// changed once logged (closeLocked makes them), so it shares them.
type ckptIO struct {
	homes []physWrite // the committed blocks, home, runs of neighbours in one write
	jsb   physWrite   // the journal superblock pointing at an empty log
	ready chan struct{}
	err   error
}

// needCheckpoint reports whether the running transaction does not fit
// in the log after the transactions already in it.
// Preconditions: fs.mu is held and fs.jnl is not nil.
func (fs *FS) needCheckpoint() bool {
	j := fs.jnl
	return j.head+fs.logNeed() > j.r.jsb.maxLen || len(j.ckpt)+len(j.order) > maxCheckpoint
}

// startCheckpoint returns the writes of a checkpoint of the log and
// makes it the one in flight; reapLocked finishes it.
// Preconditions: fs.mu is held, fs.jnl is not nil, and no commit or
// checkpoint is in flight.
func (fs *FS) startCheckpoint() *ckptIO {
	j := fs.jnl
	homes := make([]uint64, 0, len(j.ckpt))
	for n := range j.ckpt {
		homes = append(homes, n)
	}
	slices.Sort(homes)
	bs := int(fs.blockSize)
	k := &ckptIO{ready: make(chan struct{})}
	for i := 0; i < len(homes); {
		// Neighbouring blocks in one write.
		e := i + 1
		for e < len(homes) && homes[e] == homes[e-1]+1 && e-i < 64 {
			e++
		}
		run := j.ckpt[homes[i]]
		if e-i > 1 {
			run = make([]byte, 0, (e-i)*bs)
			for _, n := range homes[i:e] {
				run = append(run, j.ckpt[n]...)
			}
		}
		k.homes = append(k.homes, physWrite{homes[i], run})
		i = e
	}
	k.jsb = physWrite{j.jsbPhys, fs.journalSuperImage(0, j.seq)}
	j.ckptIO = k
	return k
}

// writeCheckpoint writes a checkpoint's blocks home, flushes, points
// the journal superblock at an empty log and flushes. It needs no lock.
func (fs *FS) writeCheckpoint(k *ckptIO) {
	defer close(k.ready)
	for _, w := range k.homes {
		if k.err = fs.devWrite(w.data, w.blk); k.err != nil {
			return
		}
	}
	if k.err = fs.flush(); k.err != nil {
		return
	}
	if k.err = fs.devWrite(k.jsb.data, k.jsb.blk); k.err != nil {
		return
	}
	k.err = fs.flush()
}

// reapCheckpointLocked empties the log once the checkpoint in flight is
// done; a failed one stops the journal (stop).
// Preconditions: fs.mu is held and fs.jnl is not nil.
func (fs *FS) reapCheckpointLocked() error {
	j := fs.jnl
	k := j.ckptIO
	if k == nil {
		return nil
	}
	select {
	case <-k.ready:
	default:
		return nil
	}
	j.ckptIO = nil
	if k.err != nil {
		fs.stop(k.err)
		return k.err
	}
	j.ckpt = map[uint64][]byte{}
	j.held = nil
	j.head = j.r.jsb.first
	return nil
}

// checkpoint checkpoints with FS.mu held throughout, after the commit
// or checkpoint in flight, if any.
// Preconditions: fs.mu is held.
func (fs *FS) checkpoint() error {
	if j := fs.jnl; j != nil && j.inflight != nil {
		<-j.inflight.ready // its writer does not need FS.mu
		if err := fs.reapLocked(); err != nil {
			return err
		}
	}
	if j := fs.jnl; j != nil && j.ckptIO != nil {
		<-j.ckptIO.ready
		if err := fs.reapLocked(); err != nil {
			return err
		}
	}
	j := fs.jnl
	if j == nil || j.r.jsb.start == 0 && len(j.ckpt) == 0 {
		return nil
	}
	fs.writeCheckpoint(fs.startCheckpoint())
	return fs.reapLocked()
}

// checkpointed returns the committed copy of block n that waits in the
// log for the checkpoint (its home copy is stale), or nil.
func (fs *FS) checkpointed(n uint64) []byte {
	if fs.jnl == nil {
		return fs.stoppedCkpt[n] // nil unless stopped
	}
	return fs.jnl.ckpt[n]
}

// Checkpoint writes home every block the committed transactions logged
// and empties the log: what sync(2) and syncfs add to a commit (Sync).
// Linux gets there by writing the block device's dirty buffers back at
// sync, which are these same metadata blocks; here they are the log's
// committed copies, held in memory (the Go heap, up to maxCheckpoint
// blocks) until a checkpoint, so a sync is also when that memory comes
// back. fsync does not checkpoint: it needs the log, not the home
// copies. The writes run with FS.mu released, as a commit's checkpoint
// does; transactions meanwhile wait to close until it is done.
func (fs *FS) Checkpoint() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	started := false
	for {
		if err := fs.reapLocked(); err != nil {
			return err
		}
		j := fs.jnl
		if fs.ro || j == nil {
			return nil
		}
		if fs.waitInFlightLocked() {
			continue
		}
		// What was committed before the call is home once one
		// checkpoint started after that has been reaped.
		if started || len(j.ckpt) == 0 {
			return nil
		}
		k := fs.startCheckpoint()
		started = true
		fs.mu.Unlock()
		fs.writeCheckpoint(k)
		fs.mu.Lock()
	}
}

// DropClean drops the cached metadata blocks whose home copies are
// current (drop_caches: Linux's drops the block device's clean buffers,
// these same blocks) and returns how many. Blocks in the running
// transaction stay, and so do the log's committed copies (a Checkpoint,
// at sync, writes those home and drops them).
func (fs *FS) DropClean() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.cache.dropClean(fs)
}
