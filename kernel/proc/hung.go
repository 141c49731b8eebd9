package proc

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/watchdog"
)

// The hung-task detector, like Linux's khungtaskd: a thread that has been
// inside one system call for longer than HungTimeout without sleeping
// interruptibly (every wait a signal can end marks the thread sleeping:
// pipes, sockets, futexes, sleeps, wait4, locks...) is stuck on a kernel
// lock or spinning in a loop that should have ended. It is reported once
// per system call, with every goroutine's stack, so a hang is diagnosed
// from the console instead of guessed at. The decision is package
// watchdog's; a thread's position is its kernel-entry counter (kseq),
// which costs the system call path two atomic adds and no clock reads.

// HungTimeout is how long a system call may run without sleeping before it
// is reported; 0 turns the detector off (hung_task_timeout_secs=).
var HungTimeout = 120 * time.Second

// HungPanic makes a report panic the kernel afterwards (hung_task_panic).
var HungPanic bool

// hungCheck is how often the detector looks: every 10 s, or a quarter of
// a shorter timeout.
func hungCheck() time.Duration { return min(10*time.Second, HungTimeout/4) }

var hungOnce sync.Once

// StartHungTaskDetector starts the detector's goroutine (once).
func StartHungTaskDetector() {
	if HungTimeout <= 0 {
		return
	}
	hungOnce.Do(func() {
		go func() {
			tr := watchdog.Tracker{Timeout: HungTimeout}
			for now := range time.Tick(hungCheck()) {
				checkHung(&tr, now)
			}
		}()
	})
}

// hungReports counts the threads reported.
var hungReports atomic.Int64

// HungReports is how many hung threads the detector has reported.
func HungReports() int64 { return hungReports.Load() }

func checkHung(tr *watchdog.Tracker, now time.Time) {
	hung := false
	for _, t := range allThreads() {
		if stuck, report := tr.Observe(t, t.kseq.Load(), t.sleeping.Load(), now); report {
			hung = true
			hungReports.Add(1)
			Log.Errorf("proc: hung task: %v tid %d has been in system call %d for %v without sleeping",
				t.Proc, t.TID, t.syscallNo, stuck.Round(time.Second))
		}
	}
	tr.Done()
	if !hung {
		return
	}
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	Log.Errorf("proc: hung task: goroutines:\n%s", buf[:n])
	if HungPanic {
		panic("hung task (hung_task_panic)")
	}
}
