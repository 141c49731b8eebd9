package proc

// Job control: stop signals stop every thread of a process, SIGCONT
// resumes it, and the parent hears of both (SIGCHLD with CLD_STOPPED or
// CLD_CONTINUED unless SA_NOCLDSTOP, and wait with WUNTRACED or
// WCONTINUED). A thread stops at its next return to user mode. One
// blocked in an interruptible wait is woken and its call ends as a
// signal would end it (most calls restart once the process continues);
// one in an uninterruptible wait stops when the wait ends.
//
// The stop is complete, and only then reported to the parent, when every
// thread has parked (Linux's group_stop_count reaching zero): until then
// a thread may still be inside a call with effects the parent can see,
// such as a read taking data out of a pipe.

// jobState is a process's stop state, guarded by Process.mu.
type jobState struct {
	stopped bool
	stopSig int
	// toStop counts the threads that have not parked for this stop
	// (Thread.stopCounted false); the stop is complete at zero.
	toStop     int
	stopReport bool          // a complete stop a wait has not collected yet
	contReport bool          // a continue wait has not collected yet
	cont       chan struct{} // closed when the process continues
}

// stopPendingLocked reports whether a stop is under way that t has not
// parked for: its interruptible waits end, as a signal's would.
// Caller holds p.mu.
func (t *Thread) stopPendingLocked() bool {
	return t.Proc.job.stopped && !t.stopCounted
}

// parkedLocked counts t as parked for the stop in progress, if it was
// not yet, and reports whether that completed the stop (the caller
// then tells the parent). Caller holds p.mu.
func (t *Thread) parkedLocked() (complete bool) {
	p := t.Proc
	if !p.job.stopped || t.stopCounted {
		return false
	}
	t.stopCounted = true
	p.job.toStop--
	if p.job.toStop > 0 || p.exiting {
		return false
	}
	p.job.stopReport = true
	return true
}

func isStopSignal(sig int) bool {
	switch sig {
	case sigSTOP, sigTSTP, sigTTIN, sigTTOU:
		return true
	}
	return false
}

const stopSignals = 1<<(sigSTOP-1) | 1<<(sigTSTP-1) | 1<<(sigTTIN-1) | 1<<(sigTTOU-1)

// discardLocked drops pending instances of the signals in set from the
// process and its threads. Caller holds p.mu.
func (p *Process) discardLocked(set uint64) {
	for sig := 1; sig <= nSig; sig++ {
		if set&bit(sig) == 0 {
			continue
		}
		p.pending.discard(sig)
		for _, t := range p.threads {
			t.pending.discard(sig)
		}
	}
}

// stopGroup stops the process for sig (the default action of a stop
// signal, taken by one of its threads).
func (p *Process) stopGroup(sig int) {
	p.mu.Lock()
	if p.job.stopped || p.exiting || p.state != procRunning {
		p.mu.Unlock()
		return
	}
	p.job = jobState{stopped: true, stopSig: sig, toStop: len(p.threads), cont: make(chan struct{})}
	p.jobStopped.Store(true)
	threads := make([]*Thread, 0, len(p.threads))
	for _, t := range p.threads {
		t.stopCounted = false
		threads = append(threads, t)
	}
	p.mu.Unlock()
	for _, t := range threads {
		t.wake() // out of user mode or a wait, to stop before going back
	}
}

// continueGroup is SIGCONT's effect, at the moment it is sent (even if
// blocked or ignored): pending stop signals are dropped and a stopped
// process resumes.
func (p *Process) continueGroup() {
	p.mu.Lock()
	p.discardLocked(stopSignals)
	if !p.job.stopped || p.exiting {
		// An exiting process resumes no more (its threads are killed
		// out of the stop) and sends no CLD_CONTINUED, as Linux's
		// prepare_signal ignores everything once the group exits.
		p.mu.Unlock()
		return
	}
	// A stop not yet complete was never reported: the parent hears of
	// it now, as CLD_STOPPED, though wait with WCONTINUED sees the
	// continue either way (Linux's prepare_signal, which also clears the
	// stop's signal first: si_status is 0).
	code, sig := int32(cldContinued), sigCONT
	if p.job.toStop > 0 {
		code, sig = cldStopped, 0
	}
	close(p.job.cont)
	p.job = jobState{contReport: true}
	p.jobStopped.Store(false)
	for _, t := range p.threads {
		t.stopCounted = false
	}
	p.mu.Unlock()
	p.notifyParent(code, sig)
}

// notifyParent wakes the parent's waits and sends it SIGCHLD, unless its
// handler asked for no stop notices (SA_NOCLDSTOP).
func (p *Process) notifyParent(code int32, sig int) {
	p.mu.Lock()
	parent := p.parent
	info := sigInfo{signo: sigCHLD, code: code, pid: int32(p.PID), uid: p.cred.ruid, status: int32(sig)}
	p.mu.Unlock()
	if parent == nil {
		return
	}
	parent.mu.Lock()
	var target *Thread
	if parent.sig.get(sigCHLD).flags&saNoCldStop == 0 {
		target, _ = parent.queueLocked(info)
	}
	parent.notifyLocked()
	parent.mu.Unlock()
	if target != nil {
		target.wake()
	}
}

// waitWhileStopped parks the thread while its process is stopped, or
// until SIGKILL is pending (which kills a stopped process, as on Linux).
// It reports whether it waited (the caller then looks at signals again).
func (t *Thread) waitWhileStopped() bool {
	p := t.Proc
	waited := false
	for {
		// A stop after this check kicks the thread out of user mode.
		if !p.jobStopped.Load() {
			return waited
		}
		if t.dying.Load() {
			return waited
		}
		if (t.pending.unlocked()|p.pending.unlocked())&bit(sigKILL) != 0 {
			return true
		}
		p.mu.Lock()
		stopped, cont, sig := p.job.stopped, p.job.cont, p.job.stopSig
		complete := t.parkedLocked()
		p.mu.Unlock()
		if complete {
			p.notifyParent(cldStopped, sig)
		}
		if !stopped {
			return waited
		}
		waited = true
		t.waitBegin()
		select {
		case <-cont:
		case <-t.sigWake:
		}
		t.sleepEnd()
	}
}
