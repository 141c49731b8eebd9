package vfs

// Signal-driven I/O: fcntl's F_SETOWN, F_SETOWN_EX and F_SETSIG name who
// is signalled for an open file description and with which signal, and
// O_ASYNC turns the signals on. The owner also receives a lease's break
// notice (lease.go), O_ASYNC or not.
//
// Rather than a hook in every kind of file (Linux's kill_fasync calls in
// pipes, sockets and terminals), the VFS watches the file's readiness
// through the same queue poll and epoll use: while O_ASYNC is on, a
// goroutine waits for the file's notifications and, at each, sends
// POLL_IN while the file is readable (or hung up, or in error) and
// POLL_OUT when it becomes writable. Only the kinds of file that have a
// fasync operation on Linux signal (pipes and FIFOs, sockets,
// terminals: they implement AsyncIO); on the others (regular files,
// eventfd, epoll, timerfd, signalfd, pidfd) O_ASYNC does not stick and
// nothing is sent, as on Linux. Unlike Linux's, the signal follows the
// event asynchronously (soon, not before the system call that caused it
// returns): notifiers may hold locks that readiness takes.

import (
	"sync"

	"shortbread/kernel/abi/linux"
)

// AsyncIO is implemented by the files that signal their owner under
// O_ASYNC (Linux's files with an f_op->fasync).
type AsyncIO interface{ AsyncIO() }

// SigOwner is who receives a file's signals: a thread, a process or a
// process group (Kind linux.F_OWNER_TID, F_OWNER_PID, F_OWNER_PGRP), or
// nobody (ID 0). UID and EUID are the setter's real and effective user
// IDs: the signal goes only to targets those could signal (sigio_perm).
type SigOwner struct {
	Kind      int32
	ID        int32
	UID, EUID uint32
}

// SigioSender delivers one signal for a file to its owner: sig is the
// F_SETSIG signal (0: a plain SIGIO), code the si_code (linux.POLL_IN,
// ...), band the si_band bits, fd the descriptor O_ASYNC was set through
// (or the lease was taken through). The process layer provides it.
type SigioSender func(o SigOwner, sig int, code int32, band uint32, fd int32)

// sendSigio is set once at start-up (SetSigioSender) and read without a
// lock afterwards.
var sendSigio SigioSender

// SetSigioSender installs the process layer's signal delivery. Call it
// before any file is opened.
func SetSigioSender(s SigioSender) { sendSigio = s }

// fileAsync is an open file's signal-driven I/O state, made on first use.
type fileAsync struct {
	mu    sync.Mutex
	owner SigOwner // protected by mu
	sig   int      // F_SETSIG; protected by mu
	fd    int32    // si_fd for O_ASYNC signals; protected by mu
	stop  chan struct{}
}

func (f *OpenFile) asyncState() *fileAsync {
	if a := f.async.Load(); a != nil {
		return a
	}
	f.async.CompareAndSwap(nil, &fileAsync{})
	return f.async.Load()
}

// Owner returns the file's signal owner (F_GETOWN, F_GETOWN_EX).
func (f *OpenFile) Owner() SigOwner {
	a := f.async.Load()
	if a == nil {
		return SigOwner{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.owner
}

// SetOwner sets the file's signal owner (F_SETOWN, F_SETOWN_EX).
func (f *OpenFile) SetOwner(o SigOwner) {
	a := f.asyncState()
	a.mu.Lock()
	a.owner = o
	a.mu.Unlock()
}

// setOwnerIfNone makes o the owner unless one is set (a lease's holder).
func (f *OpenFile) setOwnerIfNone(o SigOwner) {
	a := f.asyncState()
	a.mu.Lock()
	if a.owner.ID == 0 {
		a.owner = o
	}
	a.mu.Unlock()
}

// clearOwner forgets the owner and the F_SETSIG signal, as the end of a
// lease does on Linux (lease_modify: f_delown, signum 0).
func (f *OpenFile) clearOwner() {
	if a := f.async.Load(); a != nil {
		a.mu.Lock()
		a.owner, a.sig = SigOwner{}, 0
		a.mu.Unlock()
	}
}

// Sig returns the F_SETSIG signal (0: SIGIO without details).
func (f *OpenFile) Sig() int {
	a := f.async.Load()
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sig
}

// SetSig sets the signal F_SETSIG names; the caller checked its range.
func (f *OpenFile) SetSig(sig int) {
	a := f.asyncState()
	a.mu.Lock()
	a.sig = sig
	a.mu.Unlock()
}

// signalOwner sends one signal to the owner, if there is one.
func (f *OpenFile) signalOwner(code int32, fd int32) {
	a := f.async.Load()
	if a == nil || sendSigio == nil {
		return
	}
	a.mu.Lock()
	o, sig := a.owner, a.sig
	if fd < 0 {
		fd = a.fd
	}
	a.mu.Unlock()
	if o.ID != 0 {
		sendSigio(o, sig, code, pollBand(code), fd)
	}
}

// pollBand is the si_band of a POLL_* code (band_table in fs/fcntl.c).
func pollBand(code int32) uint32 {
	switch code {
	case linux.POLL_IN, linux.POLL_MSG:
		return linux.POLLIN | linux.POLLRDNORM | linux.POLLMSG
	case linux.POLL_OUT:
		return linux.POLLOUT | linux.POLLWRNORM | linux.POLLWRBAND
	case linux.POLL_ERR:
		return linux.POLLERR
	case linux.POLL_PRI:
		return linux.POLLPRI | linux.POLLRDBAND
	case linux.POLL_HUP:
		return linux.POLLHUP | linux.POLLERR
	}
	return 0
}

// SetStatusFlags is F_SETFL through descriptor fd: it changes the status
// flags like SetFlags and, when O_ASYNC turns on, starts signalling the
// owner on readiness (si_fd fd); when it turns off, stops. Setting it
// while on only records the new fd, as Linux's fasync_helper does.
//
// O_ASYNC is set only on files that can signal (AsyncIO): Linux leaves
// the bit to a file's fasync operation, so F_GETFL never shows it on the
// others.
func (f *OpenFile) SetStatusFlags(flags uint32, fd int) {
	if !f.CanSignal() {
		flags &^= linux.O_ASYNC
	}
	a := f.asyncState()
	a.mu.Lock()
	defer a.mu.Unlock()
	was := f.Flags()&linux.O_ASYNC != 0
	f.SetFlags(flags)
	on := flags&linux.O_ASYNC != 0
	if on {
		a.fd = int32(fd)
	}
	switch {
	case on && !was && a.stop == nil:
		if f.CanSignal() {
			a.stop = make(chan struct{})
			ch := make(chan struct{}, 1)
			go f.watchAsync(ch, f.Watch(WakeChan(ch)), a.stop)
		}
	case !on && a.stop != nil:
		close(a.stop)
		a.stop = nil
	}
}

// CanSignal reports whether O_ASYNC makes f signal its owner (FIOASYNC
// on another file is ENOTTY).
func (f *OpenFile) CanSignal() bool {
	_, async := f.file.(AsyncIO)
	_, poll := f.file.(Poller)
	return async && poll
}

// stopAsync ends the readiness watch when the file is released.
func (f *OpenFile) stopAsync() {
	a := f.async.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.stop != nil {
		close(a.stop)
		a.stop = nil
	}
	a.mu.Unlock()
}

// watchAsync signals the owner at each readiness notification of f
// until stop is closed.
func (f *OpenFile) watchAsync(ch chan struct{}, cancel func(), stop chan struct{}) {
	defer cancel()
	const in = linux.POLLIN | linux.POLLRDNORM
	prev := f.Readiness()
	for {
		select {
		case <-stop:
			return
		case <-ch:
		}
		select {
		case <-stop: // O_ASYNC went off, or the file, while we woke
			return
		default:
		}
		r := f.Readiness()
		switch {
		case r&in != 0:
			f.signalOwner(linux.POLL_IN, -1)
		case r&linux.POLLHUP != 0:
			f.signalOwner(linux.POLL_HUP, -1)
		case r&linux.POLLERR != 0:
			f.signalOwner(linux.POLL_ERR, -1)
		}
		if r&linux.POLLOUT != 0 && prev&linux.POLLOUT == 0 {
			f.signalOwner(linux.POLL_OUT, -1)
		}
		prev = r
	}
}
