package tty

// Pseudo-terminals (pty(7)): a pair of a master, which a terminal
// emulator or a remote shell holds, and a slave, a TTY like the console
// whose programs cannot tell the difference. What the master writes is
// the slave's input, through the line discipline; what programs write
// to the slave, after output processing, is what the master reads. The
// master has no line discipline of its own (Linux gives it a raw one).
//
// Lifetime, as Linux's: closing the master hangs the slave up (its
// readers see end of file, its writers EIO, its session leader SIGHUP);
// closing the last slave file makes master reads fail with EIO once the
// queued output is read. The pair is released, and its index freed, when
// both sides are closed.

import (
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// SlaveMajor is the device major of pseudo-terminal slaves, /dev/pts/N
// (Documentation/admin-guide/devices.txt).
const SlaveMajor = 136

// outLimit bounds the slave's output the master has not read: slave
// writes wait past it.
const outLimit = 16 << 10

// Pty is one pseudo-terminal pair.
type Pty struct {
	Index int
	Slave *TTY
	q     vfs.Queue // both sides' readiness

	mu          sync.Mutex
	outq        []byte // slave output for the master; protected by mu
	locked      bool   // slave opens fail with EIO (TIOCSPTLCK); protected by mu
	masterOpen  bool   // protected by mu
	slaves      int    // open slave files; protected by mu
	slaveClosed bool   // the open slave files dropped to 0 (TTY_OTHER_CLOSED): master reads fail with EIO (before the first open they wait); protected by mu
	released    bool   // protected by mu
	packet      bool   // packet mode (TIOCPKT); protected by mu
	pktStatus   uint8  // packet-mode events not yet read (Pkt*); protected by mu
	release     func() // called once, when both sides are closed
}

// NewPty makes a pair with the given index, locked (unlockpt(3) must
// unlock it before the slave can be opened) and with its master open.
// release runs when the master and every slave file are closed.
func NewPty(index int, sig Signaller, release func()) *Pty {
	p := &Pty{Index: index, locked: true, masterOpen: true, release: release}
	p.Slave = New(ptyOutput{p}, sig, &p.q)
	p.Slave.pty = p
	p.Slave.SetDevice(linux.MakeDev(SlaveMajor, uint32(index)))
	// Linux's pty slaves start with no window size.
	return p
}

// ptyOutput queues the slave's output for the master.
type ptyOutput struct{ p *Pty }

func (o ptyOutput) Output(b []byte) {
	o.p.mu.Lock()
	if o.p.masterOpen {
		o.p.outq = append(o.p.outq, b...)
	}
	o.p.mu.Unlock()
	o.p.q.Notify()
}

func (o ptyOutput) WaitRoom(b vfs.Blocking) error {
	return vfs.WaitFor(&o.p.q, b, o.HasRoom)
}

func (o ptyOutput) HasRoom() bool {
	o.p.mu.Lock()
	defer o.p.mu.Unlock()
	return len(o.p.outq) < outLimit || !o.p.masterOpen
}

// Packet-mode status bits (TIOCPKT_* in include/uapi/asm-generic/ioctls.h):
// a master read returns one of these bytes alone when events are pending,
// else a 0 byte (TIOCPKT_DATA) before the data.
const (
	PktData       = 0
	PktFlushRead  = 1
	PktFlushWrite = 2
	PktNoStop     = 16
	PktDoStop     = 32
)

// SetPacket turns packet mode on or off (TIOCPKT); turning it on clears
// stale events.
func (p *Pty) SetPacket(on bool) {
	p.mu.Lock()
	if on && !p.packet {
		p.pktStatus = 0
	}
	p.packet = on
	p.mu.Unlock()
}

// Packet reports whether packet mode is on (TIOCGPKT).
func (p *Pty) Packet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.packet
}

// packetEvent records events for a packet-mode master (set, after
// clearing clear).
func (p *Pty) packetEvent(set, clear uint8) {
	p.mu.Lock()
	if !p.packet || set == 0 {
		p.mu.Unlock()
		return
	}
	p.pktStatus = p.pktStatus&^clear | set
	p.mu.Unlock()
	p.q.Notify()
}

// discardOutput drops the slave's output the master has not read.
func (p *Pty) discardOutput() {
	p.mu.Lock()
	p.outq = nil
	p.mu.Unlock()
	p.q.Notify()
}

// MasterFlush is TCFLSH on the master: in discards what the master has
// not read, out what it wrote that the slave has not.
func (p *Pty) MasterFlush(in, out bool) {
	if in {
		p.discardOutput()
	}
	if out {
		p.Slave.mu.Lock()
		p.Slave.input, p.Slave.line, p.Slave.eofs = nil, nil, nil
		p.Slave.mu.Unlock()
		p.q.Notify()
	}
}

// SetLocked locks or unlocks the slave (TIOCSPTLCK).
func (p *Pty) SetLocked(l bool) {
	p.mu.Lock()
	p.locked = l
	p.mu.Unlock()
}

// Locked reports whether the slave is locked (TIOCGPTLCK).
func (p *Pty) Locked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.locked
}

// OpenSlave opens the slave: EIO while it is locked or once the master
// has closed.
func (p *Pty) OpenSlave() (*File, error) { return p.openSlave(true) }

func (p *Pty) openSlave(checkLock bool) (*File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.locked && checkLock || !p.masterOpen {
		return nil, linux.EIO
	}
	p.slaves++
	p.slaveClosed = false
	return &File{T: p.Slave, pty: p}, nil
}

// MasterFile returns the open-file side of the master, which NewPty
// opened.
func (p *Pty) MasterFile() *MasterFile { return &MasterFile{P: p} }

func (p *Pty) closeSlave() {
	p.mu.Lock()
	p.slaves--
	if p.slaves == 0 {
		p.slaveClosed = true
	}
	rel := p.releaseLocked()
	p.mu.Unlock()
	p.q.Notify()
	if rel != nil {
		rel()
	}
}

func (p *Pty) closeMaster() {
	p.mu.Lock()
	p.masterOpen = false
	p.outq = nil
	rel := p.releaseLocked()
	p.mu.Unlock()
	p.Slave.Hangup()
	if rel != nil {
		rel()
	}
}

// releaseLocked returns the release function if both sides are now
// closed and it has not run yet.
func (p *Pty) releaseLocked() func() {
	if p.masterOpen || p.slaves > 0 || p.released {
		return nil
	}
	p.released = true
	return p.release
}

// MasterOpen reports whether the master is still open.
func (p *Pty) MasterOpen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.masterOpen
}

// readMaster reads the slave's output: it waits while there is none,
// and fails with EIO when there is none and no slave is open. In packet
// mode a read returns the pending status byte alone, or a 0 byte and
// data.
func (p *Pty) readMaster(b vfs.Blocking, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	var n int
	var eio bool
	err := vfs.WaitFor(&p.q, b, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.packet && p.pktStatus != 0 {
			buf[0], p.pktStatus = p.pktStatus, 0
			n = 1
			return true
		}
		if len(p.outq) > 0 {
			dst := buf
			if p.packet {
				buf[0], dst, n = PktData, buf[1:], 1
			}
			k := copy(dst, p.outq)
			n += k
			p.outq = p.outq[k:]
			if len(p.outq) == 0 {
				p.outq = nil
			}
			return true
		}
		eio = p.slaveClosed
		return eio
	})
	if err != nil {
		return 0, err
	}
	if eio {
		return 0, linux.EIO
	}
	p.q.Notify() // room for the slave's writers
	return n, nil
}

// writeMaster gives buf to the slave as input, waiting while its input
// queue is full.
func (p *Pty) writeMaster(b vfs.Blocking, buf []byte) (int, error) {
	done := 0
	for done < len(buf) {
		done += p.Slave.Input(buf[done:])
		if done == len(buf) {
			break
		}
		err := vfs.WaitFor(&p.q, b, func() bool {
			return p.Slave.Buffered() < MaxInput || p.Slave.HungUp()
		})
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
	return done, nil
}

// masterReadiness is poll's view of the master: POLLIN with output to
// read, POLLOUT while the slave takes input, POLLHUP once no slave is
// open.
func (p *Pty) masterReadiness() uint32 {
	p.mu.Lock()
	m := uint32(0)
	if len(p.outq) > 0 {
		m |= linux.POLLIN | linux.POLLRDNORM
	}
	if p.packet && p.pktStatus != 0 {
		m |= linux.POLLIN | linux.POLLRDNORM | linux.POLLPRI
	}
	if p.slaveClosed {
		m |= linux.POLLHUP
	}
	p.mu.Unlock()
	if p.Slave.Buffered() < MaxInput {
		m |= linux.POLLOUT | linux.POLLWRNORM
	}
	return m
}

// MasterBuffered returns how many bytes the master can read (FIONREAD).
func (p *Pty) MasterBuffered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.outq)
}
