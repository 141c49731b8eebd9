package proc

// Terminals as processes see them (tty_io.c and tty_jobctrl.c in
// Linux): the controlling terminal of a session, acquired by a session
// leader's open of a terminal or TIOCSCTTY and reached through /dev/tty;
// job control, where a background process group that reads its
// controlling terminal (or writes it under TOSTOP, or changes its
// settings) gets SIGTTIN or SIGTTOU; and the terminal ioctls. The line
// discipline and pseudo-terminals themselves are package tty's.

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devpts"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// Signals delivers the signals terminals raise (^C, SIGWINCH, hangup).
type Signals struct{}

// SignalGroup sends sig to every process in process group pgrp.
func (Signals) SignalGroup(pgrp, sig int) {
	groupSendMu.RLock() // members' forks pass it on (forkWatch)
	defer groupSendMu.RUnlock()
	tableMu.Lock()
	var targets []*Process
	for _, p := range table {
		if p.pgid == pgrp {
			targets = append(targets, p)
		}
	}
	tableMu.Unlock()
	for _, p := range targets {
		p.signal(sig)
		p.noteGroupSignal(sigInfo{signo: sig, code: siKernel})
	}
}

// SignalProcess sends sig to process pid.
func (Signals) SignalProcess(pid, sig int) {
	if p := lookup(pid); p != nil {
		p.signal(sig)
	}
}

// controllingTTY returns the process's controlling terminal, or nil: the
// terminal it acquired, as long as that still belongs to its session
// (a hangup or the leader's exit takes it away from every member at
// once).
func (p *Process) controllingTTY() *tty.TTY {
	p.mu.Lock()
	c, sid := p.ctty, p.sid
	p.mu.Unlock()
	if c == nil || c.Session() != sid {
		return nil
	}
	return c
}

// ControllingTerminal opens /dev/tty for process pid: its controlling
// terminal, ENXIO when it has none.
func ControllingTerminal(pid int, _ uint32) (vfs.File, error) {
	p := lookup(pid)
	if p == nil {
		return nil, linux.ENXIO
	}
	c := p.controllingTTY()
	if c == nil {
		return nil, linux.ENXIO
	}
	return c.Open()
}

// acquireTTY makes term the controlling terminal of the calling process
// if it is a session leader with none and term is no session's: the
// effect of opening a terminal without O_NOCTTY.
func (t *Thread) acquireTTY(term *tty.TTY) {
	p := t.Proc
	if p.controllingTTY() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sid != p.PID {
		return
	}
	if term.Control(p.sid, p.pgid, false) {
		p.ctty = term
	}
}

// openedFile is called for every file open(2) makes: a session leader
// opening a terminal (not /dev/console, not a pseudo-terminal master)
// without O_NOCTTY acquires it.
func (t *Thread) openedFile(f *vfs.OpenFile, flags uint32) {
	if flags&linux.O_NOCTTY != 0 {
		return
	}
	if file, ok := f.Impl().(*tty.File); ok && file.Pty() != nil {
		t.acquireTTY(file.T)
	}
}

// dropCTTY is the controlling terminal's side of a session leader's
// exit: the foreground group gets SIGHUP and SIGCONT, and the session
// loses the terminal.
func (p *Process) dropCTTY() {
	p.mu.Lock()
	c, sid := p.ctty, p.sid
	leader := sid == p.PID
	p.ctty = nil
	p.mu.Unlock()
	if leader && c != nil {
		c.Disassociate(sid, true)
	}
}

// jobControl applies job control to a read (SIGTTIN) or write or
// settings change (SIGTTOU) of term by a process in the background of
// it, its controlling terminal: the process's group gets the signal and
// the call is restarted after it, unless the signal is blocked or
// ignored (the call goes on; a read fails with EIO) or the group is
// orphaned (EIO), as Linux's __tty_check_change. It returns 0 to go on.
func (t *Thread) jobControl(term *tty.TTY, sig int) int64 {
	p := t.Proc
	if p.controllingTTY() != term {
		return 0
	}
	fg := term.Foreground()
	p.mu.Lock()
	pgid := p.pgid
	ignored := t.sigMask&bit(sig) != 0 || p.sig.get(sig).handler == sigIgn
	p.mu.Unlock()
	if fg == 0 || fg == pgid {
		return 0
	}
	if ignored {
		if sig == sigTTIN {
			return errno(linux.EIO)
		}
		return 0
	}
	if groupOrphaned(pgid) {
		return errno(linux.EIO)
	}
	Signals{}.SignalGroup(pgid, sig)
	return t.restartOrEINTR()
}

// groupOrphaned reports whether process group pgid is orphaned: no
// member has a parent in another group of the same session (POSIX; such
// a group has no shell to continue it if it stopped).
func groupOrphaned(pgid int) bool {
	tableMu.Lock()
	defer tableMu.Unlock()
	for _, p := range table {
		p.mu.Lock()
		pg, sid, parent, state := p.pgid, p.sid, p.parent, p.state
		p.mu.Unlock()
		if pg != pgid || state != procRunning || parent == nil {
			continue
		}
		parent.mu.Lock()
		ppg, psid := parent.pgid, parent.sid
		parent.mu.Unlock()
		if ppg != pgid && psid == sid {
			return false
		}
	}
	return true
}

// terminalIO applies job control before a read or write of f, if f is a
// terminal (not a pseudo-terminal master). It returns 0 to go on.
func (t *Thread) terminalIO(f *vfs.OpenFile, write bool) int64 {
	file, ok := f.Impl().(*tty.File)
	if !ok {
		return 0 // most reads and writes: no call beyond this inlined test
	}
	return t.terminalJobControl(file, write)
}

// terminalJobControl is terminalIO's check for a terminal file.
func (t *Thread) terminalJobControl(file *tty.File, write bool) int64 {
	if !write {
		return t.jobControl(file.T, sigTTIN)
	}
	if file.T.Termios().Lflag&tty.TOSTOP != 0 {
		return t.jobControl(file.T, sigTTOU)
	}
	return 0
}

// Terminal ioctls (include/uapi/asm-generic/ioctls.h).
const (
	tcgets      = 0x5401
	tcsets      = 0x5402
	tcsetsw     = 0x5403
	tcsetsf     = 0x5404
	tcsbrk      = 0x5409
	tcxonc      = 0x540A
	tcflsh      = 0x540B
	tiocsctty   = 0x540E
	tiocgpgrp   = 0x540F
	tiocspgrp   = 0x5410
	tiocoutq    = 0x5411
	tiocgwinsz  = 0x5413
	tiocswinsz  = 0x5414
	fionread    = 0x541B
	tiocpkt     = 0x5420
	tiocnotty   = 0x5422
	tcsbrkp     = 0x5425
	tiocgsid    = 0x5429
	tiocgptn    = 0x80045430
	tiocsptlck  = 0x40045431
	tiocgdev    = 0x80045432
	tiocsig     = 0x40045436
	tiocgpkt    = 0x80045438
	tiocgptlck  = 0x80045439
	tiocgptpeer = 0x5441
)

// terminalIoctl serves the ioctls of a terminal: term is the TTY (for a
// pseudo-terminal master, its slave, which the termios, window-size and
// process-group ioctls act on, as on Linux), master the pair when f is a
// master.
func (t *Thread) terminalIoctl(f *vfs.OpenFile, term *tty.TTY, master *tty.Pty, cmd uint64, arg uintptr) int64 {
	s := t.Proc.Space()
	put32 := func(v uint32) int64 {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		return errno(s.CopyOut(arg, b[:]))
	}
	get32 := func() (int32, int64) {
		var b [4]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return 0, errno(err)
		}
		return int32(binary.LittleEndian.Uint32(b[:])), 0
	}
	// Settings changes from the background of the controlling terminal
	// raise SIGTTOU (tty_check_change), through the master too.
	change := func() int64 { return t.jobControl(term, sigTTOU) }
	switch cmd {
	case tcgets:
		b := term.Termios().Encode()
		return errno(s.CopyOut(arg, b[:]))
	case tcsets, tcsetsw, tcsetsf:
		var b [tty.TermiosSize]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		if r := change(); r != 0 {
			return r
		}
		term.SetTermios(tty.DecodeTermios(b[:]), cmd == tcsetsf)
		return 0
	case tcsbrk, tcsbrkp, tcxonc:
		// Output is delivered as it is written: there is nothing to
		// drain, and no line to break or flow to stop.
		return 0
	case tcflsh:
		if arg > 2 {
			return -eINVAL
		}
		if r := change(); r != 0 {
			return r
		}
		in, out := arg != 1, arg != 0 // TCIFLUSH 0, TCOFLUSH 1, TCIOFLUSH 2
		if master != nil {
			master.MasterFlush(in, out)
		} else {
			term.Flush(in, out)
		}
		return 0
	case tiocgwinsz:
		b := term.WindowSize().Encode()
		return errno(s.CopyOut(arg, b[:]))
	case tiocswinsz:
		var b [tty.WinsizeSize]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		term.SetWindowSize(tty.DecodeWinsize(b[:]))
		return 0
	case tiocgpgrp:
		if master == nil && t.Proc.controllingTTY() != term {
			return -eNOTTY
		}
		return put32(uint32(term.Foreground()))
	case tiocspgrp:
		return t.setForeground(term, get32, change)
	case tiocgsid:
		if master == nil && t.Proc.controllingTTY() != term {
			return -eNOTTY
		}
		sid := term.Session()
		if sid == 0 {
			return -eNOTTY
		}
		return put32(uint32(sid))
	case tiocsctty:
		return t.setCTTY(term, arg)
	case tiocnotty:
		p := t.Proc
		if master != nil || p.controllingTTY() != term {
			return -eNOTTY
		}
		p.dropCTTY()
		return 0
	case fionread:
		if master != nil {
			return put32(uint32(master.MasterBuffered()))
		}
		return put32(uint32(term.Buffered()))
	case tiocoutq:
		return put32(0)
	}
	if master != nil {
		return t.ptyMasterIoctl(f, master, cmd, arg, put32, get32)
	}
	return -eNOTTY
}

// setForeground is TIOCSPGRP: only on the caller's controlling terminal
// (or its master), to a group of its session.
func (t *Thread) setForeground(term *tty.TTY, get32 func() (int32, int64), change func() int64) int64 {
	p := t.Proc
	if r := change(); r != 0 {
		return r
	}
	pg, e := get32()
	if e != 0 {
		return e
	}
	if p.controllingTTY() != term {
		return -eNOTTY
	}
	if pg < 0 {
		return -eINVAL
	}
	p.mu.Lock()
	sid := p.sid
	p.mu.Unlock()
	if !groupExists(int(pg)) {
		return -eSRCH
	}
	if !groupInSession(int(pg), sid) {
		return -ePERM
	}
	term.SetForeground(int(pg))
	return 0
}

// groupExists reports whether process group pgid has a live member.
func groupExists(pgid int) bool {
	tableMu.Lock()
	defer tableMu.Unlock()
	for _, p := range table {
		p.mu.Lock()
		ok := p.pgid == pgid && p.state != procReaped
		p.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// setCTTY is TIOCSCTTY: a session leader without a controlling terminal
// takes term (on a master, its slave, as Linux's); one that is another
// session's only with arg 1 and root (which takes it from that session).
func (t *Thread) setCTTY(term *tty.TTY, arg uintptr) int64 {
	p := t.Proc
	cur := p.controllingTTY()
	p.mu.Lock()
	sid, pgid, leader := p.sid, p.pgid, p.sid == p.PID
	root := p.cred.euid == 0
	p.mu.Unlock()
	if leader && cur == term {
		return 0
	}
	if !leader || cur != nil {
		return -ePERM
	}
	steal := arg == 1 && root
	if other := term.Session(); other != 0 && other != sid && !steal {
		return -ePERM
	}
	if !term.Control(sid, pgid, steal) {
		return -ePERM
	}
	p.mu.Lock()
	p.ctty = term
	p.mu.Unlock()
	return 0
}

// ptyMasterIoctl serves the ioctls only a pseudo-terminal master has.
func (t *Thread) ptyMasterIoctl(f *vfs.OpenFile, m *tty.Pty, cmd uint64, arg uintptr, put32 func(uint32) int64, get32 func() (int32, int64)) int64 {
	switch cmd {
	case tiocgptn:
		return put32(uint32(m.Index))
	case tiocsptlck:
		v, e := get32()
		if e != 0 {
			return e
		}
		m.SetLocked(v != 0)
		return 0
	case tiocgptlck:
		v := uint32(0)
		if m.Locked() {
			v = 1
		}
		return put32(v)
	case tiocgdev:
		return put32(uint32(linux.MakeDev(devpts.SlaveMajor, uint32(m.Index))))
	case tiocpkt:
		v, e := get32()
		if e != 0 {
			return e
		}
		m.SetPacket(v != 0)
		return 0
	case tiocgpkt:
		v := uint32(0)
		if m.Packet() {
			v = 1
		}
		return put32(v)
	case tiocsig:
		sig := int(arg)
		if sig <= 0 || sig > nSig {
			return -eINVAL
		}
		if fg := m.Slave.Foreground(); fg > 0 {
			Signals{}.SignalGroup(fg, sig)
		}
		return 0
	case tiocgptpeer:
		flags := uint32(arg)
		if flags&^(linux.O_ACCMODE|linux.O_NOCTTY|linux.O_NONBLOCK|linux.O_CLOEXEC) != 0 {
			return -eINVAL
		}
		sf, err := devpts.OpenPeer(f, flags&^(linux.O_NOCTTY|linux.O_CLOEXEC))
		if err != nil {
			return errno(err)
		}
		defer sf.DecRef()
		fd, err := t.Proc.files.Install(sf, flags&linux.O_CLOEXEC != 0)
		if err != nil {
			return errno(err)
		}
		t.openedFile(sf, flags)
		return int64(fd)
	}
	return -eNOTTY
}

// encodeTTYDev is the tty_nr of /proc/<pid>/stat: the device number in
// the kernel's new_encode_dev layout (minor's low byte, major, then the
// minor's high bits).
func encodeTTYDev(dev uint64) int {
	major, minor := linux.DevMajor(dev), linux.DevMinor(dev)
	return int(minor&0xff | major<<8 | (minor&^0xff)<<12)
}
