package e1000

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/intelnic/intelnictest"
	"shortbread/kernel/drivers/pci"
)

var models = []*Model{E1000, E1000E}

// The shared test helpers (intelnictest) under this package's names.
type recorder = intelnictest.Recorder

var (
	newRecorder = intelnictest.NewRecorder
	eventually  = intelnictest.Eventually
	frame       = intelnictest.Frame
	packets     = intelnictest.Packets
	testMAC     = intelnictest.TestMAC
	linkAddr    = intelnictest.LinkAddr
)

func start(t *testing.T, m *Model, c Config, noRA bool, last byte) (*NIC, *sim, *recorder) {
	t.Helper()
	s := newSim(m, testMAC(last), noRA)
	c.DMA, c.Name, c.Log = s.mem, "eth0", t.Logf
	n, err := New(s.dev, simPlatform{s}, m, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.irq.Close() })
	r := newRecorder()
	n.Attach(r)
	return n, s, r
}

func TestSetup(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, _ := start(t, m, Config{}, false, 7)
			if n.MAC() != linkAddr(testMAC(7)) || !n.LinkUp() {
				t.Errorf("MAC %v link %v", n.MAC(), n.LinkUp())
			}
			wantKind := map[*Model]pci.IntrKind{E1000: pci.MSIX, E1000E: pci.MSIX}[m]
			if m == E1000 {
				// The simulated 82540EM has no MSI or MSI-X capability,
				// as QEMU's: its INTx pin it is.
				wantKind = pci.INTx
			}
			if n.Kind != wantKind {
				t.Errorf("interrupts by %v, want %v", n.Kind, wantKind)
			}
			if w := s.written(regCTRL); len(w) == 0 || w[0]&ctrlRST == 0 {
				t.Errorf("first CTRL write %x is not a reset", w)
			}
			if s.get(regRCTL)&rctlEN == 0 || s.get(regTCTL)&tctlEN == 0 || s.get(regCTRL)&ctrlSLU == 0 {
				t.Errorf("RCTL %#x TCTL %#x CTRL %#x", s.get(regRCTL), s.get(regTCTL), s.get(regCTRL))
			}
			if got := s.get(regRDLEN); got != 256*descSize {
				t.Errorf("RDLEN %d", got)
			}
			if got := s.get(regRDT); got != 255 {
				t.Errorf("RDT %d, want 255 (all but one descriptor the card's)", got)
			}
			// Moderation: 8000 interrupts a second is 488 units of 256 ns.
			if got := s.get(regITR); got != 488 {
				t.Errorf("ITR %d", got)
			}
			if m == E1000E {
				if got := s.get(regEITR0); got != 488 {
					t.Errorf("EITR0 %d", got)
				}
				if got := s.get(regIVAR); got != 0x80808 {
					t.Errorf("IVAR %#x: want RxQ0, TxQ0 and Other valid on vector 0", got)
				}
				if s.get(regTARC0)&tarcEnable == 0 {
					t.Errorf("TARC0 %#x", s.get(regTARC0))
				}
			}
			// Transmit interrupts stay masked while nobody waits.
			if ims := s.get(regIMS); ims&icrTXDW != 0 || ims&icrRXT0 == 0 || ims&icrLSC == 0 {
				t.Errorf("IMS %#x", ims)
			}
			if e := s.errors(); len(e) > 0 {
				t.Error(e)
			}
		})
	}
}

func TestMSI(t *testing.T) {
	n, s, r := start(t, E1000E, Config{NoMSIX: true}, false, 1)
	if n.Kind != pci.MSI || s.kind != "msi" {
		t.Fatalf("kind %v / %s", n.Kind, s.kind)
	}
	// QEMU 7.2's 82574 under MSI clears ICR only when written: the
	// driver must write back what it read, or the second frame raises
	// no interrupt.
	for i := 0; i < 3; i++ {
		s.receive(frame(100, byte(i)))
		r.Wait(t, 1)
	}
}

func TestMACFromEEPROM(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, _ := start(t, m, Config{}, true, 9)
			if n.MAC() != linkAddr(testMAC(9)) {
				t.Errorf("MAC %v", n.MAC())
			}
			if len(s.written(regEERD)) != 3 {
				t.Errorf("EERD written %d times, want 3", len(s.written(regEERD)))
			}
			// The driver programs the address it found.
			if s.get(regRAH0)&rahAV == 0 || s.get(regRAL0) != 0x12005452 {
				t.Errorf("RAL0 %#x RAH0 %#x", s.get(regRAL0), s.get(regRAH0))
			}
		})
	}
}

func TestBadMAC(t *testing.T) {
	s := newSim(E1000, [6]byte{1, 2, 3, 4, 5, 6}, true) // multicast
	if _, err := New(s.dev, simPlatform{s}, E1000, Config{DMA: s.mem}); err != errNoMAC {
		t.Errorf("New with a multicast MAC: %v", err)
	}
	s = newSim(E1000, testMAC(1), false)
	s.setGone()
	if _, err := New(s.dev, simPlatform{s}, E1000, Config{DMA: s.mem}); err != errGone {
		t.Errorf("New on a vanished card: %v", err)
	}
}

func TestTransmit(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, _ := start(t, m, Config{}, false, 1)
			var want [][]byte
			for i := 0; i < 300; i += 30 { // wraps the 256-descriptor ring
				var batch [][]byte
				for j := 0; j < 30; j++ {
					batch = append(batch, frame(60+(i+j)*4, byte(i+j)))
				}
				want = append(want, batch...)
				if got, err := n.WritePackets(packets(batch...)); got != len(batch) || err != nil {
					t.Fatalf("WritePackets: %d, %v", got, err)
				}
			}
			got := s.sentFrames()
			if len(got) != len(want) {
				t.Fatalf("%d frames sent, want %d", len(got), len(want))
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("frame %d differs", i)
				}
			}
			if n.Stats.TxPackets.Load() != uint64(len(want)) {
				t.Errorf("TxPackets %d", n.Stats.TxPackets.Load())
			}
			big := frame(intelnic.MaxFrame+1, 0)
			if got, _ := n.WritePackets(packets(big)); got != 0 || n.Stats.TxErrors.Load() != 1 {
				t.Errorf("an oversize frame: sent %d, errors %d", got, n.Stats.TxErrors.Load())
			}
		})
	}
}

// A full transmit ring makes the sender wait for the card with the
// transmit interrupt unmasked, and masks it again after.
func TestTransmitRingFull(t *testing.T) {
	n, s, _ := start(t, E1000, Config{TxDescs: 8}, false, 1)
	s.hold()
	done := make(chan int)
	go func() {
		var fs [][]byte
		for i := 0; i < 20; i++ {
			fs = append(fs, frame(100, byte(i)))
		}
		got, _ := n.WritePackets(packets(fs...))
		done <- got
	}()
	eventually(t, "the sender unmasks TXDW", func() bool { return s.get(regIMS)&icrTXDW != 0 })
	select {
	case <-done:
		t.Fatal("WritePackets returned with the card holding every descriptor")
	case <-time.After(50 * time.Millisecond):
	}
	s.releaseTX()
	// The card finishes as the sender refills: let each batch go.
	go func() {
		for i := 0; i < 20; i++ {
			time.Sleep(5 * time.Millisecond)
			s.releaseTX()
		}
	}()
	if got := <-done; got != 20 {
		t.Errorf("sent %d of 20", got)
	}
	if len(s.sentFrames()) != 20 || s.get(regIMS)&icrTXDW != 0 {
		t.Errorf("card sent %d; IMS %#x", len(s.sentFrames()), s.get(regIMS))
	}
}

func TestReceive(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, r := start(t, m, Config{RxDescs: 16}, false, 1)
			var want [][]byte
			for i := 0; i < 100; i++ { // wraps the 16-descriptor ring
				f := frame(60+i*14, byte(i))
				want = append(want, f)
				s.receive(f)
				if i%8 == 7 {
					r.Wait(t, 8)
				}
			}
			r.Wait(t, 4)
			got := r.All()
			if len(got) != len(want) {
				t.Fatalf("%d frames, want %d", len(got), len(want))
			}
			bytesWant := 0
			for i := range got {
				bytesWant += len(want[i])
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("frame %d differs", i)
				}
			}
			if n.Stats.RxPackets.Load() != 100 || n.Stats.RxBytes.Load() != uint64(bytesWant) || n.Stats.RxErrors.Load() != 0 {
				t.Errorf("counters %d %d %d", n.Stats.RxPackets.Load(), n.Stats.RxBytes.Load(), n.Stats.RxErrors.Load())
			}
		})
	}
}

// Malformed descriptors from the card: each is dropped and counted, the
// ring keeps going, and a good frame after them arrives intact.
func TestMalformedDescriptors(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, r := start(t, m, Config{RxDescs: 16}, false, 1)
			good := frame(200, 1)
			cases := []struct {
				name     string
				descs    func() // writes the descriptors
				errs     uint64
				oversize uint64
				deliver  [][]byte
			}{
				{"length beyond the buffer", func() { s.raw(good, 4000, rxdDD|rxdEOP, 0) }, 1, 0, nil},
				{"CRC error", func() { s.raw(good, 200, rxdDD|rxdEOP, 1) }, 1, 0, nil},
				{"RX data error", func() { s.raw(good, 200, rxdDD|rxdEOP, 1<<7) }, 1, 0, nil},
				{"runt", func() { s.raw(good, 10, rxdDD|rxdEOP, 0) }, 1, 0, nil},
				{"zero length", func() { s.raw(good, 0, rxdDD|rxdEOP, 0) }, 1, 0, nil},
				{"checksum error bits only", func() { s.raw(good, 200, rxdDD|rxdEOP, 1<<5|1<<6) }, 0, 0, [][]byte{good}},
				{"two descriptors", func() {
					s.raw(good[:120], 120, rxdDD, 0)
					s.raw(good[120:], 80, rxdDD|rxdEOP, 0)
				}, 0, 0, [][]byte{good}},
				{"oversize over three descriptors", func() {
					s.raw(frame(1000, 2), 1000, rxdDD, 0)
					s.raw(frame(1000, 3), 1000, rxdDD, 0)
					s.raw(frame(1000, 4), 1000, rxdDD|rxdEOP, 0)
				}, 1, 1, nil},
				{"error bit on the middle descriptor", func() {
					s.raw(good[:100], 100, rxdDD, 0)
					s.raw(good[100:150], 50, rxdDD, 1<<1)
					s.raw(good[150:], 50, rxdDD|rxdEOP, 0)
				}, 1, 0, nil},
			}
			var errs, over uint64
			for _, c := range cases {
				before := len(r.All())
				c.descs()
				s.receive(good) // a good frame behind shows the ring still runs
				r.Wait(t, len(c.deliver)+1)
				errs += c.errs
				over += c.oversize
				got := r.All()[before:]
				want := append(append([][]byte(nil), c.deliver...), good)
				if len(got) != len(want) {
					t.Fatalf("%s: %d frames delivered, want %d", c.name, len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("%s: frame %d differs", c.name, i)
					}
				}
				// A pass's error counts are added when it ends, which may
				// be just after the good frame went up.
				eventually(t, fmt.Sprintf("%s: errors %d oversize %d", c.name, errs, over), func() bool {
					return n.Stats.RxErrors.Load() == errs && n.Oversize.Load() == over
				})
			}
			if e := s.errors(); len(e) > 0 {
				t.Error(e)
			}
		})
	}
}

// A descriptor without DD is the card's still: the driver neither takes
// it nor moves the tail past it.
func TestReceiveStopsAtNotDone(t *testing.T) {
	n, s, r := start(t, E1000, Config{RxDescs: 8}, false, 1)
	s.raw(frame(100, 1), 100, rxdEOP, 0) // written back without DD
	s.receive(frame(100, 2))
	time.Sleep(50 * time.Millisecond)
	if len(r.All()) != 0 || n.rx.Next != 0 || s.get(regRDT) != 7 {
		t.Errorf("delivered %d, next %d, RDT %d", len(r.All()), n.rx.Next, s.get(regRDT))
	}
}

func TestLinkState(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, _ := start(t, m, Config{}, false, 1)
			s.setLink(false)
			eventually(t, "link down", func() bool { return !n.LinkUp() })
			if got, _ := n.WritePackets(packets(frame(100, 1))); got != 0 || n.Stats.TxDropped.Load() != 1 || len(s.sentFrames()) != 0 {
				t.Errorf("sent with the link down: %d, dropped %d", got, n.Stats.TxDropped.Load())
			}
			s.setLink(true)
			eventually(t, "link up", func() bool { return n.LinkUp() })
			if got, _ := n.WritePackets(packets(frame(100, 1))); got != 1 {
				t.Errorf("sent %d with the link up", got)
			}
		})
	}
}

func TestMissedCounted(t *testing.T) {
	n, s, _ := start(t, E1000E, Config{}, false, 1)
	s.miss(5)
	eventually(t, "drops counted", func() bool { return n.Stats.RxDropped.Load() == 5 })
}

// No polling: an idle card's goroutine sleeps until an interrupt, and
// traffic wakes it once per interrupt raised.
func TestIdleNoWakeups(t *testing.T) {
	for _, m := range models {
		t.Run(m.Name, func(t *testing.T) {
			n, s, r := start(t, m, Config{}, false, 1)
			s.receive(frame(100, 1))
			r.Wait(t, 1)
			time.Sleep(20 * time.Millisecond)
			w, irqs := n.Wakeups.Load(), s.interrupts()
			time.Sleep(200 * time.Millisecond)
			if n.Wakeups.Load() != w {
				t.Errorf("%d wake-ups while idle", n.Wakeups.Load()-w)
			}
			if w > uint64(irqs)+1 {
				t.Errorf("%d wake-ups for %d interrupts", w, irqs)
			}
		})
	}
}

func TestCardGone(t *testing.T) {
	n, s, _ := start(t, E1000, Config{}, false, 1)
	s.setGone()
	s.mu.Lock()
	s.irq.Raise()
	s.mu.Unlock()
	eventually(t, "the driver stops", func() bool { return n.stopped.Load() })
	if got, _ := n.WritePackets(packets(frame(100, 1))); got != 0 {
		t.Errorf("sent %d to a vanished card", got)
	}
}

// Random descriptor contents never crash the driver and every
// descriptor it takes is accounted for.
func TestRandomDescriptors(t *testing.T) {
	n, s, r := start(t, E1000E, Config{RxDescs: 16}, false, 1)
	x := uint32(12345)
	rnd := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for i := 0; i < 2000; i++ {
		v := rnd()
		for !s.raw(frame(int(v%1600)+1, byte(i)), uint16(v>>8), uint8(v>>24)|rxdDD, uint8(v>>16)&uint8(rnd())) {
			time.Sleep(time.Millisecond) // the ring is full: let the driver catch up
		}
	}
	// A frame left open (no EOP) swallows what follows up to the next
	// EOP: close it, then a good frame must come through whole.
	for !s.raw(frame(100, 0), 100, rxdDD|rxdEOP, 0) {
		time.Sleep(time.Millisecond)
	}
	s.receive(frame(300, 9))
	eventually(t, "the last good frame", func() bool {
		f := r.All()
		return len(f) > 0 && bytes.Equal(f[len(f)-1], frame(300, 9))
	})
	if e := s.errors(); len(e) > 0 {
		t.Error(e)
	}
	t.Logf("%d delivered, %d errors, %d oversize", n.Stats.RxPackets.Load(), n.Stats.RxErrors.Load(), n.Oversize.Load())
}

type side struct {
	nic *NIC
	sim *sim
	s   *stack.Stack
}

func newSide(t *testing.T, m *Model, last byte) side {
	s := newSim(m, testMAC(last), false)
	nic, err := New(s.dev, simPlatform{s}, m, Config{Name: "eth0", DMA: s.mem, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.irq.Close() })
	st := intelnictest.Stack(t, nic, last)
	return side{nic, s, st}
}

// TCP between an e1000 and an e1000e on one cable: ARP, the handshake
// and 2 MiB each way checked by hash, through both rings many times
// over.
func TestTCPAcrossCable(t *testing.T) {
	a, b := newSide(t, E1000, 1), newSide(t, E1000E, 2)
	cable(a.sim, b.sim)
	intelnictest.TCPExchange(t, a.s, b.s)
	for _, sd := range []side{a, b} {
		st := &sd.nic.Stats
		if st.RxErrors.Load() != 0 || st.TxErrors.Load() != 0 || st.RxPackets.Load() < 1000 {
			t.Errorf("%s: rx %d packets %d errors, tx %d errors", sd.nic.Model.Name, st.RxPackets.Load(), st.RxErrors.Load(), st.TxErrors.Load())
		}
		if e := sd.sim.errors(); len(e) > 0 {
			t.Errorf("%v: %v", sd.nic.Model.Name, e)
		}
		// 2 MiB each way goes out in 64 KiB segments the card cuts up.
		if n := sd.sim.segments(); n < 16 {
			t.Errorf("%v: %d segments cut up by the card (TSO)", sd.nic.Model.Name, n)
		}
		t.Logf("%s: %d interrupts for %d frames received, %d sent; dropped rx %d tx %d", sd.nic.Model.Name, sd.sim.interrupts(), st.RxPackets.Load(), st.TxPackets.Load(), st.RxDropped.Load(), st.TxDropped.Load())
	}
}

// TCP segments over IPv4 go to the card whole (TSO), in a context
// descriptor and data descriptors the card cuts into the right frames;
// the others, and any segment the ring cannot hold, are cut by the
// driver.
func TestTSO(t *testing.T) {
	for _, m := range models {
		for _, descs := range []int{0, 16, 32} {
			t.Run(fmt.Sprintf("%s-%d", m.Name, descs), func(t *testing.T) {
				n, s, _ := start(t, m, Config{TxDescs: descs}, false, 1)
				intelnictest.CheckTSO(t, n, s.sentFrames, s.segments, n.tx.N)
				if e := s.errors(); len(e) > 0 {
					t.Error(e)
				}
			})
		}
	}
}

// The card checks received checksums (RXCSUM) and the driver vouches
// to the stack for the frames it found right, and only those; not at
// all where the card says it checked nothing (IXSM, QEMU's 82540EM).
func TestRxChecksumOffload(t *testing.T) {
	for _, m := range models {
		for _, ixsm := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-ixsm=%v", m.Name, ixsm), func(t *testing.T) {
				n, s, r := start(t, m, Config{}, false, 1)
				if got := s.get(regRXCSUM); got != rxcsumIPOFL|rxcsumTUOFL {
					t.Errorf("RXCSUM %#x", got)
				}
				s.mu.Lock()
				s.ixsm = ixsm
				s.mu.Unlock()
				intelnictest.CheckRxChecksums(t, s.receive, r, !ixsm)
				if n.Stats.RxErrors.Load() != 0 {
					t.Errorf("%d receive errors", n.Stats.RxErrors.Load())
				}
			})
		}
	}
}
