package tty

// The open-file side of terminals: File for the console and pty slaves,
// MasterFile for pty masters, and Of for the ioctls that act on them.

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// File is an open terminal: the console or a pseudo-terminal's slave.
type File struct {
	T   *TTY
	pty *Pty // nil for the console
}

// NewFile returns an open file on t (the console: no pty behind it).
func NewFile(t *TTY) *File { return &File{T: t} }

// Pty returns the pair a slave belongs to (nil for the console).
func (f *File) Pty() *Pty { return f.pty }

func (f *File) Read(b vfs.Blocking, p []byte, _ int64) (int, error) { return f.T.Read(b, p) }

func (f *File) Write(b vfs.Blocking, p []byte, _ int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return f.T.Write(b, p)
}

// Release closes a slave.
func (f *File) Release() {
	if f.pty != nil {
		f.pty.closeSlave()
	}
}

// Readiness reports POLLIN when a read would not block and POLLOUT when
// a write would not; a hung-up terminal reports everything, as Linux's
// hung_up_tty_poll.
// AsyncIO: O_ASYNC signals readiness changes of a terminal (vfs.AsyncIO),
// as Linux's tty_fasync does.
func (*File) AsyncIO() {}

func (f *File) Readiness() uint32 {
	if f.T.HungUp() {
		return linux.POLLIN | linux.POLLOUT | linux.POLLERR | linux.POLLHUP | linux.POLLRDNORM | linux.POLLWRNORM
	}
	m := uint32(0)
	if f.T.Readable() {
		m |= linux.POLLIN | linux.POLLRDNORM
	}
	if f.T.Writable() {
		m |= linux.POLLOUT | linux.POLLWRNORM
	}
	return m
}

// Watch registers ch for readiness changes.
func (f *File) Watch(wake vfs.Wake) func() { return f.T.q.Watch(wake) }

// MasterFile is an open pseudo-terminal master.
type MasterFile struct{ P *Pty }

// Master returns the pair (for Of, also through types that embed a
// MasterFile).
func (f *MasterFile) Master() *Pty { return f.P }

func (f *MasterFile) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return f.P.readMaster(b, p)
}

func (f *MasterFile) Write(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return f.P.writeMaster(b, p)
}

// Release closes the master: the slave hangs up.
func (f *MasterFile) Release() { f.P.closeMaster() }

// Readiness is the master's poll state.
// AsyncIO: a pty master signals too (vfs.AsyncIO).
func (*MasterFile) AsyncIO() {}

func (f *MasterFile) Readiness() uint32 { return f.P.masterReadiness() }

// Watch registers ch for readiness changes of either side.
func (f *MasterFile) Watch(wake vfs.Wake) func() { return f.P.q.Watch(wake) }

// Of returns the terminal an open file is: the TTY of a console or slave
// file, or the slave TTY and the pair of a master.
func Of(f *vfs.OpenFile) (t *TTY, master *Pty, ok bool) {
	switch x := f.Impl().(type) {
	case *File:
		return x.T, nil, true
	case interface{ Master() *Pty }:
		p := x.Master()
		return p.Slave, p, true
	}
	return nil, nil, false
}
