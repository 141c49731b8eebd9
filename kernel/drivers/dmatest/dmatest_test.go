package dmatest

import "testing"

func TestMem(t *testing.T) {
	m := New(4096)
	m.Limit = 2
	a, b, err := m.AllocPage()
	if err != nil || len(b) != 4096 || a != 1<<20 {
		t.Fatalf("first page %#x %d %v", a, len(b), err)
	}
	if _, err := m.Slice(a+4000, 96); err != nil {
		t.Errorf("the page's end: %v", err)
	}
	if _, err := m.Slice(a+4000, 97); err == nil {
		t.Error("a slice across the page's end")
	}
	if _, err := m.Slice(a+8192, 1); err == nil {
		t.Error("a slice of memory never allocated")
	}
	m.AllocPage()
	if _, _, err := m.AllocPage(); err == nil {
		t.Error("past Limit")
	}
	m.FreePage(a)
	if _, err := m.Slice(a, 1); err == nil || m.InUse != 1 {
		t.Errorf("a freed page is still reachable (in use %d)", m.InUse)
	}
	defer func() {
		if recover() == nil {
			t.Error("freeing an unknown page did not panic")
		}
	}()
	m.FreePage(a)
}
