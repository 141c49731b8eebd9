package proc

import (
	"sync/atomic"
	"time"

	"shortbread/kernel/kmem"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
)

// The out-of-memory killer. The machine layer keeps a reserve of frames
// for the kernel, so user memory runs out first and a page fault finds
// no frame. Killing whoever faulted would often kill the wrong process
// (a shell touching one page while a hog holds the rest), so, as Linux's
// OOM killer does, the process holding the most memory is killed, and
// the faulting thread tries again once that memory is back. Before
// any kill, the page cache gives back what it can (kmem.Reclaim).

var (
	// oomSem admits one kill at a time. It is a channel, not a mutex, so
	// that a thread waiting for it can still be killed (its process
	// chosen, or exiting): a thread blocked on a mutex would hold up its
	// process's exit, and with it the memory everyone waits for.
	oomSem = make(chan struct{}, 1)
	// oomKills counts kills whose memory is back; a thread that waited
	// while another's kill made room retries instead of killing again.
	oomKills atomic.Uint64
)

// oomReclaim is how many frames a fault that found none asks the
// caches for (1 MiB: enough for the next faults too).
const oomReclaim = 256

// oomWait bounds the wait for a victim to give its memory back.
const oomWait = 5 * time.Second

// outOfMemory handles a fault of t that found no frame. It reports
// whether t's process must die (it holds the most memory, or nothing
// else can be killed); otherwise the fault is to be retried, once the
// victim's memory is back.
func outOfMemory(t *Thread) (die bool) {
	if kmem.Reclaim(oomReclaim) > 0 {
		return false
	}
	p := t.Proc
	seen := oomKills.Load()
	select {
	case oomSem <- struct{}{}:
	case <-t.sigWake:
		t.wake() // keep the wake-up for the return to user mode
		return false
	}
	if oomKills.Load() != seen {
		<-oomSem
		return false // another kill made room meanwhile: try again
	}
	victim, pages := largestProcess()
	logMemory()
	if victim == nil || victim == p {
		Log.Warnf("proc: out of memory: killed %v (%d MiB resident)", p, pages/256)
		// The caller ends the process; the next kill waits until its
		// memory is back.
		go func() {
			awaitExit(p)
			oomKills.Add(1)
			<-oomSem
		}()
		return true
	}
	Log.Warnf("proc: out of memory: killed %v (%d MiB resident) for %v", victim, pages/256, p)
	victim.signal(sigKILL)
	awaitExit(victim)
	oomKills.Add(1)
	<-oomSem
	return false
}

// awaitExit waits, for at most oomWait, until p has exited and so given
// back its memory.
func awaitExit(p *Process) {
	select {
	case <-p.done:
	case <-time.After(oomWait):
		Log.Warnf("proc: out of memory: %v did not exit within %v", p, oomWait)
	}
}

// largestProcess returns the live process with the most resident pages,
// never init (as on Linux: killing it would end the machine).
func largestProcess() (*Process, int) {
	tableMu.Lock()
	procs := make([]*Process, 0, len(table))
	for pid, p := range table {
		if pid != 1 {
			procs = append(procs, p)
		}
	}
	tableMu.Unlock()
	var best *Process
	most := 0
	for _, p := range procs {
		p.mu.Lock()
		live := p.state == procRunning && !p.exiting
		p.mu.Unlock()
		s := p.Space()
		if !live || s == nil {
			continue
		}
		if n := s.ResidentPages(); n > most {
			best, most = p, n
		}
	}
	return best, most
}

// logMemory says where memory is when the killer runs, as Linux's
// "Mem-Info" report does: a kill whose victims all hold almost nothing
// means the memory is elsewhere (tmpfs files, the page cache, the
// kernel's own), and the log is then all there is to tell where.
func logMemory() {
	ms := machine.ReadMemStats()
	st := mm.ReadStats()
	Log.Warnf("proc: out of memory: %d of %d kB free; user: anonymous %d kB, page tables %d kB; shared memory and tmpfs %d kB (%d kB mapped); kernel runtime %d kB",
		ms.FreeFrames*4, ms.TotalFrames*4, st.Anon*4, st.Tables*4, st.Shm*4, st.Mapped*4, ms.CommittedFrames*4)
}
