package sysv

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

func usedIDs(t *testing.T, s *Shm) int {
	t.Helper()
	buf := make([]byte, ShmidDSSize)
	if _, err := s.Ctl(0, ShmInfo, buf, vfs.Root); err != nil {
		t.Fatal(err)
	}
	return int(binary.LittleEndian.Uint32(buf))
}

func TestShmTable(t *testing.T) {
	s := NewShm(&mm.HeapPhys{}, time.Now)
	user := vfs.Cred{UID: 1000, EUID: 1000, GID: 1000, EGID: 1000}
	a, err := s.Get(Private, 100, 0o600, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Get(42, 100, Creat|0o600, user, 1)
	if err != nil || a == b {
		t.Fatalf("second segment: %d, %v (first %d)", b, err, a)
	}
	if _, err := s.Get(42, 100, Creat|Excl|0o600, user, 1); !errors.Is(err, linux.EEXIST) {
		t.Errorf("IPC_EXCL: %v", err)
	}
	if _, err := s.Get(43, 100, 0o600, user, 1); !errors.Is(err, linux.ENOENT) {
		t.Errorf("absent key: %v", err)
	}
	other := vfs.Cred{UID: 2000, EUID: 2000, GID: 2000, EGID: 2000}
	if _, err := s.Get(42, 0, 0o400, other, 2); !errors.Is(err, linux.EACCES) {
		t.Errorf("mode 0600 to another user: %v", err)
	}
	if _, err := s.Ctl(b, RMID, nil, other); !errors.Is(err, linux.EPERM) {
		t.Errorf("IPC_RMID by another user: %v", err)
	}
	if n := usedIDs(t, s); n != 2 {
		t.Errorf("used ids %d, want 2", n)
	}
	if _, err := s.Ctl(b, RMID, nil, user); err != nil {
		t.Fatal(err)
	}
	if n := usedIDs(t, s); n != 1 {
		t.Errorf("after IPC_RMID of an unattached segment: %d used, want 1", n)
	}
	// The slot is reused with a new sequence number: the old id is stale.
	c, err := s.Get(Private, 100, 0o600, user, 1)
	if err != nil || c == b {
		t.Fatalf("reused slot: id %d, %v (old %d)", c, err, b)
	}
	if _, err := s.Ctl(b, STAT, make([]byte, ShmidDSSize), user); !errors.Is(err, linux.EINVAL) {
		t.Errorf("stale id: %v", err)
	}
}
