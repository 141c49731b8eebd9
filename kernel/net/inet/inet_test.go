package inet

import (
	"encoding/binary"
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
)

func addr4(port uint16) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, linux.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], []byte{127, 0, 0, 1})
	return b
}

func newTCP(t *testing.T) *sock {
	t.Helper()
	s, err := newSocket(linux.AF_INET, linux.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*sock)
}

// A listener, a connection through the loopback endpoint, data both
// ways, and a refused connection once the listener is gone.
func TestConnectAcceptRefused(t *testing.T) {
	l := newTCP(t)
	if err := l.Bind(nil, addr4(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(nil, 4); err != nil {
		t.Fatal(err)
	}
	name := l.Name()
	port := binary.BigEndian.Uint16(name[2:])
	if port == 0 || len(name) != 16 {
		t.Fatalf("getsockname %x", name)
	}
	c := newTCP(t)
	if err := c.Connect(nil, addr4(port), socket.Blocking{}); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if err := c.Connect(nil, addr4(port), socket.Blocking{}); !errors.Is(err, linux.EISCONN) {
		t.Fatalf("second connect: %v, want EISCONN", err)
	}
	a, err := l.Accept(nil, socket.Blocking{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Write(socket.Blocking{}, []byte("ping"), 0); n != 4 || err != nil {
		t.Fatalf("write %d %v", n, err)
	}
	buf := make([]byte, 16)
	if n, err := a.Read(socket.Blocking{}, buf, 0); n != 4 || err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("read %d %v %q", n, err, buf[:n])
	}
	a.Release()
	c.Release()
	l.Release()

	r := newTCP(t)
	defer r.Release()
	if err := r.Connect(nil, addr4(port), socket.Blocking{}); !errors.Is(err, linux.ECONNREFUSED) {
		t.Fatalf("connect to closed port: %v, want ECONNREFUSED", err)
	}
}
