package igb

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

// modes are the two interrupt set-ups the driver has: MSI-X with EICR
// vectors, and MSI (INTx's logic too) with ICR causes.
var modes = []struct {
	name   string
	noMSIX bool
}{{"msix", false}, {"msi", true}}

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

// start brings a simulated card up and waits for its link (the
// auto-negotiation the driver starts).
func start(t *testing.T, c Config, noRA bool, last byte) (*NIC, *sim, *recorder) {
	t.Helper()
	s := newSim(testMAC(last), noRA)
	c.DMA, c.Name, c.Log = s.mem, "eth0", t.Logf
	n, err := New(s.dev, simPlatform{s}, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.irq.Close() })
	r := newRecorder()
	n.Attach(r)
	eventually(t, "link up after auto-negotiation", n.LinkUp)
	return n, s, r
}

func TestSetup(t *testing.T) {
	n, s, _ := start(t, Config{}, false, 7)
	if n.MAC() != linkAddr(testMAC(7)) || n.Kind != pci.MSIX || s.kind != "msix" {
		t.Errorf("MAC %v, interrupts by %v (%s)", n.MAC(), n.Kind, s.kind)
	}
	if w := s.written(regCTRL); len(w) == 0 || w[0]&ctrlRST == 0 {
		t.Errorf("first CTRL write %x is not a reset", w)
	}
	if len(s.written(regMDIC)) != 1 {
		t.Errorf("MDIC writes %x: want one auto-negotiation restart", s.written(regMDIC))
	}
	checks := []struct {
		name      string
		reg       uint32
		mask, val uint32
	}{
		{"CTRL.SLU", regCTRL, ctrlSLU | ctrlRST, ctrlSLU},
		{"CTRL_EXT.DRV_LOAD", regCTRLEXT, ctrlExtDrvLoad, ctrlExtDrvLoad},
		{"RCTL", regRCTL, ^uint32(0), rctlEN | rctlBAM | rctlMPE | rctlSECRC},
		{"TCTL.EN", regTCTL, tctlEN, tctlEN},
		{"RDLEN", regRDLEN, ^uint32(0), 256 * descSize},
		{"TDLEN", regTDLEN, ^uint32(0), 256 * descSize},
		{"RDT (all but one descriptor the card's)", regRDT, ^uint32(0), 255},
		{"SRRCTL (2 KiB, advanced one-buffer)", regSRRCTL, ^uint32(0), 2 | 1<<25},
		{"RXDCTL enabled", regRXDCTL, dctlEnable, dctlEnable},
		{"TXDCTL enabled", regTXDCTL, dctlEnable, dctlEnable},
		{"GPIE", regGPIE, ^uint32(0), gpieNSICR | gpieMSIXMode | gpiePBA},
		{"EIAC", regEIAC, ^uint32(0), 1},
		// The receive queue on vector 0; the transmit queue unrouted
		// while nobody waits; the other causes on vector 0.
		{"IVAR0", regIVAR0, ^uint32(0), 0x80},
		{"IVAR_MISC", regIVARMSC, ^uint32(0), 0x8000},
		// 8000 interrupts a second: 125 µs from bit 2.
		{"EITR0", regEITR0, ^uint32(0), 500},
		{"EIMS", regEIMS, ^uint32(0), 1},
		{"IMS (link and overrun as other causes)", regIMS, ^uint32(0), icrLSC | icrRXO},
		{"RAH0", regRAH0, ^uint32(0), 0x0734 | rahAV},
	}
	for _, c := range checks {
		if got := s.get(c.reg); got&c.mask != c.val {
			t.Errorf("%s: %#x, want %#x under %#x", c.name, got, c.val, c.mask)
		}
	}
	// Queues were enabled before their tails moved.
	if w := s.written(regRDT); len(w) != 2 || w[0] != 0 || w[1] != 255 {
		t.Errorf("RDT writes %v", w)
	}
	if e := s.errors(); len(e) > 0 {
		t.Error(e)
	}
}

func TestMSI(t *testing.T) {
	n, s, r := start(t, Config{NoMSIX: true}, false, 1)
	if n.Kind != pci.MSI || s.kind != "msi" {
		t.Fatalf("kind %v / %s", n.Kind, s.kind)
	}
	if g, ims := s.get(regGPIE), s.get(regIMS); g&gpieMSIXMode != 0 || ims != icrRXDW|icrRXO|icrLSC {
		t.Errorf("GPIE %#x IMS %#x", g, ims)
	}
	// Each frame must interrupt again: the driver's ICR read clears the
	// causes (GPIE.NSICR), or the second frame would raise nothing.
	for i := 0; i < 3; i++ {
		s.receive(frame(100, byte(i)))
		r.Wait(t, 1)
	}
}

func TestMACFromEEPROM(t *testing.T) {
	n, s, _ := start(t, Config{}, true, 9)
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
}

func TestBadMAC(t *testing.T) {
	s := newSim([6]byte{1, 2, 3, 4, 5, 6}, true) // multicast
	if _, err := New(s.dev, simPlatform{s}, Config{DMA: s.mem}); err != errNoMAC {
		t.Errorf("New with a multicast MAC: %v", err)
	}
	s = newSim(testMAC(1), false)
	s.setGone()
	if _, err := New(s.dev, simPlatform{s}, Config{DMA: s.mem}); err != errGone {
		t.Errorf("New on a vanished card: %v", err)
	}
	if s.mem.InUse != 0 {
		t.Errorf("%d pages left allocated", s.mem.InUse)
	}
}

// A PHY that never negotiates leaves the card up without a link: New
// does not wait for it, and frames are dropped, not queued.
func TestNoLink(t *testing.T) {
	s := newSim(testMAC(1), false)
	s.noAN = true
	n, err := New(s.dev, simPlatform{s}, Config{DMA: s.mem, Name: "eth0", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.irq.Close()
	time.Sleep(50 * time.Millisecond)
	if n.LinkUp() {
		t.Error("link up without auto-negotiation")
	}
	if got, _ := n.WritePackets(packets(frame(100, 1))); got != 0 || n.Stats.TxDropped.Load() != 1 {
		t.Errorf("sent %d without a link", got)
	}
}

func TestTransmit(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			n, s, _ := start(t, Config{NoMSIX: md.noMSIX}, false, 1)
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
			if e := s.errors(); len(e) > 0 {
				t.Error(e)
			}
		})
	}
}

// A full transmit ring makes the sender wait for the card with the
// transmit completion routed to the interrupt (IVAR under MSI-X, IMS
// otherwise), and unroutes it after.
func TestTransmitRingFull(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			n, s, _ := start(t, Config{TxDescs: 8, NoMSIX: md.noMSIX}, false, 1)
			routed := func() bool {
				if md.noMSIX {
					return s.get(regIMS)&icrTXDW != 0
				}
				return s.get(regIVAR0)>>8&0xff == ivarValid
			}
			if routed() {
				t.Fatal("transmit completions interrupt while nobody waits")
			}
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
			eventually(t, "the sender routes the transmit interrupt", routed)
			select {
			case <-done:
				t.Fatal("WritePackets returned with the card holding every descriptor")
			case <-time.After(50 * time.Millisecond):
			}
			// The card finishes as the sender refills: let each batch go.
			go func() {
				for i := 0; i < 20; i++ {
					s.releaseTX()
					time.Sleep(5 * time.Millisecond)
				}
			}()
			if got := <-done; got != 20 {
				t.Errorf("sent %d of 20", got)
			}
			if len(s.sentFrames()) != 20 || routed() {
				t.Errorf("card sent %d; still routed %v", len(s.sentFrames()), routed())
			}
		})
	}
}

func TestReceive(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			n, s, r := start(t, Config{RxDescs: 16, NoMSIX: md.noMSIX}, false, 1)
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
			if e := s.errors(); len(e) > 0 {
				t.Error(e)
			}
		})
	}
}

// Malformed write-backs from the card: each is dropped and counted, the
// ring keeps going, and a good frame after them arrives intact.
func TestMalformedDescriptors(t *testing.T) {
	n, s, r := start(t, Config{RxDescs: 16}, false, 1)
	good := frame(200, 1)
	const dd, eop = rxdDD, rxdEOP
	cases := []struct {
		name     string
		descs    func() // writes the descriptors
		errs     uint64
		oversize uint64
		deliver  [][]byte
	}{
		{"length beyond the buffer", func() { s.raw(good, 4000, dd|eop) }, 1, 0, nil},
		{"CRC error", func() { s.raw(good, 200, dd|eop|1<<24) }, 1, 0, nil},
		{"symbol error", func() { s.raw(good, 200, dd|eop|1<<25) }, 1, 0, nil},
		{"RX data error", func() { s.raw(good, 200, dd|eop|1<<31) }, 1, 0, nil},
		{"runt", func() { s.raw(good, 10, dd|eop) }, 1, 0, nil},
		{"zero length", func() { s.raw(good, 0, dd|eop) }, 1, 0, nil},
		{"checksum error bits only", func() { s.raw(good, 200, dd|eop|1<<29|1<<30) }, 0, 0, [][]byte{good}},
		{"two descriptors", func() {
			s.raw(good[:120], 120, dd)
			s.raw(good[120:], 80, dd|eop)
		}, 0, 0, [][]byte{good}},
		{"oversize over three descriptors", func() {
			s.raw(frame(1000, 2), 1000, dd)
			s.raw(frame(1000, 3), 1000, dd)
			s.raw(frame(1000, 4), 1000, dd|eop)
		}, 1, 1, nil},
		{"error bit on the middle descriptor", func() {
			s.raw(good[:100], 100, dd)
			s.raw(good[100:150], 50, dd|1<<26)
			s.raw(good[150:], 50, dd|eop)
		}, 1, 0, nil},
		{"oversize in one descriptor", func() { s.raw(frame(1600, 5), 1600, dd|eop) }, 1, 1, nil},
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
		// A pass's error counts are added when it ends, which may be
		// just after the good frame went up.
		eventually(t, fmt.Sprintf("%s: errors %d oversize %d", c.name, errs, over), func() bool {
			return n.Stats.RxErrors.Load() == errs && n.Oversize.Load() == over
		})
	}
	if e := s.errors(); len(e) > 0 {
		t.Error(e)
	}
}

// A descriptor without DD is the card's still: the driver neither takes
// it nor moves the tail past it.
func TestReceiveStopsAtNotDone(t *testing.T) {
	n, s, r := start(t, Config{RxDescs: 8}, false, 1)
	s.raw(frame(100, 1), 100, rxdEOP) // written back without DD
	s.receive(frame(100, 2))
	time.Sleep(50 * time.Millisecond)
	if len(r.All()) != 0 || n.rx.Next != 0 || s.get(regRDT) != 7 {
		t.Errorf("delivered %d, next %d, RDT %d", len(r.All()), n.rx.Next, s.get(regRDT))
	}
}

func TestLinkState(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			n, s, _ := start(t, Config{NoMSIX: md.noMSIX}, false, 1)
			s.setLink(false)
			eventually(t, "link down", func() bool { return !n.LinkUp() })
			if got, _ := n.WritePackets(packets(frame(100, 1))); got != 0 || n.Stats.TxDropped.Load() != 1 || len(s.sentFrames()) != 0 {
				t.Errorf("sent with the link down: %d, dropped %d", got, n.Stats.TxDropped.Load())
			}
			s.setLink(true)
			eventually(t, "link up", n.LinkUp)
			if got, _ := n.WritePackets(packets(frame(100, 1))); got != 1 {
				t.Errorf("sent %d with the link up", got)
			}
		})
	}
}

func TestMissedCounted(t *testing.T) {
	n, s, _ := start(t, Config{}, false, 1)
	s.miss(5)
	eventually(t, "drops counted", func() bool { return n.Stats.RxDropped.Load() == 5 })
}

// No polling: an idle card's goroutine sleeps until an interrupt, and
// traffic wakes it once per interrupt raised.
func TestIdleNoWakeups(t *testing.T) {
	for _, md := range modes {
		t.Run(md.name, func(t *testing.T) {
			n, s, r := start(t, Config{NoMSIX: md.noMSIX}, false, 1)
			s.receive(frame(100, 1))
			r.Wait(t, 1)
			if _, err := n.WritePackets(packets(frame(100, 2))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			w, irqs := n.Wakeups.Load(), s.interrupts()
			time.Sleep(200 * time.Millisecond)
			if n.Wakeups.Load() != w {
				t.Errorf("%d wake-ups while idle", n.Wakeups.Load()-w)
			}
			// One wake-up at start, one per interrupt: the link's and
			// the frame's; the sent frame raised none.
			if w > uint64(irqs)+1 || irqs > 2 {
				t.Errorf("%d wake-ups for %d interrupts", w, irqs)
			}
		})
	}
}

func TestCardGone(t *testing.T) {
	n, s, _ := start(t, Config{}, false, 1)
	s.setGone()
	s.mu.Lock()
	s.irq.Raise()
	s.mu.Unlock()
	eventually(t, "the driver stops", n.stopped.Load)
	if got, _ := n.WritePackets(packets(frame(100, 1))); got != 0 {
		t.Errorf("sent %d to a vanished card", got)
	}
}

// Random write-backs never crash the driver and every descriptor it
// takes is accounted for.
func TestRandomDescriptors(t *testing.T) {
	n, s, r := start(t, Config{RxDescs: 16}, false, 1)
	x := uint32(12345)
	rnd := func() uint32 { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x }
	for i := 0; i < 2000; i++ {
		v := rnd()
		for !s.raw(frame(int(v%1600)+1, byte(i)), uint16(v>>8), rnd()&rnd()|rxdDD) {
			time.Sleep(time.Millisecond) // the ring is full: let the driver catch up
		}
	}
	// A frame left open (no EOP) swallows what follows up to the next
	// EOP: close it, then a good frame must come through whole.
	for !s.raw(frame(100, 0), 100, rxdDD|rxdEOP) {
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

func newSide(t *testing.T, noMSIX bool, last byte) side {
	s := newSim(testMAC(last), false)
	nic, err := New(s.dev, simPlatform{s}, Config{Name: "eth0", DMA: s.mem, Log: t.Logf, NoMSIX: noMSIX})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.irq.Close() })
	eventually(t, "link up", nic.LinkUp)
	st := intelnictest.Stack(t, nic, last)
	return side{nic, s, st}
}

// TCP between a card on MSI-X and one on MSI over one cable: ARP, the
// handshake and 2 MiB each way checked by hash, through both rings many
// times over.
func TestTCPAcrossCable(t *testing.T) {
	a, b := newSide(t, false, 1), newSide(t, true, 2)
	cable(a.sim, b.sim)
	intelnictest.TCPExchange(t, a.s, b.s)
	for _, sd := range []side{a, b} {
		st := &sd.nic.Stats
		if st.RxErrors.Load() != 0 || st.TxErrors.Load() != 0 || st.RxPackets.Load() < 1000 {
			t.Errorf("%v: rx %d packets %d errors, tx %d errors", sd.nic.Kind, st.RxPackets.Load(), st.RxErrors.Load(), st.TxErrors.Load())
		}
		if e := sd.sim.errors(); len(e) > 0 {
			t.Errorf("%v: %v", sd.nic.Kind, e)
		}
		// 2 MiB each way goes out in 64 KiB segments the card cuts up.
		if n := sd.sim.segments(); n < 16 {
			t.Errorf("%v: %d segments cut up by the card (TSO)", sd.nic.Kind, n)
		}
		t.Logf("%v: %d interrupts for %d frames received, %d sent; dropped rx %d tx %d", sd.nic.Kind, sd.sim.interrupts(), st.RxPackets.Load(), st.TxPackets.Load(), st.RxDropped.Load(), st.TxDropped.Load())
	}
}

// TCP segments over IPv4 go to the card whole (TSO), in an advanced
// context descriptor and data descriptors the card cuts into the right
// frames; the others, and any segment the ring cannot hold, are cut by
// the driver.
func TestTSO(t *testing.T) {
	for _, descs := range []int{0, 16, 32} {
		t.Run(fmt.Sprint(descs), func(t *testing.T) {
			n, s, _ := start(t, Config{TxDescs: descs}, false, 1)
			intelnictest.CheckTSO(t, n, s.sentFrames, s.segments, n.tx.N)
			if e := s.errors(); len(e) > 0 {
				t.Error(e)
			}
		})
	}
}

// The card checks received checksums (RXCSUM) and the driver vouches
// to the stack for the frames it found right, and only those.
func TestRxChecksumOffload(t *testing.T) {
	n, s, r := start(t, Config{}, false, 1)
	if got := s.get(regRXCSUM); got != rxcsumIPOFLD|rxcsumTUOFLD {
		t.Errorf("RXCSUM %#x", got)
	}
	intelnictest.CheckRxChecksums(t, s.receive, r, true)
	if n.Stats.RxErrors.Load() != 0 {
		t.Errorf("%d receive errors", n.Stats.RxErrors.Load())
	}
}
