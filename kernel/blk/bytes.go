package blk

// Block device files (/dev/vda) read and write any byte range, as on
// Linux; the device moves whole sectors. With no page cache yet, a write
// that covers part of a sector reads the sector, changes it and writes
// it back, so two writers of different bytes of one sector at once may
// lose one of the changes (Linux serializes them in its page cache).

// chunk bounds one device request issued on behalf of a file access.
const chunk = 256 << 10

// ReadBytes reads len(p) bytes at off, any alignment. Reading at or past
// the end returns 0 bytes; a range crossing the end is cut short there.
func ReadBytes(d Device, p []byte, off int64) (int, error) {
	size := Size(d)
	if off < 0 {
		return 0, ErrRange
	}
	if off >= size {
		return 0, nil
	}
	p = p[:min(int64(len(p)), size-off)]
	ss := int64(d.SectorSize())
	done := 0
	var buf []byte
	for done < len(p) {
		pos := off + int64(done)
		start := pos &^ (ss - 1)
		end := min((pos+int64(len(p)-done)+ss-1)&^(ss-1), start+chunk, size)
		n := int(end - start)
		if pos == start && n <= len(p)-done && n%int(ss) == 0 {
			// Aligned: straight into p.
			if _, err := d.ReadAt(p[done:done+n], start); err != nil {
				return done, err
			}
			done += n
			continue
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		if _, err := d.ReadAt(buf[:n], start); err != nil {
			return done, err
		}
		done += copy(p[done:], buf[pos-start:n])
	}
	return done, nil
}

// WriteBytes writes p at off, any alignment. A write starting at or past
// the end fails with ErrRange (ENOSPC for the file); one crossing the end
// is cut short there.
func WriteBytes(d Device, p []byte, off int64) (int, error) {
	size := Size(d)
	if off < 0 || off >= size && len(p) > 0 {
		return 0, ErrRange
	}
	p = p[:min(int64(len(p)), size-off)]
	ss := int64(d.SectorSize())
	done := 0
	var buf []byte
	for done < len(p) {
		pos := off + int64(done)
		start := pos &^ (ss - 1)
		end := min((pos+int64(len(p)-done)+ss-1)&^(ss-1), start+chunk, size)
		n := int(end - start)
		if pos == start && n <= len(p)-done {
			if _, err := d.WriteAt(p[done:done+n], start); err != nil {
				return done, err
			}
			done += n
			continue
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		// Only the partial sectors at either end need their old bytes.
		if pos != start {
			if _, err := d.ReadAt(b[:ss], start); err != nil {
				return done, err
			}
		}
		if last := end - ss; last >= start && (last != start || pos == start) && pos+int64(len(p)-done) < end {
			if _, err := d.ReadAt(b[last-start:], last); err != nil {
				return done, err
			}
		}
		c := copy(b[pos-start:], p[done:])
		if _, err := d.WriteAt(b, start); err != nil {
			return done, err
		}
		done += c
	}
	return done, nil
}

// Bytes is a Device seen as a file of bytes (io.ReaderAt, io.WriterAt,
// Flush and Size): what a file system driver reads and writes. A range
// crossing the end is ErrRange, never a short count.
type Bytes struct{ D Device }

func (b Bytes) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > Size(b.D) || int64(len(p)) > Size(b.D)-off {
		return 0, ErrRange
	}
	return ReadBytes(b.D, p, off)
}

func (b Bytes) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > Size(b.D) || int64(len(p)) > Size(b.D)-off {
		return 0, ErrRange
	}
	return WriteBytes(b.D, p, off)
}

func (b Bytes) Flush() error { return b.D.Flush() }

func (b Bytes) Size() int64 { return Size(b.D) }

// CanDiscard reports whether the device takes discards.
func (b Bytes) CanDiscard() bool { return CanDiscard(b.D) }

// Discard discards the whole sectors within n bytes at off (a discard
// is advice: the parts of sectors at either end are left alone).
func (b Bytes) Discard(off, n int64) error {
	if off < 0 || n < 0 || off > Size(b.D) || n > Size(b.D)-off {
		return ErrRange
	}
	ss := int64(b.D.SectorSize())
	start, end := (off+ss-1)/ss*ss, (off+n)/ss*ss
	if end <= start {
		return nil
	}
	return Discard(b.D, start, end-start)
}
