package tty

import (
	"errors"
	"runtime"
	"testing"
	"time"
	"weak"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func readMaster(t *testing.T, m *MasterFile) string {
	t.Helper()
	buf := make([]byte, 256)
	n, err := m.Read(nonblock, buf, 0)
	if err != nil {
		t.Fatalf("master read: %v", err)
	}
	return string(buf[:n])
}

func TestPtyRoundTrip(t *testing.T) {
	rec := &sigRec{}
	released := make(chan struct{})
	p := NewPty(0, rec, func() { close(released) })
	m := p.MasterFile()
	if _, err := p.OpenSlave(); !errors.Is(err, linux.EIO) {
		t.Fatalf("locked slave opened: %v", err)
	}
	p.SetLocked(false)
	s, err := p.OpenSlave()
	if err != nil {
		t.Fatal(err)
	}
	if m.Readiness()&linux.POLLOUT == 0 || m.Readiness()&linux.POLLIN != 0 {
		t.Errorf("fresh master readiness %#x", m.Readiness())
	}
	// The master types a line: the slave reads it, the master sees the echo.
	if n, err := m.Write(vfs.Blocking{}, []byte("hi\r"), 0); n != 3 || err != nil {
		t.Fatalf("master write %d %v", n, err)
	}
	if s.Readiness()&linux.POLLIN == 0 {
		t.Error("slave not readable after a line")
	}
	buf := make([]byte, 10)
	if n, _ := s.Read(nonblock, buf, 0); string(buf[:n]) != "hi\n" {
		t.Errorf("slave read %q", buf[:n])
	}
	if got := readMaster(t, m); got != "hi\r\n" {
		t.Errorf("echo %q", got)
	}
	// The slave writes: the master reads it after ONLCR.
	s.Write(vfs.Blocking{}, []byte("out\n"), 0)
	if m.Readiness()&linux.POLLIN == 0 {
		t.Error("master not readable after slave output")
	}
	if got := readMaster(t, m); got != "out\r\n" {
		t.Errorf("master read %q", got)
	}
	// The slave closes: master reads fail with EIO, poll says POLLHUP.
	s.Release()
	if _, err := m.Read(vfs.Blocking{}, buf, 0); !errors.Is(err, linux.EIO) {
		t.Errorf("master read with the slave closed: %v, want EIO", err)
	}
	if m.Readiness()&linux.POLLHUP == 0 {
		t.Errorf("master readiness %#x without POLLHUP", m.Readiness())
	}
	select {
	case <-released:
		t.Fatal("released with the master open")
	default:
	}
	m.Release()
	select {
	case <-released:
	default:
		t.Fatal("not released with both sides closed")
	}
}

func TestPtyMasterCloseHangsUp(t *testing.T) {
	rec := &sigRec{}
	p := NewPty(3, rec, func() {})
	p.SetLocked(false)
	s, _ := p.OpenSlave()
	p.Slave.Control(50, 51, false)
	got := make(chan error, 1)
	go func() {
		_, err := s.Read(vfs.Blocking{}, make([]byte, 10), 0)
		got <- err
	}()
	time.Sleep(10 * time.Millisecond)
	p.MasterFile().Release()
	select {
	case err := <-got:
		if !errors.Is(err, linux.EIO) {
			t.Errorf("slave read asleep at the hangup: %v, want EIO", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked slave reader not woken by the hangup")
	}
	if n, err := s.Read(vfs.Blocking{}, make([]byte, 10), 0); n != 0 || err != nil {
		t.Errorf("slave read after the hangup: %d %v, want end of file", n, err)
	}
	if _, err := s.Write(vfs.Blocking{}, []byte("x"), 0); !errors.Is(err, linux.EIO) {
		t.Errorf("slave write after hangup: %v", err)
	}
	if r := s.Readiness(); r&linux.POLLHUP == 0 || r&linux.POLLIN == 0 {
		t.Errorf("hung-up slave readiness %#x", r)
	}
	if sg := rec.get(); len(sg) < 1 || sg[0] != [3]int{1, 50, SIGHUP} {
		t.Errorf("signals %v, want SIGHUP to session leader 50", sg)
	}
	if _, err := p.OpenSlave(); !errors.Is(err, linux.EIO) {
		t.Errorf("slave opened after the master closed: %v", err)
	}
	s.Release()
}

// A pair both of whose sides are closed is garbage: nothing in this
// package keeps it alive (devpts drops its own reference in release).
func TestPtyReleasedMemory(t *testing.T) {
	var ws []weak.Pointer[Pty]
	for i := range 100 {
		p := NewPty(i, &sigRec{}, func() {})
		p.SetLocked(false)
		s, _ := p.OpenSlave()
		m := p.MasterFile()
		go func() { s.Read(vfs.Blocking{}, make([]byte, 1), 0) }() // a reader parked at the close
		m.Write(vfs.Blocking{}, []byte("some input\n"), 0)
		s.Write(vfs.Blocking{}, []byte("some output\n"), 0)
		m.Release()
		s.Release()
		ws = append(ws, weak.Make(p))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		live := 0
		for _, w := range ws {
			if w.Value() != nil {
				live++
			}
		}
		if live == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 100 closed pairs still reachable", live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPtyFlowControl(t *testing.T) {
	p := NewPty(1, &sigRec{}, func() {})
	p.SetLocked(false)
	s, _ := p.OpenSlave()
	m := p.MasterFile()
	tio := p.Slave.Termios()
	tio.Lflag &^= ICANON | ECHO
	p.Slave.SetTermios(tio, false)
	// The master fills the slave's input: a non-blocking write stops short.
	big := make([]byte, 3*MaxInput)
	n, err := m.Write(nonblock, big, 0)
	if err != nil || n != MaxInput {
		t.Errorf("non-blocking master write of %d: %d %v, want %d", len(big), n, err, MaxInput)
	}
	if m.Readiness()&linux.POLLOUT != 0 {
		t.Error("master writable with the slave's input full")
	}
	// A blocking write finishes as the slave reads.
	done := make(chan int)
	go func() { n, _ := m.Write(vfs.Blocking{}, big, 0); done <- n }()
	total := 0
	for total < len(big)+MaxInput {
		k, err := s.Read(vfs.Blocking{}, make([]byte, 1000), 0)
		if err != nil {
			t.Fatal(err)
		}
		total += k
	}
	if n := <-done; n != len(big) {
		t.Errorf("blocking master write %d of %d", n, len(big))
	}
	// Slave output past the limit waits for the master.
	n, err = s.Write(nonblock, make([]byte, 2*outLimit), 0)
	if err != nil || n >= 2*outLimit || n < outLimit {
		t.Errorf("non-blocking slave write: %d %v", n, err)
	}
	if s.Readiness()&linux.POLLOUT != 0 {
		t.Error("slave writable with the master's queue full")
	}
}

func TestPtyPacketMode(t *testing.T) {
	p := NewPty(0, &sigRec{}, func() {})
	p.SetLocked(false)
	s, _ := p.OpenSlave()
	m := p.MasterFile()
	p.Slave.Flush(true, false) // packet mode off: no event
	p.SetPacket(true)
	s.Write(vfs.Blocking{}, []byte("ab"), 0)
	if got := readMaster(t, m); got != "\x00ab" {
		t.Errorf("packet data %q", got)
	}
	p.Slave.Flush(true, true)
	if m.Readiness()&linux.POLLPRI == 0 {
		t.Error("no POLLPRI with an event pending")
	}
	if got := readMaster(t, m); got != "\x03" {
		t.Errorf("flush event %q", got)
	}
	tio := p.Slave.Termios()
	tio.Iflag &^= IXON
	p.Slave.SetTermios(tio, false)
	if got := readMaster(t, m); got != "\x10" {
		t.Errorf("IXON off: %q, want NOSTOP", got)
	}
	if _, err := m.Read(nonblock, make([]byte, 4), 0); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("after the events: %v", err)
	}
}
