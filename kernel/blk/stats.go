package blk

import (
	"fmt"
	"sync"
	"time"
)

// Stats counts a device's requests as Linux's /proc/diskstats shows them
// (Documentation/admin-guide/iostats.rst): per direction the requests
// completed, the 512-byte sectors moved and the milliseconds they took,
// the requests in flight, the time the device was busy and the time
// requests spent in it summed over requests. Shortbread merges no
// requests, so the merged counts stay 0.
type Stats struct {
	mu      sync.Mutex
	clock   func() time.Time
	ios     [3]uint64 // read, write, discard
	sectors [3]uint64
	nanos   [3]int64
	flushes uint64
	flushNs int64
	flight  int
	since   time.Time // when flight last changed
	busyNs  int64     // time with at least one request in flight
	queueNs int64     // request-time, summed over the requests in flight
}

const (
	statRead    = 0
	statWrite   = 1
	statDiscard = 2
)

func (s *Stats) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// begin counts a request as started and returns its start time.
func (s *Stats) begin() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.advanceLocked(now)
	s.flight++
	return now
}

// advanceLocked charges the time since the last change to the busy and
// queue totals.
func (s *Stats) advanceLocked(now time.Time) {
	if !s.since.IsZero() && s.flight > 0 {
		d := now.Sub(s.since).Nanoseconds()
		s.busyNs += d
		s.queueNs += d * int64(s.flight)
	}
	s.since = now
}

// end counts a request started at start as done: dir is statRead,
// statWrite, statDiscard or -1 for a flush; a failed request counts
// only its time.
func (s *Stats) end(start time.Time, dir int, bytes int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.advanceLocked(now)
	s.flight--
	if !ok {
		return
	}
	took := now.Sub(start).Nanoseconds()
	if dir < 0 {
		s.flushes++
		s.flushNs += took
		return
	}
	s.ios[dir]++
	s.sectors[dir] += uint64(bytes) / 512
	s.nanos[dir] += took
}

// Line is the device's /proc/diskstats line, named name as major:minor.
func (s *Stats) Line(major, minor uint32, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(s.now())
	ms := func(ns int64) int64 { return ns / 1e6 }
	// Linux 6.1's diskstats_show: 4 fields for reads, 4 for writes, in
	// flight, busy and weighted times, 4 for discards, 2 for flushes.
	return fmt.Sprintf("%4d %7d %s %d 0 %d %d %d 0 %d %d %d %d %d %d 0 %d %d %d %d\n",
		major, minor, name,
		s.ios[statRead], s.sectors[statRead], ms(s.nanos[statRead]),
		s.ios[statWrite], s.sectors[statWrite], ms(s.nanos[statWrite]),
		s.flight, ms(s.busyNs), ms(s.queueNs),
		s.ios[statDiscard], s.sectors[statDiscard], ms(s.nanos[statDiscard]),
		s.flushes, ms(s.flushNs))
}

// Counted is a Device whose requests are counted in Stats.
type Counted struct {
	Device
	Stats Stats
}

// Count wraps d so that its requests are counted.
func Count(d Device) *Counted { return &Counted{Device: d} }

func (c *Counted) ReadAt(p []byte, off int64) (int, error) {
	t := c.Stats.begin()
	n, err := c.Device.ReadAt(p, off)
	c.Stats.end(t, statRead, int64(n), err == nil)
	return n, err
}

func (c *Counted) WriteAt(p []byte, off int64) (int, error) {
	t := c.Stats.begin()
	n, err := c.Device.WriteAt(p, off)
	c.Stats.end(t, statWrite, int64(n), err == nil)
	return n, err
}

func (c *Counted) Flush() error {
	t := c.Stats.begin()
	err := c.Device.Flush()
	c.Stats.end(t, -1, 0, err == nil)
	return err
}

// CanDiscard and Discard follow the device; a discard counts as one
// request of its sectors (Linux counts the requests it was split into).
func (c *Counted) CanDiscard() bool { return CanDiscard(c.Device) }

func (c *Counted) Discard(off, n int64) error {
	t := c.Stats.begin()
	err := Discard(c.Device, off, n)
	c.Stats.end(t, statDiscard, n, err == nil)
	return err
}

// ReadOnly follows the device.
func (c *Counted) ReadOnly() bool {
	ro, ok := c.Device.(interface{ ReadOnly() bool })
	return ok && ro.ReadOnly()
}

// Unwrap returns the device counted.
func (c *Counted) Unwrap() Device { return c.Device }
