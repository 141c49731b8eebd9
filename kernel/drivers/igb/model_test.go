package igb

import (
	"testing"

	"shortbread/kernel/drivers/pci"
)

// startPort brings up a simulated card of device ID dev as port port.
func startPort(t *testing.T, dev uint16, port int, noRA bool, last byte) (*NIC, *sim, *recorder) {
	t.Helper()
	s := newSimPort(dev, port, testMAC(last), noRA)
	n, err := New(s.dev, simPlatform{s}, Config{Name: "eth0", DMA: s.mem, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.irq.Close() })
	r := newRecorder()
	n.Attach(r)
	eventually(t, "link up after auto-negotiation", n.LinkUp)
	return n, s, r
}

// An i350 port finds its own address, loaded by the card or read from
// its section of the NVM, waits for the reset's configuration load, and
// moves frames both ways.
func TestI350Ports(t *testing.T) {
	for port := 0; port < 4; port++ {
		for _, noRA := range []bool{false, true} {
			n, s, r := startPort(t, 0x1521, port, noRA, byte(10+port))
			if n.Model != "i350" || n.Port != port {
				t.Errorf("port %d: model %q port %d", port, n.Model, n.Port)
			}
			if n.MAC() != linkAddr(testMAC(byte(10+port))) {
				t.Errorf("port %d (RAL0 empty: %v): MAC %v, want %v", port, noRA, n.MAC(), linkAddr(testMAC(byte(10+port))))
			}
			if e := len(s.written(regEERD)); noRA && e != 3 || !noRA && e != 0 {
				t.Errorf("port %d (RAL0 empty: %v): EERD written %d times", port, noRA, e)
			}
			s.receive(frame(200, 1))
			r.Wait(t, 1)
			if errs := s.errors(); len(errs) > 0 {
				t.Errorf("port %d: %v", port, errs)
			}
		}
	}
}

// IVAR's layouts (model.go): queue 0 alike, the others apart.
func TestIVARLayouts(t *testing.T) {
	type at struct {
		reg   uint32
		shift uint
	}
	want := map[*model][4]at{
		model82576: {{regIVAR0, 0}, {regIVAR0 + 4, 0}, {regIVAR0, 16}, {regIVAR0 + 4, 16}},
		modelI350:  {{regIVAR0, 0}, {regIVAR0, 16}, {regIVAR0 + 16, 0}, {regIVAR0 + 16, 16}},
	}
	for m, w := range want {
		for i, q := range []int{0, 1, 8, 9} {
			if reg, shift := m.ivar(q); (at{reg, shift}) != w[i] {
				t.Errorf("%s queue %d: IVAR %#x shift %d, want %#x %d", m.name, q, reg, shift, w[i].reg, w[i].shift)
			}
		}
	}
}

// Every ID the driver claims has a model, and a device it does not
// claim is refused.
func TestModels(t *testing.T) {
	for _, id := range IDs {
		if modelOf(&pci.Device{Vendor: id.Vendor, Device: id.Device}) == nil {
			t.Errorf("%04x:%04x has no model", id.Vendor, id.Device)
		}
	}
	if len(IDs) != len(models) {
		t.Errorf("%d IDs, %d models", len(IDs), len(models))
	}
	s := newSimPort(0x1522, 0, testMAC(1), false) // i350 fibre: not driven
	if _, err := New(s.dev, simPlatform{s}, Config{Name: "eth0", DMA: s.mem}); err != errModel {
		t.Errorf("New on an i350 fibre port: %v, want %v", err, errModel)
	}
}
