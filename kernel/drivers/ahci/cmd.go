package ahci

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"shortbread/kernel/blk"
)

// ReadAt reads whole sectors at off.
func (k *Disk) ReadAt(p []byte, off int64) (int, error) { return k.rw(p, off, false) }

// WriteAt writes whole sectors at off.
func (k *Disk) WriteAt(p []byte, off int64) (int, error) { return k.rw(p, off, true) }

// Flush makes the disk write its volatile cache out (FLUSH CACHE EXT).
func (k *Disk) Flush() error {
	if !k.flush {
		return nil // no FLUSH CACHE EXT: nothing the disk lets us ask
	}
	return k.retry(ataFlushExt, 0, nil, false, false)
}

// CanDiscard reports whether the disk takes TRIM (IDENTIFY word 169).
func (k *Disk) CanDiscard() bool { return k.trimBlocks > 0 }

// DiscardZeroes reports whether IDENTIFY promises that trimmed sectors
// read as zeros (word 69: deterministic read after TRIM, and zeros).
// QEMU promises determinism only. Nothing here relies on either: as on
// Linux, discarded data is gone, not zeroed.
func (k *Disk) DiscardZeroes() bool { return k.drat && k.rzat }

// Discard trims the n bytes at off (whole sectors): DATA SET MANAGEMENT
// commands with the TRIM bit, non-queued (QEMU has no SEND FPDMA
// QUEUED), each carrying up to trimBlocks 512-byte blocks of LBA range
// entries of at most 65,535 sectors; unused entries are zero, which the
// disk skips.
func (k *Disk) Discard(off, n int64) error {
	if k.trimBlocks == 0 {
		return blk.ErrNoDiscard
	}
	if err := blk.CheckRange(k, off, n); err != nil {
		return err
	}
	lba, left := uint64(off)/uint64(k.ss), uint64(n)/uint64(k.ss)
	for left > 0 {
		first := lba
		payload := trimPayload(&lba, &left, k.trimBlocks)
		if err := k.retry(ataDSM, first, payload, true, false); err != nil {
			return err
		}
	}
	return nil
}

// trimPayload lays out the range entries of one command for the sectors
// at *lba (*left of them) in at most blocks 512-byte blocks, and
// advances both. The payload is a whole number of blocks.
func trimPayload(lba, left *uint64, blocks int) []byte {
	per := 512 / trimEntry
	entries := min(int((*left+trimMaxCount-1)/trimMaxCount), blocks*per)
	p := make([]byte, (entries+per-1)/per*512)
	for i := 0; i < entries; i++ {
		c := min(*left, trimMaxCount)
		binary.LittleEndian.PutUint64(p[i*trimEntry:], *lba|c<<48)
		*lba, *left = *lba+c, *left-c
	}
	return p
}

// rw splits a transfer into commands of one slot's data each, as many in
// flight as the queue takes. On failure it reports the bytes before the
// first failed command.
func (k *Disk) rw(p []byte, off int64, write bool) (int, error) {
	if err := blk.Check(k, len(p), off); err != nil {
		return 0, err
	}
	per := dataPages * PageSize
	n := (len(p) + per - 1) / per
	if n == 1 { // the common case, without the bookkeeping below
		if err := k.transfer(p, uint64(off)/uint64(k.ss), write); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	errs := make([]error, n)
	chunk := func(i int) {
		lba := uint64(off)/uint64(k.ss) + uint64(i*per/k.ss)
		errs[i] = k.transfer(p[i*per:min(len(p), (i+1)*per)], lba, write)
	}
	if n <= 1 || !k.ncq {
		for i := range errs {
			if chunk(i); errs[i] != nil {
				return i * per, errs[i]
			}
		}
		return len(p), nil
	}
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i * per, err
		}
	}
	return len(p), nil
}

// transfer moves p at lba, queued when the disk takes NCQ; a queued
// command caught in another's error goes again alone, so only a command
// that fails by itself reports an error.
func (k *Disk) transfer(p []byte, lba uint64, write bool) error {
	var op uint8
	switch {
	case k.ncq && write:
		op = ataWriteFPDMA
	case k.ncq:
		op = ataReadFPDMA
	case write:
		op = ataWriteDMAExt
	default:
		op = ataReadDMAExt
	}
	return k.retry(op, lba, p, write, k.ncq)
}

// maxTries bounds the times one request is issued when port restarts
// for other commands' errors keep aborting it.
const maxTries = 4

// retry runs a command until it completes, fails by itself or has been
// aborted maxTries times; a queued command goes again unqueued (as
// DMA EXT), so that a failing one is found alone.
func (k *Disk) retry(op uint8, lba uint64, p []byte, write, queued bool) error {
	for try := 1; ; try++ {
		r := k.command(op, lba, p, write, queued)
		if r.retry && try < maxTries {
			if queued {
				queued, op = false, ataReadDMAExt
				if write {
					op = ataWriteDMAExt
				}
			}
			continue
		}
		if r.retry {
			r.err = fmt.Errorf("%w: aborted by %d port restarts", blk.ErrIO, try)
		}
		if r.err != nil {
			return k.fail(lba, r.err)
		}
		return nil
	}
}

func (k *Disk) fail(lba uint64, err error) error {
	k.log("ahci %s: sector %d: %v", k.name, lba, err)
	return fmt.Errorf("%s: sector %d: %w", k.name, lba, err)
}

// command runs one command in a free slot, admitted by the gate.
func (k *Disk) command(op uint8, lba uint64, p []byte, write, queued bool) result {
	if queued {
		k.gate.RLock()
		defer k.gate.RUnlock()
	} else {
		k.gate.Lock()
		defer k.gate.Unlock()
	}
	s := <-k.free
	defer func() { k.free <- s }()
	return k.exec(s, op, lba, p, write, queued)
}

// exec builds the command in slot s (its FIS, PRD table and header),
// issues it and waits for it: p nil moves no data.
func (k *Disk) exec(s *slot, op uint8, lba uint64, p []byte, write, queued bool) result {
	if len(p) > len(s.data)*PageSize {
		return result{err: fmt.Errorf("%w: %d bytes in one command", blk.ErrIO, len(p))}
	}
	t := s.table.Mem
	clear(t[:tablePRDT])
	fis := t[:20]
	fis[0], fis[1], fis[2] = fisH2D, 0x80, op
	if op != ataIdentify {
		fis[7] = deviceLBA
	}
	if op == ataDSM {
		// The LBA fields are reserved (lba is the first range's, for
		// the log); the count is of 512-byte payload blocks.
		fis[3] = dsmTRIM
		fis[12], fis[13] = byte(len(p)/512), byte(len(p)/512>>8)
	} else if op != ataIdentify && op != ataFlushExt {
		fis[4], fis[5], fis[6] = byte(lba), byte(lba>>8), byte(lba>>16)
		fis[8], fis[9], fis[10] = byte(lba>>24), byte(lba>>32), byte(lba>>40)
		count := len(p) / k.ss
		if queued {
			fis[3], fis[11] = byte(count), byte(count>>8) // FPDMA: the count is in FEATURES
			fis[12] = byte(s.num << 3)                    // and the tag in COUNT
		} else {
			fis[12], fis[13] = byte(count), byte(count>>8)
		}
	}
	prds := 0
	for i := 0; i*PageSize < len(p); i++ {
		chunk := p[i*PageSize : min(len(p), (i+1)*PageSize)]
		if write {
			copy(s.data[i].Mem, chunk)
		}
		e := t[tablePRDT+prdSize*i:]
		binary.LittleEndian.PutUint32(e[0:], uint32(s.data[i].Phys))
		binary.LittleEndian.PutUint32(e[4:], uint32(s.data[i].Phys>>32))
		binary.LittleEndian.PutUint32(e[8:], 0)
		binary.LittleEndian.PutUint32(e[12:], uint32(len(chunk)-1))
		prds++
	}
	h := k.mem.Mem[s.num*cmdHeaderSize : (s.num+1)*cmdHeaderSize]
	clear(h)
	dw0 := uint32(fisLen) | uint32(prds)<<16
	if write {
		dw0 |= hdrWrite
	}
	binary.LittleEndian.PutUint32(h[0:], dw0)
	binary.LittleEndian.PutUint32(h[8:], uint32(s.table.Phys))
	binary.LittleEndian.PutUint32(h[12:], uint32(s.table.Phys>>32))

	bit := uint32(1) << s.num
	k.mu.Lock()
	if k.dead {
		k.mu.Unlock()
		return result{err: fmt.Errorf("%w: port %d out of service", blk.ErrIO, k.port)}
	}
	select {
	case <-s.done: // a stale result cannot be left, but never trust it
	default:
	}
	s.bytes, s.queued, s.lba = uint32(len(p)), queued, lba
	if queued {
		k.write32(pxSACT, bit)
	}
	k.write32(pxCI, bit)
	k.issued |= bit
	if queued {
		k.queued |= bit
	}
	s.started = time.Now()
	k.watch.Start(s.started, k.Timeout)
	k.mu.Unlock()

	r := <-s.done
	if r.err == nil && !write {
		for i := 0; i*PageSize < len(p); i++ {
			copy(p[i*PageSize:min(len(p), (i+1)*PageSize)], s.data[i].Mem)
		}
	}
	return r
}

// busy reports commands outstanding.
func (k *Disk) busy() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.issued != 0
}

// pending reports an interrupt event the port has not had serviced.
func (k *Disk) pending() bool { return k.read32(pxIS)&isWanted != 0 }

// service is the port's share of an interrupt: clear its events, and
// complete what the HBA finished or recover from an error.
func (k *Disk) service() {
	k.mu.Lock()
	defer k.mu.Unlock()
	is := k.read32(pxIS)
	k.write32(pxIS, is)
	if is&isErrors != 0 {
		k.errorLocked(is)
		return
	}
	k.completeLocked()
}

// completeLocked hands each command the HBA has finished to its waiter:
// a non-queued one when its PxCI bit clears, a queued one when its
// PxSACT bit does. Bits for slots never issued are reported once and
// ignored.
// Preconditions: k.mu is held.
func (k *Disk) completeLocked() {
	ci, sact := k.read32(pxCI), k.read32(pxSACT)
	if odd := (ci | sact) &^ k.issued; odd != 0 && !k.oddBits {
		k.oddBits = true
		k.log("ahci %s: HBA reports slots %#x busy that were never issued (CI %#x SACT %#x); ignored", k.name, odd, ci, sact)
	}
	for b := k.issued; b != 0; b &= b - 1 {
		i := bits.TrailingZeros32(b)
		s, bit := k.slots[i], uint32(1)<<i
		if ci&bit != 0 || s.queued && sact&bit != 0 {
			continue
		}
		k.issued &^= bit
		k.queued &^= bit
		var r result
		if !s.queued {
			// The byte count and status of a non-queued command
			// (for queued ones the HBA need not keep either).
			n := binary.LittleEndian.Uint32(k.mem.Mem[i*cmdHeaderSize+4:])
			tfd := k.read32(pxTFD)
			switch {
			case tfd&(tfdERR|tfdBSY|tfdDRQ) != 0:
				r.err = fmt.Errorf("%w: completed with task file status %#x error %#x", blk.ErrIO, tfd&0xff, tfd>>8&0xff)
			case n != s.bytes:
				r.err = fmt.Errorf("%w: HBA moved %d bytes of %d", blk.ErrIO, n, s.bytes)
			}
		}
		s.done <- r
	}
}

// errorLocked recovers from an error interrupt (§6.2.2): commands
// finished before it complete; the port is stopped and restarted; a
// failed non-queued command reports the task file, and queued ones go
// again alone (the disk stopped them all, whichever failed). So does a
// non-queued one when the task file shows no error: QEMU raises the
// error event of a failed queued command once more, later, and halts
// the port for it all the same.
// Preconditions: k.mu is held.
func (k *Disk) errorLocked(is uint32) {
	k.completeLocked()
	tfd, serr := k.read32(pxTFD), k.read32(pxSERR)
	k.log("ahci %s: port %d error: interrupt status %#x, task file status %#x error %#x, SError %#x; restarting the port",
		k.name, k.port, is, tfd&0xff, tfd>>8&0xff, serr)
	ok := k.restartLocked(false)
	k.abortLocked(func(s *slot) result {
		if ok && (s.queued || tfd&tfdERR == 0) {
			return result{retry: true}
		}
		return result{err: fmt.Errorf("%w: task file status %#x error %#x (interrupt status %#x)", blk.ErrIO, tfd&0xff, tfd>>8&0xff, is)}
	})
}

// timeoutLocked gives up on slot s: the port is reset (COMRESET) and
// restarted; s fails with ErrTimeout, queued companions go again.
// Preconditions: k.mu is held.
func (k *Disk) timeoutLocked(s *slot) {
	k.log("ahci %s: command in slot %d (sector %d) not completed after %v (CI %#x SACT %#x task file %#x); resetting the port",
		k.name, s.num, s.lba, k.Timeout, k.read32(pxCI), k.read32(pxSACT), k.read32(pxTFD))
	ok := k.restartLocked(true)
	k.abortLocked(func(o *slot) result {
		switch {
		case o == s:
			return result{err: fmt.Errorf("%w after %v", blk.ErrTimeout, k.Timeout)}
		case o.queued && ok:
			return result{retry: true}
		}
		return result{err: fmt.Errorf("%w: aborted by a port reset", blk.ErrIO)}
	})
}

// expire is the watch's timer: the oldest issued command, if older than
// Timeout, times out (timeoutLocked: the port is reset and every command
// ended); else the timer is set again for its deadline.
func (k *Disk) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	var oldest *slot
	for b := k.issued; b != 0; b &= b - 1 {
		if s := k.slots[bits.TrailingZeros32(b)]; oldest == nil || s.started.Before(oldest.started) {
			oldest = s
		}
	}
	now := time.Now()
	if oldest != nil && !k.dead {
		left := k.Timeout - now.Sub(oldest.started)
		if left > 0 {
			k.watch.Next(now, left)
			return
		}
		k.timeoutLocked(oldest)
	}
	// Whatever is still issued after the reset has the whole timeout.
	left := time.Duration(0)
	if k.issued != 0 && !k.dead {
		left = k.Timeout
	}
	k.watch.Next(time.Now(), left)
}

// abortLocked ends every outstanding command with what why says.
// Preconditions: k.mu is held; the port is stopped or restarted, so the
// HBA has cleared PxCI and PxSACT.
func (k *Disk) abortLocked(why func(*slot) result) {
	for b := k.issued; b != 0; b &= b - 1 {
		s := k.slots[bits.TrailingZeros32(b)]
		s.done <- why(s)
	}
	k.issued, k.queued = 0, 0
}

// restartLocked stops the command engine (which clears PxCI and
// PxSACT), clears the errors, gets the device out of BSY/DRQ (command
// list override, else COMRESET; always COMRESET when reset) and starts
// the engine again. A port that will not stop is taken out of service.
// Preconditions: k.mu is held.
func (k *Disk) restartLocked(reset bool) bool {
	k.write32(pxCMD, k.read32(pxCMD)&^cmdST)
	if !k.c.poll(500*time.Millisecond, func() bool { return k.read32(pxCMD)&cmdCR == 0 }) {
		k.log("ahci %s: port %d does not stop; taken out of service", k.name, k.port)
		k.dead = true
		return false
	}
	k.write32(pxSERR, 0xffffffff)
	k.write32(pxIS, 0xffffffff)
	stuck := func() bool { return k.read32(pxTFD)&(tfdBSY|tfdDRQ) != 0 }
	if !reset && stuck() && k.c.cap&capSCLO != 0 {
		k.write32(pxCMD, k.read32(pxCMD)|cmdCLO)
		k.c.poll(500*time.Millisecond, func() bool { return k.read32(pxCMD)&cmdCLO == 0 })
	}
	if reset || stuck() {
		k.comreset()
		k.c.poll(time.Second, func() bool { return !stuck() })
	}
	k.write32(pxIS, 0xffffffff)
	k.write32(pxCMD, k.read32(pxCMD)|cmdST)
	return true
}

// failAll ends every outstanding command: the interrupt is gone, so
// nothing will complete them.
func (k *Disk) failAll(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dead = true
	k.abortLocked(func(*slot) result { return result{err: fmt.Errorf("%w: %v", blk.ErrIO, err)} })
}

// run runs one command and returns its error, for IDENTIFY at bring-up.
func (k *Disk) run(s *slot, op uint8, lba uint64, p []byte, write, queued bool) error {
	return k.exec(s, op, lba, p, write, queued).err
}
