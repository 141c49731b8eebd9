//go:build sbnetstack

// Tests that need netstack with Shortbread's patches (tools/netstack.sh),
// as make host-test builds it (-tags sbnetstack); go vet and a plain go
// test see netstack as released, without the patches' names.

package inet

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
)

// A request answered at once carries the ACK of the request, as on
// Linux: two segments a round trip, not netstack's four (an ACK for each
// byte, then the answer). netstack-patches/tcp-delack-*.diff. The
// delayed-ACK timeout is a minute here, not 40 ms: a loaded host can
// delay an answer past 40 ms, which would send the ACK alone and leave
// pingpong mode, and the count would depend on the host's load. Without
// the patches the count is 4 a round.
func TestRequestCarriesAck(t *testing.T) {
	tcp.DelAckTimeoutOverride.Store(int64(time.Minute))
	defer tcp.DelAckTimeoutOverride.Store(0)
	c, a := connectedPair(t)
	done := make(chan error, 1)
	go echo(a, done)
	pingPong(t, c, 20) // into pingpong mode on both sides
	const rounds = 200
	sent := Stack().Stats().TCP.SegmentsSent
	before := sent.Value()
	pingPong(t, c, rounds)
	if n := sent.Value() - before; n > rounds*3 {
		t.Errorf("%d segments for %d round trips, want about %d", n, rounds, 2*rounds)
	}
	c.Shutdown(2)
	if err := <-done; err != nil {
		t.Error(err)
	}
	c.Release()
	a.Release()
}

// TCP_MAXSEG on a connection is the MSS it sends with, as on Linux (65483
// over lo there), not the 536 an unconnected socket reports.
// netstack-patches/tcp-maxseg-connected.diff; without it both ends say
// 536.
func TestConnectedMSS(t *testing.T) {
	mss := func(s *sock) int {
		v, ok, err := s.getIPOption(ipprotoTCP, tcpMaxSeg)
		if !ok || err != nil || len(v) != 4 {
			t.Fatalf("TCP_MAXSEG: %v %v %v", v, ok, err)
		}
		return int(int32(binary.LittleEndian.Uint32(v)))
	}
	u, err := newSocket(2, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	if v := mss(u); v != 536 {
		t.Errorf("unconnected: %d, want 536", v)
	}
	c, a := connectedPair(t)
	defer c.Release()
	defer a.Release()
	// The loopback MTU less the IP and TCP headers and the options
	// netstack puts in every segment.
	for _, s := range []*sock{c, a} {
		if v := mss(s); v <= 65000 || v > loopbackMTU-40 {
			t.Errorf("connected: %d, want the connection's MSS (%d less options)", v, loopbackMTU-40)
		}
	}
}

// A TCP_MAXSEG set before connecting bounds the segments the connection
// sends, not only the MSS it offers: Linux sends with the smaller of
// its own and the peer's. netstack-patches/tcp-user-mss-snd.diff;
// without it 8,000 bytes over lo (the peer offers about 65k) leave in
// one segment and TCP_MAXSEG says about 65k.
func TestUserMSSBoundsSegments(t *testing.T) {
	l, err := newSocket(2, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Bind(nil, addr4(0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(nil, 1); err != nil {
		t.Fatal(err)
	}
	c, err := newSocket(2, 1, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	v := make([]byte, 4)
	binary.LittleEndian.PutUint32(v, 1000)
	if err := c.SetOption(nil, ipprotoTCP, tcpMaxSeg, v); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(nil, addr4(binary.BigEndian.Uint16(l.Name()[2:])), socket.Blocking{}); err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept(nil, socket.Blocking{})
	if err != nil {
		t.Fatal(err)
	}
	a := s.(*sock)
	defer a.Release()
	got, ok, err := c.getIPOption(ipprotoTCP, tcpMaxSeg)
	if !ok || err != nil || len(got) != 4 {
		t.Fatalf("TCP_MAXSEG: %v %v %v", got, ok, err)
	}
	if m := binary.LittleEndian.Uint32(got); m > 1000 || m < 900 {
		t.Errorf("TCP_MAXSEG on the connection: %d, want 1000 less options", m)
	}
	st := c.ep.Stats().(*tcp.Stats)
	before := st.SegmentsSent.Value()
	data := make([]byte, 8000)
	if n, err := c.Write(socket.Blocking{}, data, 0); n != len(data) || err != nil {
		t.Fatalf("write %d %v", n, err)
	}
	m := socket.RecvMsg{Buf: make([]byte, len(data)), Flags: linux.MSG_WAITALL}
	if n, err := a.RecvMsg(nil, socket.Blocking{}, &m); n != len(data) || err != nil {
		t.Fatalf("read %d %v", n, err)
	}
	if n := st.SegmentsSent.Value() - before; n < 8 {
		t.Errorf("8000 bytes in %d segments, want at least 8 (at most 1000 bytes each)", n)
	}
}

// countingClock is the kernel's clock, counting monotonic reads.
type countingClock struct {
	clock
	reads atomic.Int64
}

func (c *countingClock) NowMonotonic() tcpip.MonotonicTime {
	c.reads.Add(1)
	return c.clock.NowMonotonic()
}

// A round trip reads the clock once per event and side (a write, a
// segment handled), once per segment received and once per segment sent
// (its transmit time), as Linux stamps an event once (tcp_mstamp):
// netstack-patches/tcp-event-clock*.diff. Without them every stamp of
// an event read the clock again: about 26 reads a round trip over lo. The delayed-ACK timeout is a minute, so
// that no timer fires (and reads the clock) on a loaded host.
func TestClockReadsPerRoundTrip(t *testing.T) {
	tcp.DelAckTimeoutOverride.Store(int64(time.Minute))
	defer tcp.DelAckTimeoutOverride.Store(0)
	clk := new(countingClock)
	st, err := newStack(clk)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	c, a := connectedPairOn(t, func() (*sock, error) {
		wq := new(waiter.Queue)
		ep, e := st.NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
		if e != nil {
			return nil, errno(e)
		}
		return wrap(2, linux.SOCK_STREAM, ipprotoTCP, ep, wq), nil
	})
	done := make(chan error, 1)
	go echo(a, done)
	pingPong(t, c, 20) // into pingpong mode on both sides
	const rounds = 200
	before := clk.reads.Load()
	pingPong(t, c, rounds)
	// 8 a round trip: two events, a segment received and one sent a side.
	if n := clk.reads.Load() - before; n > rounds*10 {
		t.Errorf("%d clock reads for %d round trips, want about %d", n, rounds, 8*rounds)
	}
	c.Shutdown(2)
	if err := <-done; err != nil {
		t.Error(err)
	}
	c.Release()
	a.Release()
}

// A TCP socket, connected or accepted, reads through ReadStream
// (netstack-patches/tcp-x-read-stream-endpoint.diff), and a peek, a
// partial read and a read of the rest give the bytes as Read did.
func TestStreamReadsWithoutResult(t *testing.T) {
	c, a := connectedPair(t)
	if c.stream == nil || a.stream == nil {
		t.Fatalf("stream reader: connected %v, accepted %v; want both", c.stream != nil, a.stream != nil)
	}
	data := []byte("abcdefgh")
	if n, err := c.Write(socket.Blocking{}, data, 0); n != len(data) || err != nil {
		t.Fatalf("write %d %v", n, err)
	}
	peek := socket.RecvMsg{Buf: make([]byte, len(data)), Flags: linux.MSG_PEEK | linux.MSG_WAITALL}
	if n, err := a.RecvMsg(nil, socket.Blocking{}, &peek); err != nil || n == 0 || string(peek.Buf[:n]) != string(data[:n]) {
		t.Fatalf("peek: %d %v %q", n, err, peek.Buf)
	}
	got := 0
	for got < len(data) {
		m := socket.RecvMsg{Buf: make([]byte, 3)}
		n, err := a.RecvMsg(nil, socket.Blocking{}, &m)
		if err != nil || n == 0 || string(m.Buf[:n]) != string(data[got:got+n]) {
			t.Fatalf("read at %d: %d %v %q", got, n, err, m.Buf[:n])
		}
		got += n
	}
}
