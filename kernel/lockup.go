package main

import (
	"runtime"
	"strconv"
	"strings"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/procfs"
	"shortbread/kernel/machine"
	"shortbread/kernel/proc"
)

// The hard-lockup watchdog (watchdog_thresh=, watchdog_panic) is the
// machine layer's: a CPU's timer interrupt watches the next CPU, and the
// report of a CPU that took no timer interrupt for the threshold — every
// busy CPU's registers and stack — comes from trap context, since kernel
// goroutines may not run while a CPU is locked. Here the kernel only
// turns it on and, once goroutines run again (a stop of the world waits
// for the locked CPU), prints every goroutine's stack, as Linux prints
// its tasks after a lockup.
func (k *kernel) startWatchdog() {
	thresh := 10 * time.Second
	if v, ok := k.opts["watchdog_thresh"]; ok {
		n, _ := strconv.Atoi(v) // validated as an Int by the command-line schema
		thresh = time.Duration(n) * time.Second
	}
	if thresh <= 0 {
		return
	}
	if machine.NumCPU() < 2 {
		k.log.Infof("watchdog: one CPU, no hard-lockup detection (a CPU watches another)")
		return
	}
	machine.SetWatchdog(int64(thresh), k.opts["watchdog_panic"] == "true")
	go func() {
		var seen uint32
		for range time.Tick(time.Second) {
			if n := machine.Lockups(); n != seen {
				seen = n
				buf := make([]byte, 1<<20)
				k.log.Errorf("watchdog: goroutines after the hard lockup:\n%s", buf[:runtime.Stack(buf, true)])
			}
		}
	}()
}

// addDebugHooks offers /proc/shortbread/debug under debug_hooks, for the
// watchdog's tests: "irqoff N" spins the writer's CPU with interrupts off,
// "hang N" blocks the writer in a wait no signal ends (what the hung-task
// detector reports), each until its detector has reported it or N
// seconds have passed, so a test takes as long as the detection and no
// longer. Never offered otherwise: an ordinary boot has no way to lock a
// CPU on purpose.
func (k *kernel) addDebugHooks(fs *procfs.FS) {
	if k.opts["debug_hooks"] != "true" {
		return
	}
	fs.AddFile("shortbread/debug", func() []byte { return []byte("irqoff SECONDS\nhang SECONDS\n") }, func(p []byte) error {
		f := strings.Fields(string(p))
		if len(f) != 2 {
			return linux.EINVAL
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > 120 {
			return linux.EINVAL
		}
		d := time.Duration(n) * time.Second
		switch f[0] {
		case "irqoff":
			k.log.Warnf("debug: cpu %d spins with interrupts off for %v", machine.CurrentCPU(), d)
			return machine.DebugSpin(d)
		case "hang":
			k.log.Warnf("debug: blocking uninterruptibly for at most %v", d)
			// A report made once this wait is older than the timeout
			// is this wait's own (others before then may be about
			// the thread's previous system call).
			start, seen := time.Now(), int64(-1)
			for time.Since(start) < d {
				if seen < 0 && time.Since(start) > proc.HungTimeout {
					seen = proc.HungReports()
				} else if seen >= 0 && proc.HungReports() != seen {
					return nil
				}
				time.Sleep(100 * time.Millisecond)
			}
			return nil
		}
		return linux.EINVAL
	})
}
