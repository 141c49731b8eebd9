package virtio_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio"
	"shortbread/kernel/drivers/virtio/virtiotest"
)

// echo copies what the driver gives into what it lets the device write.
type echo struct{}

func (echo) Features() uint64 { return 1<<5 | 1<<9 }
func (echo) Queues() int      { return 1 }
func (echo) Config() []byte   { return []byte{1, 2, 3, 4, 5, 6, 7, 8} }
func (echo) Handle(q int, bufs []virtiotest.Buf) uint32 {
	var in []byte
	var n uint32
	for _, b := range bufs {
		if !b.Write {
			in = append(in, b.Data...)
			continue
		}
		c := copy(b.Data, in)
		in = in[c:]
		n += uint32(c)
	}
	return n
}

type setup struct {
	dev *virtiotest.Device
	t   *virtio.Transport
	q   *virtio.Queue
	irq pci.IRQ
}

func open(t *testing.T, dev *virtiotest.Device) setup {
	t.Helper()
	devs, _ := pci.Scan(dev.Cfg)
	if len(devs) != 1 {
		t.Fatalf("%d devices", len(devs))
	}
	tr, err := virtio.Open(devs[0], dev.Platform())
	if err != nil {
		t.Fatal(err)
	}
	feat, err := tr.Negotiate(1<<9 | 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	if feat != 1<<9|virtio.FeatureVersion1 || dev.DriverFeatures() != feat {
		t.Fatalf("features %#x, device saw %#x", feat, dev.DriverFeatures())
	}
	kind, irqs, err := devs[0].Interrupts(dev.Platform(), 1)
	if err != nil || kind != pci.MSIX {
		t.Fatalf("interrupts %v %v", kind, err)
	}
	q, err := tr.SetupQueue(0, 64, 0, dev.Mem)
	if err != nil {
		t.Fatal(err)
	}
	tr.DriverOK()
	if s := dev.Status(); s != virtio.StatusAcknowledge|virtio.StatusDriver|virtio.StatusFeaturesOK|virtio.StatusDriverOK {
		t.Fatalf("status %#x", s)
	}
	if b := tr.Config().Read32(4); b != 0x08070605 {
		t.Errorf("device config %#x", b)
	}
	return setup{dev, tr, q, irqs[0]}
}

func page(t *testing.T, m *virtiotest.Mem, fill byte) virtio.Page {
	p, err := m.Alloc()
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Mem {
		p.Mem[i] = fill
	}
	return p
}

// wait collects n completions, waiting for interrupts between.
func wait(t *testing.T, s setup, n int) map[uint16]uint32 {
	t.Helper()
	got := map[uint16]uint32{}
	tokens := map[int]bool{}
	deadline := time.After(5 * time.Second)
	for len(got) < n {
		c, ok, err := s.q.Used()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if tok, isInt := c.Token.(int); isInt {
				if tokens[tok] {
					t.Fatalf("token %d completed twice", tok)
				}
				tokens[tok] = true
			}
			got[c.Head] = c.Len
			continue
		}
		done := make(chan error, 1)
		go func() { done <- s.irq.Wait() }()
		select {
		case <-done:
		case <-deadline:
			t.Fatalf("%d of %d completions", len(got), n)
		}
	}
	return got
}

func TestRoundTrip(t *testing.T) {
	s := open(t, virtiotest.New(0x1040+9, echo{}))
	if s.q.Size() != 64 {
		t.Errorf("queue size %d", s.q.Size())
	}
	in, out := page(t, s.dev.Mem, 0x5a), page(t, s.dev.Mem, 0)
	head, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 100}, {Phys: out.Phys, Len: 4096, Write: true}}, uint16(0))
	if err != nil {
		t.Fatal(err)
	}
	s.q.Kick()
	got := wait(t, s, 1)
	if got[head] != 100 || out.Mem[99] != 0x5a || out.Mem[100] != 0 {
		t.Fatalf("completion %v, data %x %x", got, out.Mem[99], out.Mem[100])
	}
	if len(s.dev.Errors) != 0 {
		t.Fatal(s.dev.Errors)
	}
}

// Many requests in flight, more than the queue holds at once, complete
// each exactly once and reuse descriptors.
func TestManyInFlight(t *testing.T) {
	s := open(t, virtiotest.New(0x1040+9, echo{}))
	in, out := page(t, s.dev.Mem, 1), page(t, s.dev.Mem, 0)
	s.dev.Hold.Store(true)
	var heads []uint16
	for {
		h, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}, {Phys: out.Phys, Len: 8, Write: true}}, len(heads))
		if errors.Is(err, virtio.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	if len(heads) != 32 {
		t.Fatalf("%d two-descriptor requests fit in 64 descriptors", len(heads))
	}
	s.q.Kick()
	s.dev.Release()
	got := wait(t, s, len(heads))
	for _, h := range heads {
		if got[h] != 8 {
			t.Errorf("request %d: %d bytes", h, got[h])
		}
	}
	for round := 0; round < 5; round++ {
		for i := 0; i < 32; i++ {
			if _, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}, {Phys: out.Phys, Len: 8, Write: true}}, nil); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		s.q.Kick()
		wait(t, s, 32)
	}
}

func TestBadDevice(t *testing.T) {
	for name, corrupt := range map[string]func(id, n *uint32, idx *uint16){
		"id out of range":  func(id, n *uint32, idx *uint16) { *id = 1000 },
		"id not in flight": func(id, n *uint32, idx *uint16) { *id ^= 1 },
		"length too long":  func(id, n *uint32, idx *uint16) { *n = 4097 },
		"index ran ahead":  func(id, n *uint32, idx *uint16) { *idx += 5 },
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t, virtiotest.New(0x1040+9, echo{}))
			s.dev.Corrupt = corrupt
			in, out := page(t, s.dev.Mem, 1), page(t, s.dev.Mem, 0)
			if _, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}, {Phys: out.Phys, Len: 4096, Write: true}}, nil); err != nil {
				t.Fatal(err)
			}
			s.q.Kick()
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, ok, err := s.q.Used()
				if errors.Is(err, virtio.ErrDevice) {
					break
				}
				if ok || time.Now().After(deadline) {
					t.Fatalf("bad completion accepted (ok %v, err %v)", ok, err)
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}}, nil); !errors.Is(err, virtio.ErrDevice) {
				t.Errorf("broken queue took a request: %v", err)
			}
		})
	}
}

func TestNegotiationAndLayoutErrors(t *testing.T) {
	dev := virtiotest.New(0x1040+9, echo{})
	dev.RefuseFeatures()
	devs, _ := pci.Scan(dev.Cfg)
	tr, err := virtio.Open(devs[0], dev.Platform())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Negotiate(1 << 9); err == nil || dev.Status()&virtio.StatusFailed == 0 {
		t.Errorf("refused features: %v, status %#x", err, dev.Status())
	}

	// The common structure claims to run past its BAR.
	dev = virtiotest.New(0x1040+9, echo{})
	f := dev.Function()
	off, _ := func() (uint16, bool) {
		devs, _ := pci.Scan(dev.Cfg)
		return devs[0].Cap(pci.CapVendor)
	}()
	f.Space[off+12] = 0xff
	f.Space[off+13] = 0xff // length 0xffff from offset 0 in a 16 KiB BAR
	devs, _ = pci.Scan(dev.Cfg)
	if _, err := virtio.Open(devs[0], dev.Platform()); err == nil || !strings.Contains(err.Error(), "outside its BAR") {
		t.Errorf("oversized structure: %v", err)
	}

	// A queue offering 3 entries gets 2 (a power of two).
	dev = virtiotest.New(0x1040+9, echo{})
	dev.SetQueueMax(3)
	devs, _ = pci.Scan(dev.Cfg)
	tr, _ = virtio.Open(devs[0], dev.Platform())
	tr.Negotiate(0)
	q, err := tr.SetupQueue(0, 256, virtio.NoVector, dev.Mem)
	if err != nil || q.Size() != 2 {
		t.Errorf("queue of 3: %v %v", q, err)
	}
	if _, err := tr.SetupQueue(0, 256, 7, dev.Mem); err == nil {
		t.Error("MSI-X vector beyond the table accepted")
	}
}

// UsedTolerant steps over an entry naming no request in flight and
// hands back a request whose length is too long, both as ErrBadEntry,
// and the queue goes on; an index running ahead still breaks it.
func TestBadDeviceTolerant(t *testing.T) {
	for name, c := range map[string]struct {
		corrupt func(id, n *uint32, idx *uint16)
		token   bool // the request comes back
		fatal   bool
	}{
		"id out of range":  {func(id, n *uint32, idx *uint16) { *id = 1000 }, false, false},
		"id not in flight": {func(id, n *uint32, idx *uint16) { *id ^= 1 }, false, false},
		"length too long":  {func(id, n *uint32, idx *uint16) { *n = 4097 }, true, false},
		"index ran ahead":  {func(id, n *uint32, idx *uint16) { *idx += 5 }, false, true},
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t, virtiotest.New(0x1040+9, echo{}))
			s.dev.Corrupt = c.corrupt
			in, out := page(t, s.dev.Mem, 1), page(t, s.dev.Mem, 0)
			if _, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}, {Phys: out.Phys, Len: 4096, Write: true}}, "first"); err != nil {
				t.Fatal(err)
			}
			s.q.Kick()
			var got virtio.Completion
			var err error
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				var ok bool
				if got, ok, err = s.q.UsedTolerant(); ok || err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("nothing came back")
				}
			}
			if c.fatal {
				if !errors.Is(err, virtio.ErrDevice) || !errors.Is(s.q.Broken(), virtio.ErrDevice) {
					t.Errorf("error %v, queue %v", err, s.q.Broken())
				}
				return
			}
			if !errors.Is(err, virtio.ErrBadEntry) || (got.Token == "first") != c.token {
				t.Fatalf("completion %+v, error %v", got, err)
			}
			want := 1
			if c.token {
				want = 0
			}
			if o := s.q.Outstanding(); o != want {
				t.Errorf("%d requests outstanding, want %d", o, want)
			}
			// The queue goes on.
			s.dev.Corrupt = nil
			if _, err := s.q.Add([]virtio.Buf{{Phys: in.Phys, Len: 8}, {Phys: out.Phys, Len: 8, Write: true}}, "second"); err != nil {
				t.Fatal(err)
			}
			s.q.Kick()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				c, ok, err := s.q.UsedTolerant()
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					if c.Token != "second" || c.Len != 8 {
						t.Errorf("completion %+v", c)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the second request did not come back")
				}
			}
		})
	}
}
