package proc

import "sync"

// A signal sent to a process group (kill(-pgid), a terminal's ^C) or to
// every process (kill(-1)) while one of its members forks must reach the
// child too, or the child outlives a kill meant for its whole group (the
// test runner's, a shell's). Linux sends such signals under tasklist_lock
// and collects those that come during a fork (signal->multiprocess) for
// the child. Here a fork registers a forkWatch with its process; group
// senders hold groupSendMu for reading while they note the signal in
// each target's watches and send it, and a fork publishes its child with
// groupSendMu held for writing: a group's member list either holds the
// child already, or the signal is in the watch the fork hands on.
type forkWatch struct {
	sigs []sigInfo // protected by the forking process's mu
}

// groupSendMu orders group sends against forks' publication (above).
// Lock order: groupSendMu, then tableMu, then Process.mu.
var groupSendMu sync.RWMutex

func (p *Process) watchFork() *forkWatch {
	w := &forkWatch{}
	p.mu.Lock()
	p.forks = append(p.forks, w)
	p.mu.Unlock()
	return w
}

func (p *Process) unwatchFork(w *forkWatch) {
	p.mu.Lock()
	for i, x := range p.forks {
		if x == w {
			p.forks = append(p.forks[:i], p.forks[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
}

// noteGroupSignal hands info, a group or broadcast signal p is being
// sent, to the children p's threads are forking. The caller holds
// groupSendMu for reading.
func (p *Process) noteGroupSignal(info sigInfo) {
	p.mu.Lock()
	for _, w := range p.forks {
		w.sigs = append(w.sigs, info)
	}
	p.mu.Unlock()
}
