package proc

import (
	"errors"
	"fmt"

	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
)

// Signals that end a process here until signal delivery to user handlers
// exists (wait status: the signal number).
const (
	sigILL  = 4
	sigTRAP = 5
	sigBUS  = 7
	sigFPE  = 8
	sigSEGV = 11
)

// run is the thread's goroutine: it runs the program until the next
// system call or fault, handles that in Go, and goes back.
func (t *Thread) run() {
	p := t.Proc
	for {
		if err := machine.RunUser(&t.regs, p.Space.Root()); err != nil {
			Log.Errorf("proc: %v: RunUser: %v", p, err)
			p.exit(sigSEGV)
			return
		}
		switch r := &t.regs; r.Trap {
		case machine.TrapSyscall:
			if t.syscall() {
				return
			}
		case machine.TrapInterrupt:
		case machine.TrapPageFault:
			write := r.ErrCode&2 != 0
			exec := r.ErrCode&16 != 0
			if err := p.Space.Fault(uintptr(r.Addr), write, exec); err != nil {
				if errors.Is(err, mm.ErrNoMem) {
					Log.Warnf("proc: %v killed: out of memory", p)
					p.exit(9) // SIGKILL, as the OOM killer does
					return
				}
				t.fatalSignal(sigSEGV, err)
				return
			}
		default:
			sig := sigSEGV
			switch r.Trap {
			case 0, 16, 19: // #DE, #MF, #XM
				sig = sigFPE
			case 6: // #UD
				sig = sigILL
			case 1, 3: // #DB, #BP
				sig = sigTRAP
			case 17: // #AC
				sig = sigBUS
			}
			t.fatalSignal(sig, nil)
			return
		}
	}
}

// fatalSignal ends the process for a fault the program does not handle.
func (t *Thread) fatalSignal(sig int, why error) {
	r := &t.regs
	if why == nil {
		why = fmt.Errorf("CPU exception %d (error code %#x)", r.Trap, r.ErrCode)
	}
	Log.Infof("proc: %v killed by signal %d: %v at rip=%#x addr=%#x", t.Proc, sig, why, r.RIP, r.Addr)
	t.Proc.exit(sig)
}
