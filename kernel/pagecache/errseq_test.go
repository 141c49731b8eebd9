package pagecache

import (
	"bytes"
	"errors"
	"testing"
)

// A failed write-back reaches every description open at the time once,
// from its next SyncFrom, and a description opened after someone
// reported it not at all (Linux's errseq, seen through fsync).
func TestWriteBackFailureReachesEachDescription(t *testing.T) {
	_, _, d, f := setup(t, 1<<20, 1024)
	d.badWri[20] = true // in page 2
	a, b := f.SampleErr(), f.SampleErr()
	p := bytes.Repeat([]byte{0x5a}, 4*PageSize)
	f.Write(p, 0)
	flushes := d.flushes
	if err := f.SyncFrom(&a); !errors.Is(err, errIO) {
		t.Fatalf("first description's sync: %v", err)
	}
	if d.flushes != flushes {
		t.Error("the disk was flushed after a failed write-back (Linux's fsync returns first)")
	}
	if err := f.SyncFrom(&a); err != nil {
		t.Fatalf("first description's second sync: %v", err)
	}
	late := f.SampleErr() // opened after the failure was reported
	if err := f.SyncFrom(&b); !errors.Is(err, errIO) {
		t.Fatalf("second description's sync: %v", err)
	}
	if err := f.SyncFrom(&b); err != nil {
		t.Fatalf("second description's second sync: %v", err)
	}
	if err := f.SyncFrom(&late); err != nil {
		t.Fatalf("a description opened after the report: %v", err)
	}
	if d.flushes == flushes {
		t.Error("a sync with nothing to report did not flush the disk")
	}

	// A background failure nobody has reported: descriptions open
	// before it and one opened after it all report it, once each.
	f.Write(p, 0)
	f.c.WritebackAll()
	after := f.SampleErr()
	for name, c := range map[string]*ErrCursor{"a": &a, "b": &b, "late": &late, "after": &after} {
		if err := f.SyncFrom(c); !errors.Is(err, errIO) {
			t.Errorf("description %s after a background failure: %v", name, err)
		}
		if err := f.SyncFrom(c); err != nil {
			t.Errorf("description %s, second sync: %v", name, err)
		}
	}
	if err := f.UnseenErr(); err != nil {
		t.Errorf("UnseenErr after the reports: %v", err)
	}
	if c := f.SampleErr(); f.SyncFrom(&c) != nil {
		t.Error("a description opened after the reports sees the failure")
	}

	// A failure at release is carried to the next File of the backing
	// (as a block device's last close): a description of that one
	// reports it, once.
	f.Write(p, 0)
	if err := f.Release(); !errors.Is(err, errIO) {
		t.Fatalf("Release: %v", err)
	}
	carried := f.UnseenErr()
	if !errors.Is(carried, errIO) {
		t.Fatalf("UnseenErr after a failed release: %v", carried)
	}
	g := f.c.Open(d, f.size.Load(), KindBlock)
	g.RecordErr(carried)
	c := g.SampleErr()
	if err := g.SyncFrom(&c); !errors.Is(err, errIO) {
		t.Fatalf("the next File's description: %v", err)
	}
	if err := g.SyncFrom(&c); err != nil {
		t.Fatalf("the next File's description, again: %v", err)
	}
}

func TestErrSeqCounts(t *testing.T) {
	var e errSeq
	var c0 ErrCursor
	if e.check(&c0) != nil || e.sample() != 0 || e.unseen() != nil {
		t.Fatal("a fresh record reports something")
	}
	e1, e2 := errors.New("one"), errors.New("two")
	e.set(e1)
	e.set(e2) // unreported: replaces the first, no new count
	c := e.sample()
	if c != 0 || e.unseen() != e2 {
		t.Fatalf("sample %d unseen %v", c, e.unseen())
	}
	if err := e.check(&c); err != e2 {
		t.Fatalf("check %v", err)
	}
	seen := c
	e.set(e1) // after a report: a new count
	if err := e.check(&c); err != e1 || c == seen {
		t.Fatalf("check after a new failure: %v, cursor %d (was %d)", err, c, seen)
	}
	if e.check(&c) != nil {
		t.Fatal("reported twice")
	}
}
