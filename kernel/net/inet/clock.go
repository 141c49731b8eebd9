package inet

import (
	"runtime"
	"sync"
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
//
// The runtime starts a new goroutine for each firing of a time.AfterFunc
// timer. A TCP timer's callback (a delayed ACK, a retransmission) runs
// netstack down to the link and, over loopback, up the other endpoint's
// receive path: a new goroutine's stack grew twice on the way, each
// growth a copy whose frame-table look-ups cost ~30k instructions (redis
// over TCP: ~2.5k a request, bench/results/twocpu-2026-11-30.md). The
// firing goroutine now only passes f to one of a few long-lived
// goroutines, whose stacks have grown once for good.
func (clock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	timerWorkersOnce.Do(startTimerWorkers)
	return tcpip.NewStdTimer(time.AfterFunc(d, func() { timerWork <- f }))
}

var (
	timerWork        = make(chan func(), 256)
	timerWorkersOnce sync.Once
)

// startTimerWorkers starts the goroutines that run timer callbacks: one
// per processor and at least four, so a callback waiting for an
// endpoint's lock does not hold up the other endpoints' timers.
func startTimerWorkers() {
	for range max(runtime.GOMAXPROCS(0), 4) {
		go func() {
			for f := range timerWork {
				f()
			}
		}()
	}
}
