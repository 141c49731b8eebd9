package inet

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"shortbread/kernel/net/socket"
)

// Connections give back what they took: rounds of 500 TCP connections,
// each carrying 1 KiB both ways and closed, leave no endpoint registered
// in the stack once TIME_WAIT is over, no goroutine, and no growth of
// the heap from one round to the next (the first round warms netstack's
// bounded free lists). A leak of a few hundred bytes a connection fails.
func TestConnectionsGiveBackMemory(t *testing.T) {
	s := Stack()
	var old tcpip.TCPTimeWaitTimeoutOption
	if err := s.TransportProtocolOption(tcp.ProtocolNumber, &old); err != nil {
		t.Fatal(err)
	}
	short := tcpip.TCPTimeWaitTimeoutOption(5 * time.Millisecond)
	if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, &short); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.SetTransportProtocolOption(tcp.ProtocolNumber, &old) })

	// Only this test's endpoints are counted (a port of one of its
	// listeners at either end): other tests of the package leave theirs
	// in TIME_WAIT with the default timeout, and they go at any moment.
	ports := map[uint16]bool{}
	ours := func() int {
		n := 0
		for _, e := range s.RegisteredEndpoints() {
			ep, ok := e.(interface{ Info() tcpip.EndpointInfo })
			if !ok {
				continue
			}
			if info, ok := ep.Info().(*stack.TransportEndpointInfo); ok && (ports[info.ID.LocalPort] || ports[info.ID.RemotePort]) {
				n++
			}
		}
		return n
	}
	settle := func() {
		for i := 0; i < 1000 && ours() > 0; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
	}
	round := func() {
		l := newTCP(t)
		l.Bind(nil, addr4(0))
		if err := l.Listen(nil, 1024); err != nil {
			t.Fatal(err)
		}
		port := binary.BigEndian.Uint16(l.Name()[2:])
		ports[port] = true
		msg := make([]byte, 1024)
		buf := make([]byte, 1024)
		for i := 0; i < 500; i++ {
			c := newTCP(t)
			if err := c.Connect(nil, addr4(port), socket.Blocking{}); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			a, err := l.Accept(nil, socket.Blocking{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]socket.Socket{{c, a}, {a, c}} {
				if n, err := p[0].Write(socket.Blocking{}, msg, 0); n != len(msg) || err != nil {
					t.Fatalf("write %d %v", n, err)
				}
				for got := 0; got < len(msg); {
					n, err := p[1].Read(socket.Blocking{}, buf, 0)
					if n <= 0 || err != nil {
						t.Fatalf("read %d %v", n, err)
					}
					got += n
				}
			}
			c.Release()
			a.Release()
		}
		l.Release()
		settle()
	}

	settle()
	goroutines := runtime.NumGoroutine()
	round()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	for i := 0; i < 3; i++ {
		round()
	}
	if n := ours(); n != 0 {
		t.Errorf("%d of the test's endpoints still registered after the connections closed", n)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after the connections closed, %d before", n, goroutines)
	}
	runtime.ReadMemStats(&ms)
	if grew := int64(ms.HeapAlloc) - int64(base); grew > 512<<10 {
		t.Errorf("the heap grew by %d bytes over 1,500 closed connections", grew)
	}
}
