package proc

// Signals for open files (fcntl F_SETOWN, O_ASYNC, lease breaks): the VFS
// decides when one is due (vfs/async.go, vfs/lease.go); this file finds
// the owner and delivers it with Linux's rules (send_sigio in
// fs/fcntl.c): only to targets the owner's setter could signal, a
// F_SETSIG signal carrying si_band and si_fd, and a plain SIGIO when no
// signal was set or the real-time queue is full.

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func init() { vfs.SetSigioSender(sendSigio) }

func sendSigio(o vfs.SigOwner, sig int, code int32, band uint32, fd int32) {
	switch o.Kind {
	case linux.F_OWNER_TID:
		if t := lookupThread(int(o.ID)); t != nil && sigioPerm(o, t.Proc) {
			sigioTo(t.Proc, t, sig, code, band, fd)
		}
	case linux.F_OWNER_PID:
		// F_SETOWN may name any thread: its process is signalled.
		if t := lookupThread(int(o.ID)); t != nil && sigioPerm(o, t.Proc) {
			sigioTo(t.Proc, nil, sig, code, band, fd)
		}
	case linux.F_OWNER_PGRP:
		groupSendMu.RLock() // members' forks pass it on (forkWatch)
		defer groupSendMu.RUnlock()
		var group []*Process
		tableMu.Lock()
		for _, p := range table {
			if p.pgid == int(o.ID) {
				group = append(group, p)
			}
		}
		tableMu.Unlock()
		for _, p := range group {
			if sigioPerm(o, p) {
				if info, sent := sigioTo(p, nil, sig, code, band, fd); sent {
					p.noteGroupSignal(info)
				}
			}
		}
	}
}

// sigioPerm reports whether the owner's setter may signal p (sigio_perm).
func sigioPerm(o vfs.SigOwner, p *Process) bool {
	p.mu.Lock()
	ruid, suid := p.cred.ruid, p.cred.suid
	p.mu.Unlock()
	return o.EUID == 0 || o.EUID == suid || o.EUID == ruid || o.UID == suid || o.UID == ruid
}

// sigioTo sends the signal to thread t, or to process p when t is nil,
// and reports what it sent.
func sigioTo(p *Process, t *Thread, sig int, code int32, band uint32, fd int32) (sigInfo, bool) {
	shielded := false
	send := func(info sigInfo) int64 {
		if p.shielded(info.signo) {
			shielded = true // dropped, as sent: no fallback to SIGIO
			return 0
		}
		if t != nil {
			return t.sendSignal(info)
		}
		return p.sendSignal(info)
	}
	if sig != 0 {
		// siginfo's _sigpoll: si_band (long) at 16, si_fd at 24.
		raw := make([]byte, siSize)
		binary.LittleEndian.PutUint64(raw[16:], uint64(band))
		binary.LittleEndian.PutUint32(raw[24:], uint32(fd))
		info := sigInfo{signo: sig, code: code, raw: raw}
		if send(info) == 0 {
			return info, !shielded
		}
	}
	info := sigInfo{signo: sigIO, code: siKernel}
	return info, send(info) == 0 && !shielded
}

// ownerExists reports whether id names something F_SETOWN may point at:
// a thread or process, or a process group (find_vpid).
func ownerExists(id int32) bool {
	if lookupThread(int(id)) != nil {
		return true
	}
	tableMu.Lock()
	defer tableMu.Unlock()
	for _, p := range table {
		if p.pgid == int(id) {
			return true
		}
	}
	return false
}
