package watchdog

import (
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	tr := Tracker{Timeout: 120 * time.Second}
	t0 := time.Unix(1000, 0)
	type thread struct {
		seq      uint64
		sleeping bool
	}
	stuck := &thread{seq: 7}                  // in a system call, awake, going nowhere
	asleep := &thread{seq: 9, sleeping: true} // in a system call, waiting interruptibly
	busy := &thread{seq: 3}                   // in system calls, but new ones each look
	user := &thread{seq: 4}                   // in user mode
	reports := map[*thread]int{}
	for i := 0; i <= 30; i++ {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		busy.seq += 2
		for _, th := range []*thread{stuck, asleep, busy, user} {
			if _, r := tr.Observe(th, th.seq, th.sleeping, now); r {
				reports[th]++
				if th == stuck && now.Sub(t0) < 120*time.Second {
					t.Errorf("reported after only %v", now.Sub(t0))
				}
			}
		}
		tr.Done()
	}
	if reports[stuck] != 1 {
		t.Errorf("stuck thread reported %d times, want once", reports[stuck])
	}
	for _, th := range []*thread{asleep, busy, user} {
		if reports[th] != 0 {
			t.Errorf("thread %+v reported", *th)
		}
	}
	// A new system call by the stuck thread starts its clock again.
	stuck.seq += 2
	now := t0.Add(400 * time.Second)
	if _, r := tr.Observe(stuck, stuck.seq, false, now); r {
		t.Errorf("reported at once in a new system call")
	}
	tr.Done()
	if _, r := tr.Observe(stuck, stuck.seq, false, now.Add(120*time.Second)); !r {
		t.Errorf("not reported in its second long system call")
	}
	// Threads that are gone are forgotten.
	tr.Done()
	tr.Done()
	if tr.Len() != 0 {
		t.Errorf("%d threads still followed after they were gone", tr.Len())
	}
}
