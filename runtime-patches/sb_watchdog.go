//go:build shortbread

// Shortbread machine layer: the hard-lockup watchdog. Each CPU's timer
// interrupt watches the next (Linux's buddy scheme) and reports from trap
// context; the other busy CPUs' registers come by NMI (sb_amd64.s).

package runtime

import (
	"internal/runtime/atomic"
	_ "unsafe" // go:linkname
)

var (
	sbWdThresh  int64  // ns without a timer interrupt; 0: off
	sbWdPanic   bool   // power off after a report
	sbWdLockups uint32 // reports so far
)

//go:linkname sbHookSetWatchdog shortbread/kernel/machine.SetWatchdog
func sbHookSetWatchdog(thresh int64, panic bool) { sbWdThresh, sbWdPanic = thresh, panic }

//go:linkname sbHookLockups shortbread/kernel/machine.Lockups
func sbHookLockups() uint32 { return atomic.Load(&sbWdLockups) }

// sbWatchdog runs in CPU c's timer interrupt. A watcher that itself
// missed its ticks (the host stopped the whole machine) counts at most
// half the threshold for that gap, so a stall alone is no lockup.
func sbWatchdog(c *sbCPU, f *sbFrame) {
	if sbWdThresh <= 0 || sbNCPU < 2 {
		return
	}
	now := sbNanotime()
	gap := min(now-c.wdCheck, sbWdThresh/2)
	c.wdCheck = now
	b := &sbCPUs[(c.id+1)%sbNCPU]
	ticks := atomic.Load64(&b.intr[sbVecTimer-sbVecIRQBase])
	// Idle CPUs too: each arms its timer every quarter threshold (sbWdDeadline).
	if atomic.Load(&b.online) == 0 || ticks != b.wdSeen {
		b.wdSeen, b.wdStuck, b.wdTold = ticks, 0, false
		return
	}
	if b.wdStuck += gap; b.wdTold || b.wdStuck < sbWdThresh {
		return
	}
	b.wdTold = true
	sbWdReport(c, b, f)
}

// sbWdDeadline keeps an idle watcher's timer armed so it keeps looking.
func sbWdDeadline(c *sbCPU, deadline int64) int64 {
	if next := c.wdCheck + sbWdThresh/4; sbWdThresh > 0 && (deadline == 0 || next < deadline) {
		return next
	}
	return deadline
}

func sbWdReport(c, b *sbCPU, f *sbFrame) {
	for i := int32(0); i < sbNCPU; i++ {
		if o := &sbCPUs[i]; o != c && atomic.Load(&o.online) != 0 && (o == b || !sbThreads[o.cur].isIdle) {
			o.wdSeq = atomic.Load(&o.nmiSeq)
			atomic.Store(&o.nmiWant, 1)
			sbSendIPI(o.apicID, 0x400) // delivery mode NMI
		}
	}
	// The console lock may be what a locked CPU holds: wait a second for
	// it, then print anyway.
	for end := sbNanotime() + 1e9; !atomic.Cas(&sbConsoleLock.v, 0, 1) && sbNanotime() < end; {
		sbPause()
	}
	sbPrintf("\nwatchdog: hard LOCKUP on cpu %: no timer interrupt for % ms\n", int64(b.id), b.wdStuck/1e6)
	for i := int32(0); i < sbNCPU; i++ {
		o := &sbCPUs[i]
		r := o.nmiRegs[:]
		if o == c {
			own := sbRegsOf(f, 0)
			r = own.vals[:]
		} else {
			for end := sbNanotime() + 1e8; atomic.Load(&o.nmiWant) != 0 && sbNanotime() < end; {
				sbPause()
			}
			if atomic.Load(&o.nmiSeq) == o.wdSeq {
				continue
			}
		}
		sbPrintf("cpu %", int64(o.id))
		if o == c {
			sbPrintStr(" (watching)")
		}
		sbPrintStr(":")
		sbPrintVals(r)
		sbPrintStack(r)
	}
	sbConsoleLock.unlock()
	if sbWdPanic {
		sbLog("PANIC: hard LOCKUP (watchdog_panic)")
		sbPowerOff(0x7e)
	}
	// Counted after the power-off: the count ends sbDebugSpin, whose CPU
	// must not go on while QEMU is still handling the exit.
	atomic.Xadd(&sbWdLockups, 1)
}

// sbDebugSpin spins with interrupts off, as a machine-layer bug would
// (answering TLB shootdowns, as the machine layer's spin loops do), until
// the watchdog has reported a lockup or ns have passed: the watchdog's
// test (the kernel offers it only under debug_hooks).
func sbDebugSpin(ns int64) int64 {
	if ns < 0 || ns > 120e9 {
		return -sbEINVAL
	}
	n := atomic.Load(&sbWdLockups)
	for end := sbNanotime() + ns; sbNanotime() < end && atomic.Load(&sbWdLockups) == n; {
		sbPause()
		sbServiceTLB()
	}
	return 0
}
