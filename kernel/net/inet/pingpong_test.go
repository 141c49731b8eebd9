package inet

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
)

// connectedPair is a TCP connection over the loopback interface: the
// connecting side and the accepted one.
func connectedPair(tb testing.TB) (c, a *sock) {
	tb.Helper()
	return connectedPairOn(tb, func() (*sock, error) { return newSocket(2, 1, 0, false) })
}

// connectedPairOn is connectedPair with the sockets newSock makes.
func connectedPairOn(tb testing.TB, newSock func() (*sock, error)) (c, a *sock) {
	tb.Helper()
	l, err := newSock()
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Release()
	if err := l.Bind(nil, addr4(0)); err != nil {
		tb.Fatal(err)
	}
	if err := l.Listen(nil, 1); err != nil {
		tb.Fatal(err)
	}
	port := binary.BigEndian.Uint16(l.Name()[2:])
	if c, err = newSock(); err != nil {
		tb.Fatal(err)
	}
	if err := c.Connect(nil, addr4(port), socket.Blocking{}); err != nil {
		tb.Fatal(err)
	}
	s, err := l.Accept(nil, socket.Blocking{})
	if err != nil {
		tb.Fatal(err)
	}
	return c, s.(*sock)
}

// echo answers every byte a receives until the connection closes, and
// then reports the error that ended it (nil for an orderly close).
func echo(a *sock, done chan<- error) {
	buf := make([]byte, 1)
	for {
		n, err := a.Read(socket.Blocking{}, buf, 0)
		if err != nil || n == 0 {
			done <- err
			return
		}
		if _, err := a.Write(socket.Blocking{}, buf[:n], 0); err != nil {
			done <- err
			return
		}
	}
}

// pingPong sends a byte and waits for its echo, n times.
func pingPong(tb testing.TB, c *sock, n int) {
	buf := []byte{'x'}
	for i := 0; i < n; i++ {
		if _, err := c.Write(socket.Blocking{}, buf, 0); err != nil {
			tb.Fatal(err)
		}
		if n, err := c.Read(socket.Blocking{}, buf, 0); n != 1 || err != nil {
			tb.Fatalf("read %d %v", n, err)
		}
	}
}

// Data that gets no answer is still acknowledged, by the delayed-ACK
// timer: with a minimum retransmission timeout of a minute, a
// retransmission cannot be what draws the receiver's ACK within 10 s.
func TestUnansweredDataAcked(t *testing.T) {
	rto := tcpip.TCPMinRTOOption(time.Minute)
	var was tcpip.TCPMinRTOOption
	if err := Stack().TransportProtocolOption(tcp.ProtocolNumber, &was); err != nil {
		t.Fatal(err)
	}
	if err := Stack().SetTransportProtocolOption(tcp.ProtocolNumber, &rto); err != nil {
		t.Fatal(err)
	}
	defer Stack().SetTransportProtocolOption(tcp.ProtocolNumber, &was)
	c, a := connectedPair(t)
	defer c.Release()
	defer a.Release()
	done := make(chan error, 1)
	go echo(a, done)
	pingPong(t, c, 20) // c answers quickly, so ACKs from it may wait
	// These bytes are a's own (the echo goroutine only reads); c neither
	// reads them nor sends anything until it has acknowledged them.
	st := c.ep.Stats().(*tcp.Stats)
	before := st.SegmentsSent.Value()
	if _, err := a.Write(socket.Blocking{}, []byte("unanswered"), 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st.SegmentsSent.Value() == before {
		if time.Now().After(deadline) {
			t.Fatal("no ACK from the receiver after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	buf := make([]byte, 16)
	if n, err := c.Read(socket.Blocking{}, buf, 0); n != 10 || err != nil || string(buf[:n]) != "unanswered" {
		t.Fatalf("read %d %v %q", n, err, buf[:n])
	}
	pingPong(t, c, 5)
	c.Shutdown(2)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// BenchmarkPingPong is a 1-byte request and answer over loopback TCP
// with blocking calls on both sides, as user/bench/scale.c's tcp
// workload does from user space.
func BenchmarkPingPong(b *testing.B) {
	c, a := connectedPair(b)
	defer c.Release()
	defer a.Release()
	done := make(chan error, 1)
	go echo(a, done)
	b.ResetTimer()
	pingPong(b, c, b.N)
	b.StopTimer()
	c.Shutdown(2)
	<-done
}

// A reset arriving over loopback is handled on the sender's goroutine,
// which then closes the receiving endpoint and unregisters it from the
// stack's demultiplexer: that must not wait for a lock the delivery
// holds (netstack-patches/stack-demuxer-unlock.diff).
func TestResetOverLoopback(t *testing.T) {
	c, a := connectedPair(t)
	res := make(chan error, 1)
	go func() {
		c.ep.Abort() // sends a RST
		_, err := a.Read(socket.Blocking{}, make([]byte, 1), 0)
		res <- err
	}()
	select {
	case err := <-res:
		if !errors.Is(err, linux.ECONNRESET) {
			t.Errorf("read after the peer's reset: %v, want ECONNRESET", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reset not handled after 10 s") // the sockets are stuck: not released
	}
	c.Release()
	a.Release()
}
