package proc

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"sync"

	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
)

// Signal numbers (x86-64 Linux).
const (
	sigHUP    = 1
	sigINT    = 2
	sigQUIT   = 3
	sigILL    = 4
	sigTRAP   = 5
	sigABRT   = 6
	sigBUS    = 7
	sigFPE    = 8
	sigKILL   = 9
	sigUSR1   = 10
	sigSEGV   = 11
	sigUSR2   = 12
	sigPIPE   = 13
	sigALRM   = 14
	sigTERM   = 15
	sigCHLD   = 17
	sigCONT   = 18
	sigSTOP   = 19
	sigTSTP   = 20
	sigTTIN   = 21
	sigTTOU   = 22
	sigURG    = 23
	sigXCPU   = 24
	sigXFSZ   = 25
	sigVTALRM = 26
	sigPROF   = 27
	sigWINCH  = 28
	sigIO     = 29
	sigSYS    = 31
	nSig      = 64

	sigDfl = 0
	sigIgn = 1

	saNoCldStop = 0x1
	saNoCldWait = 0x2
	saSiginfo   = 0x4
	saOnStack   = 0x08000000
	saRestart   = 0x10000000
	saNoDefer   = 0x40000000
	saResetHand = 0x80000000
	saRestorer  = 0x04000000
	// saExposeTagbits is accepted and kept, as Linux's UAPI_SA_FLAGS
	// keeps it; x86-64 has no address tags to expose.
	saExposeTagbits = 0x800
	// saKnownFlags are the flags sigaction keeps (Linux's UAPI_SA_FLAGS).
	saKnownFlags = saNoCldStop | saNoCldWait | saSiginfo | saOnStack | saRestart | saNoDefer |
		saResetHand | saRestorer | saExposeTagbits

	// si_code values.
	siUser     = 0
	siKernel   = 0x80
	siTkill    = -6
	segvMapErr = 1
	segvAccErr = 2
	fpeIntDiv  = 1
	illIllOpn  = 2
	trapBrkpt  = 1
	busAdrAln  = 1
	busAdrErr  = 2
	cldExited  = 1
	cldKilled  = 2
	cldDumped  = 3

	unblockable = 1<<(sigKILL-1) | 1<<(sigSTOP-1)
)

func bit(sig int) uint64 { return 1 << (sig - 1) }

// coreSignal reports whether a signal's default action dumps core.
func coreSignal(sig int) bool {
	switch sig {
	case sigQUIT, sigILL, sigTRAP, sigABRT, sigBUS, sigFPE, sigSEGV, sigXCPU, sigXFSZ, sigSYS:
		return true
	}
	return false
}

// ignoredByDefault reports whether a signal's default action is to ignore
// it. (SIGCONT's continuing happens when it is sent, whatever its action.)
func ignoredByDefault(sig int) bool {
	switch sig {
	case sigCHLD, sigCONT, sigURG, sigWINCH:
		return true
	}
	return false
}

// sigAction is struct k_sigaction as rt_sigaction passes it.
type sigAction struct {
	handler, flags, restorer, mask uint64
}

// sigHandlers are a thread group's dispositions (shared by CLONE_SIGHAND).
type sigHandlers struct {
	mu  sync.Mutex
	act [nSig + 1]sigAction
}

func newSigHandlers() *sigHandlers { return &sigHandlers{} }

func (h *sigHandlers) get(sig int) sigAction {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.act[sig]
}

func (h *sigHandlers) clone() *sigHandlers {
	h.mu.Lock()
	defer h.mu.Unlock()
	return &sigHandlers{act: h.act}
}

// resetForExec keeps ignored signals ignored and resets handlers.
func (h *sigHandlers) resetForExec() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.act {
		if h.act[i].handler != sigIgn {
			h.act[i] = sigAction{}
		}
	}
}

func (h *sigHandlers) ignoresChildren() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.act[sigCHLD]
	return a.handler == sigIgn || a.flags&saNoCldWait != 0
}

// stackT is the sigaltstack state.
type stackT struct {
	sp    uint64
	flags int32
	size  uint64
}

// signal sends a process-directed signal from the kernel (SI_KERNEL): a
// terminal's ^C, a timer, a parent's death. Init is shielded from these
// as from a program's.
func (p *Process) signal(sig int) {
	if !p.shielded(sig) {
		p.sendSignal(sigInfo{signo: sig, code: siKernel})
	}
}

// ignores reports whether sig's action is to ignore it.
func (p *Process) ignores(sig int) bool {
	a := p.sig.get(sig)
	return sig != sigKILL && (a.handler == sigIgn || (a.handler == sigDfl && ignoredByDefault(sig)))
}

// discardsLocked reports whether sig, sent to thread t (nil: to the
// process), is dropped on arrival: it is ignored and not blocked. As on
// Linux (sig_ignored), a blocked signal is kept even when ignored, since
// the action may change before it is unblocked, and sigwaitinfo and
// signalfd read it; for the process the main thread's mask decides, as
// Linux asks the task the pid names. Preconditions: p.mu is held.
func (p *Process) discardsLocked(sig int, t *Thread) bool {
	if !p.ignores(sig) {
		return false
	}
	if t == nil {
		t = p.threads[p.PID]
		if t == nil {
			for _, x := range p.threads {
				t = x
				break
			}
		}
	}
	return t == nil || t.sigMask&bit(sig) == 0
}

// shielded reports whether sig, sent by a program (kill, tgkill,
// sigqueue) or raised by the kernel for an event (a terminal's ^C, a
// timer, a broken pipe), is discarded on arrival because p is init and
// has no handler for it, as Linux protects init (SIGNAL_UNKILLABLE):
// SIGKILL and SIGSTOP, and any signal left at its default action, cannot
// take down or stop the process whose exit ends the system. The sender
// is not told: kill still succeeds. Signals the kernel raises for a fault
// are not shielded; a crashing init still dies.
func (p *Process) shielded(sig int) bool {
	return p.PID == 1 && p.sig.get(sig).handler == sigDfl
}

// sendSignal makes a signal pending for the process and wakes a thread
// that does not block it to take it. Ignored signals are discarded at
// once, as Linux does. It fails with EAGAIN when a real-time signal finds
// the queue full.
func (p *Process) sendSignal(info sigInfo) int64 {
	sig := info.signo
	if sig <= 0 || sig > nSig {
		return -eINVAL
	}
	if sig == sigCONT {
		p.continueGroup()
	}
	p.mu.Lock()
	target, e := p.queueLocked(info)
	p.mu.Unlock()
	if target != nil {
		target.wake()
	}
	return e
}

// queueLocked makes a process-directed signal pending and returns the
// thread to wake for it (nil if none can take it now). Caller holds p.mu
// and wakes the thread after unlocking.
func (p *Process) queueLocked(info sigInfo) (*Thread, int64) {
	sig := info.signo
	if isStopSignal(sig) {
		p.discardLocked(bit(sigCONT))
	}
	if p.state != procRunning || p.discardsLocked(sig, nil) {
		return nil, 0
	}
	if !p.pending.add(info, p.sigQueueFull()) && sig >= sigRTMin {
		return nil, -eAGAIN
	}
	return p.signalTargetLocked(sig), 0
}

// signalTargetLocked picks the thread to wake for a process-directed sig,
// as Linux's complete_signal does: the main thread if it takes sig, else
// the thread picked last time if it still does, else the next by thread
// ID that does (nil if none: the signal waits for one to unblock it).
// Whichever thread next enters the kernel unblocked takes it (nextSignal);
// the choice decides only whose blocking call ends. Programs see it: a
// main thread blocked in read gets the EINTR and runs the handler, not a
// random one of its threads. Preconditions: p.mu is held.
func (p *Process) signalTargetLocked(sig int) *Thread {
	takes := func(t *Thread) bool {
		return t != nil && !t.leaving && !t.dying.Load() &&
			(t.sigMask&bit(sig) == 0 || sig == sigKILL || t.sigWaitSet&bit(sig) != 0)
	}
	if t := p.threads[p.PID]; takes(t) {
		return t
	}
	last := p.sigTarget
	if t := p.threads[last]; takes(t) {
		return t
	}
	var next, first *Thread
	for tid, t := range p.threads {
		if !takes(t) {
			continue
		}
		if tid > last && (next == nil || tid < next.TID) {
			next = t
		}
		if first == nil || tid < first.TID {
			first = t
		}
	}
	if next == nil {
		next = first
	}
	if next != nil {
		p.sigTarget = next.TID
	}
	return next
}

// signalThread sends a thread-directed signal from the kernel (SIGPIPE).
func (t *Thread) signalThread(sig int) {
	if !t.Proc.shielded(sig) {
		t.sendSignal(sigInfo{signo: sig, code: siUser, pid: int32(t.Proc.PID)})
	}
}

// sendSignal makes a thread-directed signal (tgkill, faults) pending.
func (t *Thread) sendSignal(info sigInfo) int64 {
	p := t.Proc
	if info.signo == sigCONT {
		p.continueGroup()
	}
	p.mu.Lock()
	if isStopSignal(info.signo) {
		p.discardLocked(bit(sigCONT))
	}
	if p.discardsLocked(info.signo, t) {
		p.mu.Unlock()
		return 0
	}
	if !t.pending.add(info, p.sigQueueFull()) && info.signo >= sigRTMin {
		p.mu.Unlock()
		return -eAGAIN
	}
	p.mu.Unlock()
	t.wake()
	return 0
}

// faultSignal handles a synchronous fault: with a handler that is not
// blocked, it is delivered (with the fault address); otherwise the
// process dies, as Linux forces the default action.
func (t *Thread) faultSignal(sig int, code int32, addr uint64) {
	a := t.Proc.sig.get(sig)
	if a.handler <= sigIgn || t.sigMask&bit(sig) != 0 {
		t.fatalSignal(sig)
		return
	}
	t.Proc.mu.Lock()
	t.pending.add(sigInfo{signo: sig, code: code, addr: addr}, false)
	t.Proc.mu.Unlock()
}

// interrupted reports whether a signal the thread does not block (or its
// death, or a stop it has not parked for) is waiting: blocking system
// calls return EINTR, or restart.
func (t *Thread) interrupted() bool {
	if t.dying.Load() {
		return true
	}
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	return (t.pending.mask|p.pending.mask)&^(t.sigMask&^unblockable) != 0 || t.stopPendingLocked()
}

// nextSignal takes the lowest pending unblocked signal (thread-directed
// first).
func (t *Thread) nextSignal() (sigInfo, bool) {
	p := t.Proc
	if !t.signalsReady() {
		return sigInfo{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	blocked := t.sigMask &^ unblockable
	if info, ok := t.pending.take(blocked); ok {
		return info, true
	}
	return p.pending.take(blocked)
}

// signalsReady reports whether a signal the thread does not block is
// pending for it or its process: the unlocked look nextSignal starts
// with (only this thread changes its mask, so it is read unlocked).
func (t *Thread) signalsReady() bool {
	return (t.pending.unlocked()|t.Proc.pending.unlocked())&^(t.sigMask&^unblockable) != 0
}

// deliverSignals runs before each return to user mode (when signalsReady): default actions
// happen here, and a handled signal gets a frame on the user stack. It
// reports false if the thread must end.
func (t *Thread) deliverSignals() bool {
	for {
		if t.dying.Load() {
			return false
		}
		info, ok := t.nextSignal()
		if !ok {
			return true
		}
		sig := info.signo
		a := t.Proc.sig.get(sig)
		switch {
		case a.handler == sigDfl && isStopSignal(sig):
			t.Proc.stopGroup(sig)
			return true // the run loop parks the thread
		case sig == sigKILL || (a.handler == sigDfl && !ignoredByDefault(sig)):
			t.fatalSignal(sig)
			return false
		case a.handler == sigIgn || a.handler == sigDfl:
			continue
		}
		if t.restarting != 0 {
			t.restartForHandler(a)
		}
		if t.rseq.reg.Addr != 0 {
			// A signal aborts the critical section the thread is in,
			// before the frame saves its registers (Linux's
			// rseq_signal_deliver); a failure is a SIGSEGV, which a
			// second failure, in SIGSEGV's own delivery, makes fatal.
			t.rseq.event = true
			if err := t.rseqNotify(uint64(machine.CurrentCPU())); err != nil {
				if sig == sigSEGV {
					t.fatalSignal(sigSEGV)
					return false
				}
				t.faultSignal(sigSEGV, siKernel, 0)
				if t.dying.Load() { // no SIGSEGV handler: the process is ending
					return false
				}
			}
		}
		if err := t.setupFrame(info, a); err != nil {
			// No room for the frame: the program dies of SIGSEGV.
			t.fatalSignal(sigSEGV)
			return false
		}
		return true
	}
}

// Signal frame layout (x86-64 Linux rt_sigframe): return address, then
// struct ucontext (flags, link, stack_t, sigcontext, sigset), then
// siginfo; the FPU image (FXSAVE, 512 bytes) is placed below, 64-aligned.
const (
	ucFlags    = 0
	ucLink     = 8
	ucStack    = 16 // ss_sp, ss_flags(+pad), ss_size
	ucMcontext = 40 // 23 registers, then err, trapno, oldmask, cr2, fpstate, 8 reserved
	ucSigmask  = ucMcontext + 256
	ucSize     = ucSigmask + 8
	siSize     = 128
	fxSize     = 512 // the FXSAVE layout: x87 and SSE
	ucFPXState = 1   // uc_flags: the FPU area is in XSAVE format

	// The XSAVE format in a signal frame, as Linux writes it (struct
	// _fpx_sw_bytes in the FXSAVE area's software-reserved bytes, and a
	// second magic word after the XSAVE area), so programs that look at
	// or change their AVX state in a handler find it where they expect.
	fpxSW       = 464
	fpxMagic1   = 0x46505853
	fpxMagic2   = 0x46505845
	fpxMagic2Sz = 4
)

// minSigStackSize is AT_MINSIGSTKSZ: the most stack setupFrame takes
// below the top of an alternate signal stack, rounded up to 16 bytes as
// Linux's get_sigframe_size is: the FPU image with its 64-byte alignment,
// then the return address, ucontext and siginfo with the ABI's
// alignment (16-byte aligned, less 8, at the handler's entry).
func minSigStackSize() uint64 {
	fpu := uint64(fxSize)
	if machine.XFeatures() != 0 {
		fpu = machine.FPUSize + fpxMagic2Sz
	}
	return (fpu + 63 + 8 + ucSize + siSize + 15 + 8 + 15) &^ 15
}

// sigFPU is the FPU state a signal frame carries: the XSAVE image with
// Linux's markers when the CPUs save AVX state, else the FXSAVE image.
func sigFPU(r *machine.UserRegs) []byte {
	xf := machine.XFeatures()
	if xf == 0 {
		return append([]byte(nil), r.FPU()[:fxSize]...)
	}
	b := make([]byte, machine.FPUSize+fpxMagic2Sz)
	copy(b, r.FPU()[:])
	le := binary.LittleEndian
	sw := b[fpxSW:fxSize]
	clear(sw)
	le.PutUint32(sw[0:], fpxMagic1)
	le.PutUint32(sw[4:], machine.FPUSize+fpxMagic2Sz) // extended_size
	le.PutUint64(sw[8:], xf)                          // xfeatures
	le.PutUint32(sw[16:], machine.FPUSize)            // xstate_size
	le.PutUint32(b[machine.FPUSize:], fpxMagic2)
	return b
}

// restoreSigFPU loads the FPU state from a signal frame's area at fp. An
// area without the XSAVE markers (a program that built its own frame, or
// cleared them) restores x87 and SSE, and AVX state starts over.
func restoreSigFPU(s *mm.Space, r *machine.UserRegs, fp uint64) error {
	var fx [fxSize]byte
	if err := s.CopyIn(uintptr(fp), fx[:]); err != nil {
		return err
	}
	le := binary.LittleEndian
	if machine.XFeatures() != 0 && le.Uint32(fx[fpxSW:]) == fpxMagic1 && le.Uint32(fx[fpxSW+16:]) == machine.FPUSize {
		var img [machine.FPUSize + fpxMagic2Sz]byte
		if err := s.CopyIn(uintptr(fp), img[:]); err != nil {
			return err
		}
		if le.Uint32(img[machine.FPUSize:]) == fpxMagic2 {
			copy(r.FPU()[:], img[:machine.FPUSize])
			return nil
		}
	}
	copy(r.FPU()[:], fx[:])
	if machine.XFeatures() != 0 {
		le.PutUint64(r.FPU()[fxSize:], 3) // XSTATE_BV: x87 and SSE from the legacy area
	}
	return nil
}

// mcontext register order (struct sigcontext).
func mcontextRegs(t *Thread) []*uint64 {
	r := &t.regs
	return []*uint64{&r.R8, &r.R9, &r.R10, &r.R11, &r.R12, &r.R13, &r.R14, &r.R15,
		&r.RDI, &r.RSI, &r.RBP, &r.RBX, &r.RDX, &r.RAX, &r.RCX, &r.RSP, &r.RIP, &r.RFLAGS}
}

func (t *Thread) setupFrame(info sigInfo, a sigAction) error {
	sig := info.signo
	s := t.Proc.Space()
	r := &t.regs
	sp := r.RSP
	onAlt := t.altStack.size != 0 && sp > t.altStack.sp && sp <= t.altStack.sp+t.altStack.size
	if a.flags&saOnStack != 0 && t.altStack.size != 0 && t.altStack.flags&2 == 0 && !onAlt {
		sp = t.altStack.sp + t.altStack.size
	} else {
		sp -= 128 // red zone
	}
	fpu := sigFPU(r)
	sp = (sp - uint64(len(fpu))) &^ 63
	fpAddr := sp
	sp = ((sp - 8 - ucSize - siSize) &^ 15) - 8
	ucAddr := sp + 8
	infoAddr := ucAddr + ucSize

	saved := t.sigMask
	if t.inSuspend {
		saved, t.inSuspend = t.suspendOld, false
	}
	frame := make([]byte, 8+ucSize+siSize)
	le := binary.LittleEndian
	le.PutUint64(frame[0:], a.restorer)
	uc := frame[8:]
	if machine.XFeatures() != 0 {
		le.PutUint64(uc[ucFlags:], ucFPXState)
	}
	le.PutUint64(uc[ucStack:], t.altStack.sp)
	le.PutUint32(uc[ucStack+8:], uint32(t.altStack.flags))
	le.PutUint64(uc[ucStack+16:], t.altStack.size)
	for i, reg := range mcontextRegs(t) {
		le.PutUint64(uc[ucMcontext+8*i:], *reg)
	}
	le.PutUint64(uc[ucMcontext+18*8:], 0x33|0x2b<<48) // cs, gs, fs, ss
	le.PutUint64(uc[ucMcontext+19*8:], r.ErrCode)
	le.PutUint64(uc[ucMcontext+20*8:], r.Trap)
	le.PutUint64(uc[ucMcontext+21*8:], saved)
	le.PutUint64(uc[ucMcontext+23*8:], fpAddr)
	le.PutUint64(uc[ucSigmask:], saved)
	info.encode(frame[8+ucSize:])
	if info.isFault() {
		le.PutUint64(uc[ucMcontext+22*8:], info.addr) // cr2
	}
	if err := s.CopyOut(uintptr(fpAddr), fpu); err != nil {
		return err
	}
	if err := s.CopyOut(uintptr(sp), frame); err != nil {
		return err
	}
	r.RSP = sp
	r.RIP = a.handler
	r.RDI = uint64(sig)
	r.RSI = infoAddr
	r.RDX = ucAddr
	r.RAX = 0
	r.RFLAGS &^= 1<<8 | 1<<10 // TF, DF
	mask := t.sigMask | a.mask
	if a.flags&saNoDefer == 0 {
		mask |= bit(sig)
	}
	t.setSigMask(mask)
	if a.flags&saResetHand != 0 {
		h := t.Proc.sig
		h.mu.Lock()
		h.act[sig] = sigAction{}
		h.mu.Unlock()
	}
	return nil
}

// sigreturn restores the state saved by setupFrame from the ucontext at the
// stack pointer (the handler's RET popped the return address).
func (t *Thread) sigreturn() error {
	// A restart_syscall after the handler has no call to finish, as
	// Linux's rt_sigreturn resets restart_block.
	t.restartFn = nil
	s := t.Proc.Space()
	r := &t.regs
	uc := make([]byte, ucSize)
	if err := s.CopyIn(uintptr(r.RSP), uc); err != nil {
		return err
	}
	le := binary.LittleEndian
	saved := make([]uint64, 18)
	for i := range saved {
		saved[i] = le.Uint64(uc[ucMcontext+8*i:])
	}
	if fp := le.Uint64(uc[ucMcontext+23*8:]); fp != 0 {
		if err := restoreSigFPU(s, r, fp); err != nil {
			return err
		}
	}
	for i, reg := range mcontextRegs(t) {
		*reg = saved[i]
	}
	const userFlags = 0xCD5 // CF PF AF ZF SF DF OF
	r.RFLAGS = r.RFLAGS&userFlags | 0x202
	t.setSigMask(le.Uint64(uc[ucSigmask:]))
	return nil
}

// setSigMask makes m, less SIGKILL and SIGSTOP, the thread's blocked set.
// It changes under Proc.mu, by which other threads pick the thread for a
// process signal (signalTargetLocked). Process signals pending that it
// now blocks go to a thread that takes them, as Linux's
// __set_task_blocked does (retarget_shared_pending).
func (t *Thread) setSigMask(m uint64) {
	p := t.Proc
	m &^= unblockable
	var buf [4]*Thread
	p.mu.Lock()
	blocked := m &^ t.sigMask & p.pending.mask
	t.sigMask = m
	wake := p.retargetLocked(blocked, t, buf[:0])
	p.mu.Unlock()
	for _, w := range wake {
		w.wake()
	}
}

// retargetLocked appends to wake the threads, other than skip, that
// signalTargetLocked picks for the process signals in sigs, each once,
// for the caller to wake once p.mu is released: those signals waited for
// skip, which no longer takes them (Linux's retarget_shared_pending).
func (p *Process) retargetLocked(sigs uint64, skip *Thread, wake []*Thread) []*Thread {
	for ; sigs != 0; sigs &= sigs - 1 {
		w := p.signalTargetLocked(bits.TrailingZeros64(sigs) + 1)
		if w != nil && w != skip && !slices.Contains(wake, w) {
			wake = append(wake, w)
		}
	}
	return wake
}

// eRESTARTSYS is the kernel-internal result of a system call interrupted
// by a signal: it is restarted if the signal's handler has SA_RESTART (or
// no handler runs), else it fails with EINTR.
const eRESTARTSYS = 512

// eRESTARTNOINTR is the result of a call that is restarted after any
// signal, handler or not, SA_RESTART or not (FUTEX_LOCK_PI).
const eRESTARTNOINTR = 513

// eRESTARTNOHAND is the result of a call restarted only if no handler
// runs (a stop signal, an ignored one), with any handler EINTR whatever
// SA_RESTART says: a sleep to an absolute time, which the restart
// repeats unchanged.
const eRESTARTNOHAND = 514

// eRESTARTBLOCK (Linux's ERESTART_RESTARTBLOCK) is eRESTARTNOHAND for a
// call that cannot be made again as it was (a relative sleep: the same
// arguments would sleep again in full): the call leaves t.restartFn to
// finish it, and the thread goes back into user mode on the SYSCALL
// instruction with restart_syscall's number, which runs it.
const eRESTARTBLOCK = 516

func (t *Thread) restartOrEINTR() int64 { return -eRESTARTSYS }

// sysRestartSyscall is restart_syscall(2): it finishes the call an
// eRESTARTBLOCK left (t.restartFn), else EINTR (Linux's
// do_no_restart_syscall).
func sysRestartSyscall(t *Thread, a *[6]uint64) (int64, bool) {
	fn := t.restartFn
	t.restartFn = nil
	if fn == nil {
		return -eINTR, false
	}
	return fn(t), false
}

// restartForHandler settles the restart of the interrupted call the
// registers point back at (Thread.restarting), now that a handler is
// about to run (Linux's handle_signal): the call is made again after
// the handler for eRESTARTNOINTR, and for eRESTARTSYS under SA_RESTART;
// otherwise it fails with EINTR.
func (t *Thread) restartForHandler(a sigAction) {
	code := t.restarting
	t.restarting = 0
	if code == -eRESTARTNOINTR || code == -eRESTARTSYS && a.flags&saRestart != 0 {
		return
	}
	t.restartFn = nil
	intr := int64(-eINTR)
	t.regs.RIP += 2 // past the SYSCALL again
	t.regs.RAX = uint64(intr)
}
