package ext4

import (
	"errors"
	"fmt"

	"shortbread/kernel/abi/linux"
)

// Journal recovery, in jbd2's three passes over the log: find the last
// transaction whose commit block is intact, collect the revoke records
// of the transactions up to it, then write every logged block home
// unless a revoke in its transaction or a later one cancels it.
// Recovery writes to the device even on a read-only mount, as Linux
// does: the file system is not consistent without it.

// tag is one descriptor entry: a logged block's home and flags.
type tag struct {
	home  uint64
	flags uint32
	csum  uint32
}

// journalReader reads journal blocks through the journal inode's map.
type journalReader struct {
	fs  *FS
	fm  *fileMapping
	jsb *journalSuper
}

func (r *journalReader) read(n uint32) ([]byte, uint64, error) {
	if n >= r.jsb.maxLen {
		return nil, 0, corrupt("journal block %d past its end %d", n, r.jsb.maxLen)
	}
	p, _, _, err := r.fm.lookup(n, 1)
	if err != nil {
		return nil, 0, err
	}
	if p == 0 {
		return nil, 0, corrupt("journal block %d is a hole", n)
	}
	b := make([]byte, r.fs.blockSize)
	return b, p, r.fs.readRaw(b, p)
}

// next steps to the following log block, wrapping at the end.
func (r *journalReader) next(n uint32) uint32 {
	n++
	if n >= r.jsb.maxLen {
		n = r.jsb.first
	}
	return n
}

func (r *journalReader) tags(b []byte) []tag {
	j := r.jsb
	limit := len(b)
	if j.csumV23() {
		limit -= jbdTailSize
	}
	var out []tag
	size := j.tagSize()
	for off := jbdHeaderSize; off+size <= limit; {
		t := tag{home: uint64(be.Uint32(b[off:]))}
		if j.incompat&jbdIncompatCsumV3 != 0 {
			t.flags = be.Uint32(b[off+4:])
			t.csum = be.Uint32(b[off+12:])
		} else {
			t.csum = uint32(be.Uint16(b[off+4:]))
			t.flags = uint32(be.Uint16(b[off+6:]))
		}
		if j.incompat&jbdIncompat64bit != 0 {
			t.home |= uint64(be.Uint32(b[off+8:])) << 32
		}
		out = append(out, t)
		off += size
		if t.flags&tagSameUUID == 0 {
			off += 16
		}
		if t.flags&tagLast != 0 {
			break
		}
	}
	return out
}

// recoverJournal replays the journal if the superblock says it needs it.
func (fs *FS) recoverJournal() error {
	if fs.sb.incompat&incompatRecover == 0 {
		return nil
	}
	if fs.sb.compat&compatHasJournal == 0 || fs.sb.journalInum == 0 {
		return corrupt("needs_recovery without a journal inode")
	}
	r, jsbBlock, err := fs.readJournal()
	if err != nil {
		return err
	}
	jsb := r.jsb
	if bad := jsb.incompat &^ jbdIncompatKnown; bad != 0 {
		return fmt.Errorf("%w: journal features %#x (fast_commit is %#x)", ErrUnsupported, bad, jbdIncompatFastCommit)
	}
	end := jsb.sequence
	var replayErr error
	if jsb.start != 0 {
		if end, err = r.scan(); err != nil {
			return err
		}
		revoked, err := r.revokes(end)
		if err != nil {
			return err
		}
		if replayErr, err = r.replay(end, revoked); err != nil {
			return err
		}
		if err := fs.dev.Flush(); err != nil {
			return errors.Join(linux.EIO, err)
		}
	}
	// The log is empty now: the next transaction is end.
	be.PutUint32(jsb.raw[0x18:], end)
	be.PutUint32(jsb.raw[0x1C:], 0)
	if jsb.csumV23() {
		be.PutUint32(jsb.raw[0xFC:], journalSuperCsum(jsb.raw))
	}
	if _, err := fs.dev.WriteAt(jsb.raw, int64(jsbBlock)*int64(fs.blockSize)); err != nil {
		return errors.Join(linux.EIO, err)
	}
	if err := fs.dev.Flush(); err != nil {
		return errors.Join(linux.EIO, err)
	}
	// Replay may have rewritten the superblock itself: read it again.
	// It still says needs_recovery: a read-write mount keeps that, and
	// Mount clears it for a read-only one.
	if err := fs.readSuper(); err != nil {
		return err
	}
	return replayErr
}

// readJournal opens the journal inode for reading and decodes its
// superblock, returning a reader and the superblock's device block.
func (fs *FS) readJournal() (*journalReader, uint64, error) {
	jin, err := fs.iget(fs.sb.journalInum)
	if err != nil {
		return nil, 0, err
	}
	fm, err := fs.mapping(jin)
	if err != nil {
		return nil, 0, err
	}
	r := &journalReader{fs: fs, fm: fm, jsb: &journalSuper{maxLen: ^uint32(0)}}
	b, phys, err := r.read(0)
	if err != nil {
		return nil, 0, err
	}
	jsb, err := decodeJournalSuper(b, fs.blockSize)
	if err != nil {
		return nil, 0, err
	}
	if uint64(jsb.maxLen)*uint64(fs.blockSize) > jin.size {
		return nil, 0, corrupt("journal of %d blocks in an inode of %d bytes", jsb.maxLen, jin.size)
	}
	r.jsb = jsb
	return r, phys, nil
}

// repairSuper answers a superblock that fails only its checksum, csumErr.
// A write home torn at a sector leaves one sector old and one new; the
// fields that place things (geometry, the journal inode, the UUID the
// other checksums hang on) are the same in both. When the torn write was
// the checkpoint of a logged copy (the orphan list's head changed), the
// log still holds the whole block: it is emptied only once the
// checkpoint is flushed. So if needs_recovery is set and a committed
// transaction in the log holds the superblock's block, unrevoked,
// recovery runs and rewrites it, and the superblock read again must pass
// its checksum. Otherwise the mount is refused with csumErr, and nothing
// was written on the unverified superblock's word. (Linux refuses such
// a superblock outright; e2fsck falls back to a backup.)
func (fs *FS) repairSuper(csumErr error) error {
	if fs.sb.incompat&incompatRecover == 0 || fs.sb.compat&compatHasJournal == 0 || fs.sb.journalInum == 0 {
		return csumErr
	}
	fs.cache.init(fs.blockSize)
	if err := fs.readGroups(); err != nil {
		return errors.Join(csumErr, err)
	}
	r, _, err := fs.readJournal()
	if err != nil {
		return errors.Join(csumErr, err)
	}
	if r.jsb.start == 0 || r.jsb.incompat&^jbdIncompatKnown != 0 {
		return csumErr
	}
	end, err := r.scan()
	if err != nil {
		return errors.Join(csumErr, err)
	}
	revoked, err := r.revokes(end)
	if err != nil {
		return errors.Join(csumErr, err)
	}
	home := uint64(superOffset / fs.blockSize)
	logged := false
	err = r.walk(end, func(seq uint32, b []byte, blk uint32) (uint32, error) {
		if be.Uint32(b[4:]) != jbdDescriptor {
			return blk, nil
		}
		for _, t := range r.tags(b) {
			blk = r.next(blk)
			if s, ok := revoked[t.home]; t.home == home && (!ok || int32(s-seq) < 0) {
				logged = true
			}
		}
		return blk, nil
	})
	if err != nil {
		return errors.Join(csumErr, err)
	}
	if !logged {
		return csumErr
	}
	return fs.recoverJournal()
}

// scan walks the log from its start and returns the sequence number
// after the last transaction with a valid commit block.
//
// A descriptor or revoke block failing its checksum is not yet an error:
// a power cut may have torn it (its header landed, not its tail) in a
// transaction whose commit block was never written, or it is a stale
// block of an earlier use of the log. Its transaction decides, as in
// jbd2: no valid commit block after it, or one older than the commit
// before it, ends the log there; a valid, newer commit block means the
// transaction did commit and the log is corrupt.
func (r *journalReader) scan() (uint32, error) {
	j := r.jsb
	blk, seq := j.start, j.sequence
	bad := int64(-1) // a block of this transaction failing its checksum
	var lastTime uint64
	for steps := uint32(0); steps < j.maxLen; steps++ {
		b, _, err := r.read(blk)
		if err != nil {
			return 0, err
		}
		if be.Uint32(b) != jbdMagic || be.Uint32(b[8:]) != seq {
			break
		}
		switch be.Uint32(b[4:]) {
		case jbdDescriptor:
			if !j.blockTailOK(b) && bad < 0 {
				bad = int64(blk)
			}
			for range r.tags(b) {
				blk = r.next(blk)
			}
		case jbdCommit:
			t := be.Uint64(b[0x30:])
			if bad >= 0 {
				if t >= lastTime && j.commitOK(b) {
					return 0, corrupt("journal block %d of committed transaction %d fails its checksum", bad, seq)
				}
				return seq, nil
			}
			if !j.commitOK(b) {
				// A torn commit: the transaction never committed.
				return seq, nil
			}
			lastTime = t
			seq++
		case jbdRevoke:
			if !j.blockTailOK(b) && bad < 0 {
				bad = int64(blk)
			}
		default:
			return seq, nil
		}
		blk = r.next(blk)
	}
	return seq, nil
}

// revokes returns, for each revoked block, the latest transaction (before
// end) that revoked it.
func (r *journalReader) revokes(end uint32) (map[uint64]uint32, error) {
	j := r.jsb
	revoked := map[uint64]uint32{}
	err := r.walk(end, func(seq uint32, b []byte, blk uint32) (uint32, error) {
		switch be.Uint32(b[4:]) {
		case jbdDescriptor:
			for range r.tags(b) {
				blk = r.next(blk)
			}
		case jbdRevoke:
			if !j.blockTailOK(b) {
				return 0, corrupt("journal revoke block %d checksum", blk)
			}
			count := int(be.Uint32(b[12:]))
			size := 4
			if j.incompat&jbdIncompat64bit != 0 {
				size = 8
			}
			limit := len(b)
			if j.csumV23() {
				limit -= jbdTailSize
			}
			if count > limit || count < 16 {
				return 0, corrupt("journal revoke block %d holds %d bytes", blk, count)
			}
			for off := 16; off+size <= count; off += size {
				var home uint64
				if size == 8 {
					home = be.Uint64(b[off:])
				} else {
					home = uint64(be.Uint32(b[off:]))
				}
				if s, ok := revoked[home]; !ok || int32(seq-s) > 0 {
					revoked[home] = seq
				}
			}
		}
		return blk, nil
	})
	return revoked, err
}

// replay writes home every logged block of the transactions before end
// that no revoke cancels. A logged block failing its checksum is skipped
// and reported after the rest is written, as Linux does.
func (r *journalReader) replay(end uint32, revoked map[uint64]uint32) (error, error) {
	fs, j := r.fs, r.jsb
	var bad error
	err := r.walk(end, func(seq uint32, b []byte, blk uint32) (uint32, error) {
		if be.Uint32(b[4:]) != jbdDescriptor {
			return blk, nil
		}
		for _, t := range r.tags(b) {
			blk = r.next(blk)
			data, _, err := r.read(blk)
			if err != nil {
				return 0, err
			}
			if s, ok := revoked[t.home]; ok && int32(s-seq) >= 0 {
				continue
			}
			// The checksum covers the block as logged, still escaped.
			if j.incompat&jbdIncompatCsumV3 != 0 && j.dataCsum(seq, data) != t.csum ||
				j.incompat&jbdIncompatCsumV2 != 0 && j.dataCsum(seq, data)&0xFFFF != t.csum {
				bad = corrupt("journal block %d (for block %d, transaction %d) fails its checksum", blk, t.home, seq)
				continue
			}
			if t.flags&tagEscape != 0 {
				be.PutUint32(data, jbdMagic)
			}
			if t.home >= fs.sb.blocksCount {
				return 0, corrupt("journal logs block %d, past the end", t.home)
			}
			if _, err := fs.dev.WriteAt(data, int64(t.home)*int64(fs.blockSize)); err != nil {
				return 0, errors.Join(linux.EIO, err)
			}
			fs.cache.forget(fs, t.home)
		}
		return blk, nil
	})
	return bad, err
}

// walk calls f with each block that starts a log record (descriptor,
// commit, revoke) of the transactions before end; f returns the last
// block it consumed.
func (r *journalReader) walk(end uint32, f func(seq uint32, b []byte, blk uint32) (uint32, error)) error {
	j := r.jsb
	blk, seq := j.start, j.sequence
	for steps := uint32(0); steps < j.maxLen && seq != end; steps++ {
		b, _, err := r.read(blk)
		if err != nil {
			return err
		}
		if be.Uint32(b) != jbdMagic || be.Uint32(b[8:]) != seq {
			return corrupt("journal block %d changed between passes", blk)
		}
		if be.Uint32(b[4:]) == jbdCommit {
			seq++
		} else if blk, err = f(seq, b, blk); err != nil {
			return err
		}
		blk = r.next(blk)
	}
	return nil
}
