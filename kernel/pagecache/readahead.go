package pagecache

import "sync"

// Read-ahead. A read that misses reads a window of pages at once, and a
// sequential reader's windows double up to maxRun pages. Past its first
// window a stream reads ahead asynchronously: one page of each window
// carries a marker (pgReadahead), and the reader whose hit finds it
// starts the read of the next window in a goroutine of the cache's and
// goes on copying, so that the device fills the next window while the
// program consumes this one (the pages of a window in flight are busy:
// a reader that catches up waits for them, as for any read-in).
//
//   - A miss is sequential when it falls where the file's last window
//     ended, or right after a cached page (a stream coming off pages
//     already cached); a read at page 0 starts a stream too. Any other
//     miss is random: it reads minReadAhead pages and places no marker,
//     so random access never reads ahead asynchronously.
//   - The marker of the first window is the first page the reader did
//     not ask for; an asynchronous window's is its first page. Only the
//     file's current marker starts a window (File.ra.marker): a stale
//     one, from a stream that has moved on, is cleared and ignored.
//   - Memory is bounded: at most maxAsyncPages pages are in flight
//     cache-wide (a window that would pass it is not started; the reader
//     then misses and reads synchronously), and a window's frames are
//     taken only while the frame source has them free, never by pushing
//     other pages out.
//   - A window whose read fails is dropped whole: each of its pages is
//     read again, synchronously, by whoever wants it (fill tries the
//     pages of a failed run one by one), so an I/O error reaches only
//     the readers of the pages that fail.
//
// A Backing's ReadAt may therefore run in the cache's own goroutine,
// holding none of the caller's locks, unless the Backing is a Preparer.

// noPage is no page index: no marker.
const noPage = ^uint64(0)

// maxAsyncPages bounds the pages of asynchronous read-ahead in flight
// in the whole cache (4 MiB: sixteen streams' full windows).
const maxAsyncPages = 16 * maxRun

// A Preparer is a Backing whose reads need the caller's locks (a file
// system's block map): PrepareRead is called where ReadAt would be, and
// maps bytes [off, off+n) then; the function it returns does the reads
// later, from another goroutine without those locks, into p (n bytes).
// A page whose mapping changes meanwhile is one the change invalidates
// (Invalidate, Resize), and such a page is dropped once read.
type Preparer interface {
	PrepareRead(off int64, n int) (read func(p []byte) error, err error)
}

// readMiss reads page idx (and the pages after it, by read-ahead) for
// a reader that wants want pages from idx.
func (f *File) readMiss(idx uint64, want int) error {
	seq := idx != 0 && f.cached(idx-1)
	f.ra.Lock()
	seq = seq || idx != 0 && idx == f.ra.next
	if seq {
		f.ra.win = min(max(2*f.ra.win, minReadAhead), maxRun)
	} else {
		f.ra.win = minReadAhead
	}
	n := max(want, f.ra.win)
	f.ra.next = idx + uint64(n)
	mark := uint64(noPage)
	if seq || idx == 0 {
		// The first page the reader did not ask for; or, when it asked
		// for the whole window, the first page: either way the reader
		// meets it while copying and starts the next window.
		mark = idx
		if want < n {
			mark = idx + uint64(want)
		}
	}
	f.ra.marker = mark
	f.ra.Unlock()
	return f.fill(idx, n, mark)
}

// cached reports whether page idx is in the cache (being read in too).
func (f *File) cached(idx uint64) bool {
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookupLocked(k) != nil
}

// markerHit starts the next window of f's stream if m is its current
// marker: the window after the last one, twice as long (up to maxRun),
// its first page the next marker.
func (f *File) markerHit(m uint64) {
	f.ra.Lock()
	if m != f.ra.marker {
		f.ra.Unlock()
		return
	}
	start := f.ra.next
	win := min(max(2*f.ra.win, minReadAhead), maxRun)
	f.ra.win = win
	f.ra.next = start + uint64(win)
	f.ra.marker = start
	f.ra.Unlock()
	got := f.startAsync(start, win)
	if got < win {
		f.ra.Lock()
		if f.ra.marker == start { // the stream's state is still this one's
			f.ra.next = start + uint64(got)
			if got == 0 {
				f.ra.marker = noPage
			}
		}
		f.ra.Unlock()
	}
}

// startAsync puts up to n pages from start into the cache, busy, the
// first flagged as the marker, and reads them in a goroutine; it
// returns how many it put in flight (0 when the window starts at the
// end of the file or at a cached page, or memory is short).
func (f *File) startAsync(start uint64, n int) int {
	c := f.c
	if c.raPages.Add(int64(n)) > maxAsyncPages {
		c.raPages.Add(-int64(n))
		return 0
	}
	var pas [maxRun]uintptr
	got, _ := f.insertBusy(start, n, start, pas[:], false)
	c.raPages.Add(-int64(n - got))
	if got == 0 {
		return 0
	}
	off := int64(start) * PageSize
	end := min(off+int64(got)*PageSize, f.size.Load())
	var read func([]byte) error
	var err error
	if end <= off {
		err = errShrunk
	} else if p, ok := f.b.(Preparer); ok {
		read, err = p.PrepareRead(off, int(end-off))
	} else {
		read = func(p []byte) error {
			_, err := f.b.ReadAt(p, off)
			return err
		}
	}
	if err != nil {
		f.endAsync(start, got, &pas, nil, err)
		return 0
	}
	f.ra.Lock()
	f.ra.inflight++
	f.ra.Unlock()
	go func() {
		bp := c.getBounce()
		buf := (*bp)[:end-off]
		err := read(buf)
		f.endAsync(start, got, &pas, buf, err)
		c.putBounce(bp)
		f.ra.Lock()
		if f.ra.inflight--; f.ra.inflight == 0 && f.ra.idle != nil {
			f.ra.idle.Broadcast()
		}
		f.ra.Unlock()
	}()
	return got
}

// endAsync ends the read-in of the got pages from start in frames pas,
// with buf's bytes or, when err is set, by dropping them all (each is
// read again by whoever wants it).
func (f *File) endAsync(start uint64, got int, pas *[maxRun]uintptr, buf []byte, err error) {
	for i := range got {
		var src []byte
		if err == nil {
			src = buf[min(i*PageSize, len(buf)):]
		}
		f.finishRead(start+uint64(i), pas[i], src, err)
	}
	f.c.raPages.Add(-int64(got))
}

// waitAsync returns once no read-ahead of f is in flight.
func (f *File) waitAsync() {
	f.ra.Lock()
	defer f.ra.Unlock()
	for f.ra.inflight > 0 {
		if f.ra.idle == nil {
			f.ra.idle = &sync.Cond{L: &f.ra.Mutex}
		}
		f.ra.idle.Wait()
	}
}
