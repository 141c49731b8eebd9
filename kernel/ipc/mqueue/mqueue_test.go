package mqueue

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func open(t *testing.T, name string, attr *Attr, limit uint64) (*Queue, error) {
	t.Helper()
	return Open(OpenArgs{Name: name, Flags: linux.O_CREAT | linux.O_RDWR, Mode: 0o600, Attr: attr,
		Cred: vfs.Cred{EUID: 1000, EGID: 1000}, Limit: limit, Capped: true})
}

func TestOrderAndRelease(t *testing.T) {
	q, err := open(t, "order", &Attr{MaxMsg: 8, MsgSize: 16}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	nb := Wait{Blocking: vfs.Blocking{NonBlock: true}, Now: time.Now}
	for i, p := range []uint32{1, 7, 1, 7, 3} {
		if err := q.Send(nb, []byte{byte(i)}, p, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	buf := make([]byte, 16)
	for {
		n, _, err := q.Receive(nb, buf)
		if errors.Is(err, linux.EAGAIN) {
			break
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != "\x01\x03\x04\x00\x02" {
		t.Errorf("order %v, want priorities 7,7,3,1,1 in arrival order", got)
	}
	n, charged := Stats()
	if n != 1 || charged != chargeOf(8, 16) {
		t.Errorf("after open: %d queues, %d bytes charged", n, charged)
	}
	f := NewFile(q, linux.O_RDWR)
	if err := Unlink("order", vfs.Cred{EUID: 1000}); err != nil {
		t.Fatal(err)
	}
	if n, _ := Stats(); n != 1 {
		t.Errorf("unlinked while open: %d queues, want 1", n)
	}
	f.DecRef()
	if n, charged := Stats(); n != 0 || charged != 0 {
		t.Errorf("after the last close: %d queues, %d bytes charged", n, charged)
	}
}

func TestLimits(t *testing.T) {
	if _, err := open(t, "big", &Attr{MaxMsg: 11, MsgSize: 16}, 1<<20); !errors.Is(err, linux.EINVAL) {
		t.Errorf("past msg_max: %v", err)
	}
	if _, err := open(t, "costly", &Attr{MaxMsg: 10, MsgSize: 8192}, 1000); !errors.Is(err, linux.EMFILE) {
		t.Errorf("past RLIMIT_MSGQUEUE: %v", err)
	}
	if _, err := open(t, "a/b", nil, 1<<20); !errors.Is(err, linux.EACCES) {
		t.Errorf("a slash: %v", err)
	}
	q, err := open(t, "timed", &Attr{MaxMsg: 1, MsgSize: 4}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	w := Wait{Deadline: time.Now().Add(20 * time.Millisecond), Now: time.Now}
	if _, _, err := q.Receive(w, make([]byte, 4)); !errors.Is(err, linux.ETIMEDOUT) {
		t.Errorf("empty queue with a deadline: %v", err)
	}
	if err := q.Send(w, []byte("12345"), 0, 1, 0); !errors.Is(err, linux.EMSGSIZE) {
		t.Errorf("too long: %v", err)
	}
	Unlink("timed", vfs.Cred{EUID: 1000})
}
