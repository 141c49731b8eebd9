//go:build sbnetstack

// Tests that need netstack with Shortbread's patches (tools/netstack.sh),
// as make host-test builds it (-tags sbnetstack); go vet and a plain go
// test see netstack as released, without the patches' names.

package inet

import (
	"encoding/binary"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
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
