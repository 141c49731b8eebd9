package pagecache

import (
	"errors"
	"slices"
)

// Reading, writing and writing back a file's pages.

// pageLen is how many bytes of page idx lie within the file (0 for a
// page wholly past the end: the file may have shrunk under a read-in).
func (f *File) pageLen(idx uint64) int {
	return int(max(min(int64(PageSize), f.size.Load()-int64(idx)*PageSize), 0))
}

// Read reads len(p) bytes at off. Reading at or past the end returns 0
// bytes; a range crossing the end is cut short there. A failed read
// returns the bytes read before it.
func (f *File) Read(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, ErrRange
	}
	size := f.size.Load()
	if off >= size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), size-off)]
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		idx := uint64(pos / PageSize)
		in := int(pos % PageSize)
		n, mark, hit := f.copyRun(p[done:], idx, in, size)
		done += n
		if mark != noPage {
			f.markerHit(mark)
		}
		if hit {
			continue
		}
		// A miss at page idx + n/PageSize (n ends on a page boundary).
		idx += uint64((in + n) / PageSize)
		if int64(idx)*PageSize >= f.size.Load() {
			return done, nil // cut short meanwhile (Resize)
		}
		want := (int64(len(p)-done) + int64((in+n)%PageSize) + PageSize - 1) / PageSize
		if err := f.readMiss(idx, int(min(want, maxRun))); err != nil {
			return done, err
		}
	}
	return done, nil
}

// copyRun copies into p the cached bytes from byte in of page idx on,
// page after page while the pages are cached and in one shard (so one
// lock covers the run; see groupShift), size being the file's size
// when the read began. It returns the bytes copied, a read-ahead marker
// it passed (or noPage) and whether it stopped for a reason other than
// a page not cached (p full, or the next page in another shard).
func (f *File) copyRun(p []byte, idx uint64, in int, size int64) (int, uint64, bool) {
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	mark := uint64(noPage)
	done := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		pg := s.waitLocked(k)
		if pg == nil {
			return done, mark, false
		}
		if pg.flags&pgReadahead != 0 {
			pg.flags &^= pgReadahead
			mark = k.index
		}
		pg.flags |= pgReferenced
		end := min(int64(PageSize), size-int64(k.index)*PageSize)
		done += copy(p[done:], f.c.frames.Page(pg.pa)[in:end])
		in = 0
		k.index++
		if done == len(p) || f.c.shardOf(k) != s {
			return done, mark, true
		}
	}
}

// waitLocked returns the page at k once it is not being read in, or nil.
// Preconditions: s.mu held; it may be dropped and retaken.
func (s *shard) waitLocked(k key) *page {
	for {
		pg := s.lookupLocked(k)
		if pg == nil || pg.flags&pgBusy == 0 {
			return pg
		}
		s.cond.Wait()
	}
}

// fill reads pages idx.. (up to n of them, stopping at the end of the
// file and at a page already cached) into the cache, flagging page mark
// (if among them) as the read-ahead marker. Only page idx matters to
// the caller: when a read of several pages fails, each is tried alone,
// and a read-ahead page that fails is left out.
func (f *File) fill(idx uint64, n int, mark uint64) error {
	var pas [maxRun]uintptr
	got, err := f.insertBusy(idx, n, mark, pas[:], true)
	if got == 0 {
		return err // nil: page idx appeared meanwhile, the caller looks again
	}
	bp := f.c.getBounce()
	defer f.c.putBounce(bp)
	buf := *bp
	end := min(int64(idx+uint64(got))*PageSize, f.size.Load())
	start := int64(idx) * PageSize
	if end <= start {
		// Cut short meanwhile: the pages are stale, dropped here.
		for i := range got {
			f.finishRead(idx+uint64(i), pas[i], nil, errShrunk)
		}
		return nil
	}
	_, err = f.b.ReadAt(buf[:end-start], start)
	if err == nil {
		for i := range got {
			f.finishRead(idx+uint64(i), pas[i], buf[i*PageSize:], nil)
		}
		return nil
	}
	var first error
	for i := range got {
		j := idx + uint64(i)
		b := buf[:f.pageLen(j)]
		var err error = errShrunk
		if len(b) > 0 {
			_, err = f.b.ReadAt(b, int64(j)*PageSize)
		}
		f.finishRead(j, pas[i], b, err)
		if i == 0 {
			first = err
		}
	}
	if first == errShrunk {
		first = nil
	}
	return first
}

// errShrunk drops a page read in past the file's end (Resize cut it).
var errShrunk = errors.New("pagecache: page past the end")

// insertBusy puts up to n pages from idx (stopping at the end of the
// file and at a page already cached) into the cache, busy (being read
// in), page mark flagged as the read-ahead marker, their frames in pas;
// it returns how many. Frames come from Cache.alloc when shrink is set,
// else only while the frame source has them free (read-ahead must not
// push other pages out). An error is returned only when none could be
// had.
func (f *File) insertBusy(idx uint64, n int, mark uint64, pas []uintptr, shrink bool) (int, error) {
	last := uint64((f.size.Load() + PageSize - 1) / PageSize)
	got := 0
	for i := idx; i < last && got < n; i++ {
		var pa uintptr
		var err error
		if shrink {
			pa, err = f.c.alloc()
		} else if pa = f.c.frames.Alloc(); pa == 0 {
			err = ErrNoMemory
		}
		if err != nil {
			if got == 0 {
				return 0, err
			}
			break
		}
		k := key{f.id, i}
		s := f.c.shardOf(k)
		s.mu.Lock()
		if s.lookupLocked(k) != nil {
			s.mu.Unlock()
			f.c.frames.Free(pa)
			break // someone else has it (or is reading it in)
		}
		flags := pgBusy | f.kindFlag()
		if i == mark {
			flags |= pgReadahead
		}
		s.insertLocked(k, pa, flags)
		f.c.pages[f.kind].Add(1)
		s.mu.Unlock()
		pas[got] = pa
		got++
	}
	return got, nil
}

// finishRead ends the read-in of page idx in frame pa: with src's bytes,
// or, when err is set, by dropping the page (a later read tries again).
// A read-ahead marker stays.
func (f *File) finishRead(idx uint64, pa uintptr, src []byte, err error) {
	if err == nil {
		n := copy(f.c.frames.Page(pa)[:], src[:min(f.pageLen(idx), len(src))])
		clear(f.c.frames.Page(pa)[n:])
	}
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	s.mu.Lock()
	pg := s.lookupLocked(k)
	drop := err != nil || pg.flags&pgStale != 0
	if drop {
		// A stale page's bytes may predate a write that invalidated
		// it while it was read: its readers (already waiting) race
		// with that write anyway, later ones must read it again.
		s.removeLocked(f.c, k)
	} else {
		pg.flags = pgUptodate | pgReferenced | f.kindFlag() | pg.flags&pgReadahead
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	if drop {
		f.c.frames.Free(pa)
	}
}

func (f *File) kindFlag() uint32 {
	if f.kind == KindFile {
		return pgFileKind
	}
	return 0
}

// Write writes p at off into the cache; the pages go to the backing on
// write-back. A write starting at or past the end fails with ErrRange;
// one crossing the end is cut short there. A page the write covers only
// in part is read in first.
func (f *File) Write(p []byte, off int64) (int, error) {
	size := f.size.Load()
	if off < 0 || off >= size && len(p) > 0 {
		return 0, ErrRange
	}
	p = p[:min(int64(len(p)), size-off)]
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		idx := uint64(pos / PageSize)
		in := int(pos % PageSize)
		plen := f.pageLen(idx)
		n := min(plen-in, len(p)-done)
		k := key{f.id, idx}
		s := f.c.shardOf(k)
		s.mu.Lock()
		pg := s.waitLocked(k)
		if pg == nil && n < plen {
			s.mu.Unlock()
			if err := f.fill(idx, 1, noPage); err != nil {
				return done, err
			}
			continue
		}
		if pg == nil {
			// The write covers the page: no need to read it.
			s.mu.Unlock()
			pa, err := f.c.alloc()
			if err != nil {
				return done, err
			}
			s.mu.Lock()
			if s.lookupLocked(k) != nil {
				s.mu.Unlock()
				f.c.frames.Free(pa)
				continue
			}
			s.insertLocked(k, pa, pgUptodate|f.kindFlag())
			f.c.pages[f.kind].Add(1)
			pg = s.lookupLocked(k)
		}
		copy(f.c.frames.Page(pg.pa)[in:], p[done:done+n])
		newly := pg.flags&pgDirty == 0
		pg.flags |= pgDirty | pgReferenced
		s.mu.Unlock()
		if newly {
			f.c.dirty.Add(1)
			f.markDirty(idx)
		}
		done += n
	}
	f.throttle()
	return done, nil
}

func (f *File) markDirty(idx uint64) {
	f.dmu.Lock()
	f.dirty[idx] = struct{}{}
	f.dmu.Unlock()
}

// throttle wakes the flusher once the dirty pages pass half the limit
// and makes the writer write its own file back past the limit.
func (f *File) throttle() {
	d := f.c.dirty.Load()
	if d > f.c.dirtyLimit/2 {
		select {
		case f.c.kick <- struct{}{}:
		default:
		}
	}
	if d > f.c.dirtyLimit {
		f.writeback()
	}
}

// writeback writes f's dirty pages to the backing, consecutive ones in
// one request of up to maxRun pages, and returns the first failure,
// which it also records for the open descriptions (errseq.go).
// A page whose write failed is clean all the same, as on Linux since
// 4.13: kept as written (a read still sees it) but not written again,
// the failure reported once to each description, by its next Sync. Retrying would report a bad sector to every
// later fsync of the device, even one of unrelated writes.
func (f *File) writeback() error {
	f.wbMu.Lock()
	defer f.wbMu.Unlock()
	f.dmu.Lock()
	idxs := make([]uint64, 0, len(f.dirty))
	for i := range f.dirty {
		idxs = append(idxs, i)
	}
	if len(idxs) > 256 {
		f.dirty = map[uint64]struct{}{} // a map keeps its largest size: let a big one go
	} else {
		clear(f.dirty)
	}
	f.dmu.Unlock()
	slices.Sort(idxs)
	bp := f.c.getBounce()
	defer f.c.putBounce(bp)
	buf := *bp
	var first error
	var start uint64
	count := 0
	flush := func() {
		if count > 0 {
			if err := f.writeRun(buf, start, count); err != nil && first == nil {
				first = err
			}
		}
		count = 0
	}
	for _, idx := range idxs {
		if count > 0 && (idx != start+uint64(count) || count == maxRun) {
			flush()
		}
		if !f.claim(idx, buf[count*PageSize:]) {
			flush()
			continue
		}
		if count == 0 {
			start = idx
		}
		count++
	}
	flush()
	f.RecordErr(first)
	return first
}

// claim copies page idx into dst if it is dirty, marking it clean and
// under write-back, and reports whether it did.
func (f *File) claim(idx uint64, dst []byte) bool {
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	pg := s.lookupLocked(k)
	if pg == nil || pg.flags&pgDirty == 0 {
		return false
	}
	copy(dst[:PageSize], f.c.frames.Page(pg.pa)[:])
	f.c.writeback.Add(1)
	if pg.wholds > 0 {
		// A mapping may store to the page without the cache seeing
		// it: it stays dirty, to be written again, until the last
		// writable hold goes or is downgraded (map.go).
		pg.flags |= pgWriteback
		f.markDirty(idx)
		return true
	}
	pg.flags = pg.flags&^pgDirty | pgWriteback
	f.c.dirty.Add(-1)
	return true
}

// writeRun writes the count claimed pages from start, copied in buf, and
// ends their write-back.
func (f *File) writeRun(buf []byte, start uint64, count int) error {
	off := int64(start) * PageSize
	// A file cut short meanwhile (Resize) writes nothing past its end.
	end := max(min(off+int64(count)*PageSize, f.size.Load()), off)
	_, err := f.b.WriteAt(buf[:end-off], off)
	for i := range count {
		k := key{f.id, start + uint64(i)}
		s := f.c.shardOf(k)
		s.mu.Lock()
		if pg := s.lookupLocked(k); pg != nil {
			pg.flags &^= pgWriteback
		}
		f.c.writeback.Add(-1)
		s.mu.Unlock()
	}
	return err
}

// invalidate drops f's pages holding bytes [off, end): the clean ones,
// and with dirty set the dirty ones too (which also marks pages being
// read in stale, dropped when the read ends). Pages under write-back
// stay.
func (f *File) invalidate(off, end int64, dirty bool) {
	first := uint64(off / PageSize)
	last := uint64((end + PageSize - 1) / PageSize)
	drop := func(s *shard, k key) uintptr {
		pg := s.lookupLocked(k)
		if pg != nil && dirty && pg.flags&pgBusy != 0 {
			pg.flags |= pgStale
		}
		if pg != nil && pg.holds > 0 {
			if dirty {
				// Mapped: the frame leaves the file but lives on
				// until its last hold goes (map.go).
				f.c.detach(pg.pa, pg.holds)
				s.removeLocked(f.c, k)
			}
			return 0
		}
		if pg == nil || pg.flags&(pgBusy|pgWriteback) != 0 || !dirty && pg.flags&pgDirty != 0 {
			return 0
		}
		return s.removeLocked(f.c, k)
	}
	// Look up each index of a range smaller than the cache; walk the
	// shards for one larger.
	cached := f.c.pages[KindBlock].Load() + f.c.pages[KindFile].Load()
	if last-first <= 4*maxRun || int64(last-first) <= cached {
		for i := first; i < last; i++ {
			k := key{f.id, i}
			s := f.c.shardOf(k)
			s.mu.Lock()
			pa := drop(s, k)
			s.shrinkLocked()
			s.mu.Unlock()
			if pa != 0 {
				f.c.frames.Free(pa)
			}
		}
		return
	}
	// A large range: walk the shards rather than every index.
	var pas []uintptr
	for i := range f.c.shards {
		s := &f.c.shards[i]
		s.mu.Lock()
		for j := range s.pages {
			k := s.pages[j].key
			if s.pages[j].pa != 0 && k.file == f.id && k.index >= first && k.index < last {
				if pa := drop(s, k); pa != 0 {
					pas = append(pas, pa)
				}
			}
		}
		s.shrinkLocked()
		s.mu.Unlock()
		for _, pa := range pas {
			f.c.frames.Free(pa)
		}
		pas = pas[:0]
	}
}

// ReadCached copies into dst, in order, the bytes from off on that are
// cached and up to date, stopping at the end of the file and at the
// first page that is not (missing, being read in) or that holds a
// read-ahead marker (Read must meet it to start the next window). It
// returns the bytes copied and whether they are all that was asked (or
// all up to the end). It never waits, reads the backing or allocates,
// so that its caller may hold locks a page fault takes: dst is the
// kernel's view of a program's buffers, which the caller keeps mapped.
func (f *File) ReadCached(dst [][]byte, off int64) (int, bool) {
	size := f.size.Load()
	total := 0
	for _, d := range dst {
		total += len(d)
	}
	if off < 0 {
		return 0, false
	}
	if off >= size || total == 0 {
		return 0, true
	}
	want := int(min(int64(total), size-off))
	done := 0
	seg, at := 0, 0 // where byte done goes: dst[seg][at]
	var s *shard
	for done < want {
		pos := off + int64(done)
		k := key{f.id, uint64(pos / PageSize)}
		if t := f.c.shardOf(k); t != s {
			if s != nil {
				s.mu.Unlock()
			}
			s = t
			s.mu.Lock()
		}
		pg := s.lookupLocked(k)
		if pg == nil || pg.flags&(pgBusy|pgReadahead) != 0 {
			break
		}
		pg.flags |= pgReferenced
		in := int(pos % PageSize)
		end := int(min(int64(PageSize), int64(in)+int64(want-done)))
		src := f.c.frames.Page(pg.pa)[in:end]
		for len(src) > 0 {
			for at == len(dst[seg]) {
				seg, at = seg+1, 0
			}
			n := copy(dst[seg][at:], src)
			src = src[n:]
			at += n
			done += n
		}
	}
	if s != nil {
		s.mu.Unlock()
	}
	return done, done == want
}
