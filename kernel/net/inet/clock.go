package inet

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/wallclock"
)

// clock is the stack's clock: the kernel's own CLOCK_MONOTONIC and
// CLOCK_REALTIME. netstack's default (tcpip.NewStdClock) derives every
// monotonic reading from time.Now, a wall-clock and a monotonic read plus
// time.Time arithmetic, and TCP reads it about ten times a segment
// (timers, RTT samples, timestamps, pacing): about 11% of the kernel's
// instructions in a loopback ping-pong. wallclock.Monotonic is one
// counter read and a multiply.
type clock struct{}

var _ tcpip.Clock = clock{}

// Now is CLOCK_REALTIME, so packet timestamps follow clock_settime as
// Linux's do.
func (clock) Now() time.Time { return time.Unix(0, wallclock.Realtime()) }

// NowMonotonic is CLOCK_MONOTONIC. MonotonicTime has no constructor but
// Add on its zero value.
func (clock) NowMonotonic() tcpip.MonotonicTime {
	return tcpip.MonotonicTime{}.Add(time.Duration(wallclock.Monotonic()))
}

// AfterFunc runs f on a runtime timer. The runtime's clock and
// CLOCK_MONOTONIC tick at rates calibrated separately; netstack's timers
// check NowMonotonic when they fire and wait again for what is left, so
// a timer the runtime fires a little early is not early for TCP.
func (clock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	return tcpip.NewStdTimer(time.AfterFunc(d, f))
}
