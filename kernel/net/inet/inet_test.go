package inet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

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
	s, err := newSocket(linux.AF_INET, linux.SOCK_STREAM, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
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

// 4 MiB each way at once between two connected sockets, the pattern
// checked, through blocking sends and receives that wait on the
// endpoints' events: a lost wake-up hangs here.
func TestBidirectionalTransfer(t *testing.T) {
	for round := 0; round < 5; round++ {
		l := newTCP(t)
		l.Bind(nil, addr4(0))
		l.Listen(nil, 4)
		port := binary.BigEndian.Uint16(l.Name()[2:])
		c := newTCP(t)
		if err := c.Connect(nil, addr4(port), socket.Blocking{}); err != nil {
			t.Fatal(err)
		}
		as, err := l.Accept(nil, socket.Blocking{})
		if err != nil {
			t.Fatal(err)
		}
		a := as.(*sock)
		const n = 4 << 20
		pat := make([]byte, n)
		for i := range pat {
			pat[i] = byte(i*7 + i>>11)
		}
		errs := make(chan error, 4)
		send := func(s *sock) {
			for off := 0; off < n; {
				k, err := s.Write(socket.Blocking{}, pat[off:min(off+65536, n)], 0)
				if err != nil {
					errs <- err
					return
				}
				off += k
			}
			errs <- s.Shutdown(linux.SHUT_WR)
		}
		recv := func(s *sock) {
			got := make([]byte, 0, n)
			buf := make([]byte, 65536)
			for {
				k, err := s.Read(socket.Blocking{}, buf, 0)
				if err != nil {
					errs <- err
					return
				}
				if k == 0 {
					break
				}
				got = append(got, buf[:k]...)
			}
			if string(got) != string(pat) {
				errs <- errors.New("data differs")
				return
			}
			errs <- nil
		}
		go send(a)
		go send(c)
		go recv(a)
		go recv(c)
		for i := 0; i < 4; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		a.Release()
		c.Release()
		l.Release()
	}
}

// /proc/net/tcp lists a listener and both ends of a connection in
// Linux's layout, and forgets a socket once it is released.
func TestProcNetTCP(t *testing.T) {
	l := newTCP(t)
	if err := l.Bind(nil, addr4(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(nil, 4); err != nil {
		t.Fatal(err)
	}
	l.SetIno(424242)
	port := l.ep.Info().(*stack.TransportEndpointInfo).ID.LocalPort
	listen := fmt.Sprintf("0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 424242 ", port)
	text := string(ProcNetTCP())
	if !strings.HasPrefix(text, "  sl  local_address rem_address   st tx_queue") {
		t.Fatalf("header: %q", text)
	}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if len(line) != 149 {
			t.Errorf("line of %d characters, want 149 as Linux pads them: %q", len(line), line)
		}
	}
	if !strings.Contains(text, listen) {
		t.Fatalf("no listener line %q in\n%s", listen, text)
	}
	c := newTCP(t)
	if err := c.Connect(nil, addr4(port), socket.Blocking{}); err != nil {
		t.Fatal(err)
	}
	a, err := l.Accept(nil, socket.Blocking{})
	if err != nil {
		t.Fatal(err)
	}
	text = string(ProcNetTCP())
	est := fmt.Sprintf("0100007F:%04X 0100007F:", port)
	if n := strings.Count(text, " 01 "); n < 2 || !strings.Contains(text, est) {
		t.Errorf("want both ends established (%q):\n%s", est, text)
	}
	for _, s := range []*sock{l, c, a.(*sock)} {
		s.Release()
	}
	if strings.Contains(string(ProcNetTCP()), " 424242 ") {
		t.Errorf("released listener still listed")
	}
}
