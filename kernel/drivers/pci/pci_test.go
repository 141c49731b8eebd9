package pci_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

func at(bus, dev, fn uint8) pci.Addr { return pci.Addr{Bus: bus, Dev: dev, Fn: fn} }

func find(devs []*pci.Device, a pci.Addr) *pci.Device {
	for _, d := range devs {
		if d.Addr == a {
			return d
		}
	}
	return nil
}

func TestScanQ35(t *testing.T) {
	c := pcitest.Q35()
	devs, notes := pci.Scan(c)
	if len(notes) != 0 {
		t.Errorf("notes: %v", notes)
	}
	var got []string
	for _, d := range devs {
		got = append(got, fmt.Sprintf("%s %04x:%04x %06x", d.Addr, d.Vendor, d.Device, d.Class))
	}
	want := []string{
		"0000:00:00.0 8086:29c0 060000",
		"0000:00:01.0 1234:1111 030000",
		"0000:00:02.0 1af4:1042 010000",
		"0000:00:1c.0 1b36:000c 060400",
		"0000:01:00.0 8086:10d3 020000", // behind the root port, found before 00:1f
		"0000:00:1f.0 8086:2918 060100",
		"0000:00:1f.2 8086:2922 010601",
		"0000:00:1f.3 8086:2930 0c0500",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("devices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	blk := find(devs, at(0, 2, 0))
	if b := blk.BARs[4]; b != (pci.BAR{Addr: 0xfe000000, Size: 16384, Mem64: true, Prefetch: true}) {
		t.Errorf("virtio BAR4 = %+v", b)
	}
	if b := blk.BARs[1]; b != (pci.BAR{Addr: 0xfebd5000, Size: 4096}) {
		t.Errorf("virtio BAR1 = %+v", b)
	}
	if blk.BARs[5].Size != 0 || blk.BARs[0].Size != 0 {
		t.Errorf("unimplemented BARs sized: %+v", blk.BARs)
	}
	if blk.SubVendor != 0x1af4 || blk.SubDevice != 0x1100 {
		t.Errorf("subsystem %04x:%04x", blk.SubVendor, blk.SubDevice)
	}
	var ids []uint8
	for _, cp := range blk.Caps {
		ids = append(ids, cp.ID)
	}
	if fmt.Sprint(ids) != "[17 9 9 9 9]" {
		t.Errorf("virtio caps %v", ids)
	}
	if off, ok := blk.Cap(pci.CapVendor); !ok || off != 0x4c {
		t.Errorf("first vendor cap at %#x %v", off, ok)
	}
	nic := find(devs, at(1, 0, 0))
	if b := nic.BARs[2]; b != (pci.BAR{Addr: 0xc000, Size: 32, IO: true}) {
		t.Errorf("e1000e I/O BAR = %+v", b)
	}
	rp := find(devs, at(0, 0x1c, 0))
	if rp.Header != 1 || rp.Secondary != 1 || rp.BARs[0].Size != 4096 {
		t.Errorf("root port %+v", rp)
	}
	for a, f := range c.Funcs {
		if len(f.BadSizes) != 0 {
			t.Errorf("%s: BARs sized with decoding on: %v", a, f.BadSizes)
		}
		if cmd := binary.LittleEndian.Uint16(f.Space[4:]); cmd != 0 {
			t.Errorf("%s: command left %#x", a, cmd)
		}
	}
	// Sizing puts every BAR back.
	if v := c.Read(at(0, 2, 0), 0x20, 4); v != 0xfe00000c {
		t.Errorf("BAR4 after sizing %#x", v)
	}
}

func TestScanPC(t *testing.T) {
	devs, notes := pci.Scan(pcitest.PC())
	if len(notes) != 0 || len(devs) != 6 {
		t.Fatalf("%d devices, notes %v", len(devs), notes)
	}
	ide := find(devs, at(0, 1, 1))
	if b := ide.BARs[4]; b != (pci.BAR{Addr: 0xc060, Size: 16, IO: true}) {
		t.Errorf("IDE BAR4 (16-bit decoder) = %+v", b)
	}
	nic := find(devs, at(0, 3, 0))
	if nic.IntPin != 1 || nic.IntLine != 11 || len(nic.Caps) != 0 {
		t.Errorf("e1000 pin %d line %d caps %v", nic.IntPin, nic.IntLine, nic.Caps)
	}
}

func TestScanBadInput(t *testing.T) {
	c := pcitest.New()
	c.Add(at(0, 0, 0), 0x8086, 0x29c0, 0x060000)
	c.AddBridge(at(0, 1, 0), 0x1b36, 0xc, 0) // secondary not assigned
	c.AddBridge(at(0, 2, 0), 0x1b36, 0xc, 2) // to bus 2 ...
	c.AddBridge(at(2, 0, 0), 0x1b36, 0xc, 2) // ... which points at itself
	c.AddBridge(at(0, 3, 0), 0x1b36, 0xc, 3) // to bus 3 ...
	c.AddBridge(at(3, 0, 0), 0x1b36, 0xc, 4) // ... to 4 ...
	c.AddBridge(at(4, 0, 0), 0x1b36, 0xc, 3) // ... back to 3 (cannot be: secondary > primary)
	f := c.Add(at(0, 4, 0), 0x1af4, 0x1042, 0x010000)
	f.AddCap(pci.CapMSIX, pcitest.MSIXCap(1, 0, 0, 0))
	f.AddCap(pci.CapVendor, make([]byte, 14))
	f.LoopCaps()
	g := c.Add(at(0, 5, 0), 0x1af4, 0x1042, 0x010000)
	g.Space[6] |= 0x10
	g.Space[0x34] = 0x10 // capability pointer into the header
	devs, notes := pci.Scan(c)
	if len(devs) != 9 {
		t.Errorf("%d devices", len(devs))
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"0000:00:01.0 has secondary bus 00", "0000:02:00.0 has secondary bus 02",
		"0000:04:00.0 has secondary bus 03", "0000:00:04.0 capability list broken", "0000:00:05.0 capability list broken at 0x10"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no note %q in:\n%s", want, joined)
		}
	}
	if d := find(devs, at(0, 4, 0)); len(d.Caps) != 48 {
		t.Errorf("looping list gave %d caps", len(d.Caps))
	}
}

// ports decodes mechanism #1 onto a simulated configuration space.
type ports struct {
	c    *pcitest.Config
	addr uint32
}

func (p *ports) target(port uint16) (pci.Addr, uint16, bool) {
	a := p.addr
	if a&(1<<31) == 0 {
		return pci.Addr{}, 0, false
	}
	return at(uint8(a>>16), uint8(a>>11)&31, uint8(a>>8)&7), uint16(a&0xfc) + port - 0xcfc, true
}
func (p *ports) in(port uint16, size int) uint32 {
	a, off, ok := p.target(port)
	if !ok {
		return 0xffffffff
	}
	return p.c.Read(a, off, size)
}
func (p *ports) out(port uint16, size int, v uint32) {
	if port == 0xcf8 && size == 4 {
		p.addr = v
		return
	}
	if a, off, ok := p.target(port); ok {
		p.c.Write(a, off, size, v)
	}
}
func (p *ports) In8(port uint16) uint8       { return uint8(p.in(port, 1)) }
func (p *ports) In16(port uint16) uint16     { return uint16(p.in(port, 2)) }
func (p *ports) In32(port uint16) uint32     { return p.in(port, 4) }
func (p *ports) Out8(port uint16, v uint8)   { p.out(port, 1, uint32(v)) }
func (p *ports) Out16(port uint16, v uint16) { p.out(port, 2, uint32(v)) }
func (p *ports) Out32(port uint16, v uint32) { p.out(port, 4, v) }

// ecam lays a simulated configuration space out as ECAM memory.
type ecam struct{ c *pcitest.Config }

func (e ecam) split(off uint32) (pci.Addr, uint16) {
	return at(uint8(off>>20), uint8(off>>15)&31, uint8(off>>12)&7), uint16(off & 0xfff)
}
func (e ecam) Read8(off uint32) uint8       { a, o := e.split(off); return uint8(e.c.Read(a, o, 1)) }
func (e ecam) Read16(off uint32) uint16     { a, o := e.split(off); return uint16(e.c.Read(a, o, 2)) }
func (e ecam) Read32(off uint32) uint32     { a, o := e.split(off); return e.c.Read(a, o, 4) }
func (e ecam) Write8(off uint32, v uint8)   { a, o := e.split(off); e.c.Write(a, o, 1, uint32(v)) }
func (e ecam) Write16(off uint32, v uint16) { a, o := e.split(off); e.c.Write(a, o, 2, uint32(v)) }
func (e ecam) Write32(off uint32, v uint32) { a, o := e.split(off); e.c.Write(a, o, 4, v) }

// The two access mechanisms see the same functions as direct access.
func TestAccessMechanisms(t *testing.T) {
	for name, mk := range map[string]func(*pcitest.Config) pci.Config{
		"ports": func(c *pcitest.Config) pci.Config { return &pci.PortConfig{P: &ports{c: c}} },
		"ecam":  func(c *pcitest.Config) pci.Config { return &pci.ECAM{Mem: ecam{c}, Start: 0, End: 255} },
	} {
		t.Run(name, func(t *testing.T) {
			want, _ := pci.Scan(pcitest.Q35())
			got, notes := pci.Scan(mk(pcitest.Q35()))
			if len(notes) != 0 || len(got) != len(want) {
				t.Fatalf("%d devices (want %d), notes %v", len(got), len(want), notes)
			}
			for i := range got {
				g, w := *got[i], *want[i]
				if fmt.Sprint(g.Addr, g.Vendor, g.Device, g.Class, g.BARs, g.Caps, g.IntLine) !=
					fmt.Sprint(w.Addr, w.Vendor, w.Device, w.Class, w.BARs, w.Caps, w.IntLine) {
					t.Errorf("%s: %+v\nwant %+v", g.Addr, g, w)
				}
			}
		})
	}
	p := &pci.PortConfig{P: &ports{c: pcitest.Q35()}}
	if v := p.Read(at(0, 2, 0), 0x100, 4); v != 0xffffffff {
		t.Errorf("port mechanism read past 256 bytes: %#x", v)
	}
	e := &pci.ECAM{Mem: ecam{pcitest.Q35()}, Start: 0, End: 0}
	if v := e.Read(at(1, 0, 0), 0, 2); v != 0xffff {
		t.Errorf("ECAM read outside its buses: %#x", v)
	}
}

// platform hands out MSI vectors and maps BARs onto simulated memory.
type platform struct {
	bars   map[uint64]*pcitest.Mem
	next   uint32
	limit  int
	intx   int
	mapErr error
}

type irq struct{ n uint32 }

func (irq) Wait() error  { return nil }
func (irq) Close() error { return nil }

func (p *platform) Map(b pci.BAR) (pci.Region, error) {
	if p.mapErr != nil {
		return nil, p.mapErr
	}
	if p.bars[b.Addr] == nil {
		p.bars[b.Addr] = &pcitest.Mem{B: make([]byte, b.Size)}
	}
	return p.bars[b.Addr], nil
}

// AllocMSI aims at the local APIC whose ID is the CPU's number.
func (p *platform) AllocMSI(cpu int) (pci.IRQ, uint64, uint32, error) {
	if p.limit == 0 {
		return nil, 0, 0, errors.New("no vectors")
	}
	p.limit--
	p.next++
	return irq{p.next}, 0xfee00000 | uint64(cpu)<<12, 0x30 + p.next, nil
}
func (p *platform) INTx(d *pci.Device) (pci.IRQ, error) { p.intx++; return irq{}, nil }

func TestInterrupts(t *testing.T) {
	c := pcitest.Q35()
	devs, _ := pci.Scan(c)
	p := &platform{bars: map[uint64]*pcitest.Mem{}, limit: 8}

	// virtio-blk: MSI-X, 2 entries, asked for 3.
	blk := find(devs, at(0, 2, 0))
	kind, irqs, err := blk.Interrupts(p, 3)
	if err != nil || kind != pci.MSIX || len(irqs) != 2 {
		t.Fatalf("virtio: %v %d irqs %v", kind, len(irqs), err)
	}
	tbl := p.bars[0xfebd5000]
	for i := 0; i < 2; i++ {
		e := tbl.B[16*i:]
		if binary.LittleEndian.Uint32(e) != 0xfee00000 || binary.LittleEndian.Uint32(e[8:]) != 0x31+uint32(i) ||
			binary.LittleEndian.Uint32(e[12:])&1 != 0 {
			t.Errorf("MSI-X entry %d: %x", i, e[:16])
		}
	}
	off, _ := blk.Cap(pci.CapMSIX)
	if ctrl := c.Read(blk.Addr, off+2, 2); ctrl&0xc000 != 0x8000 {
		t.Errorf("MSI-X control %#x: want enabled, unmasked", ctrl)
	}
	if cmd := c.Read(blk.Addr, pci.RegCommand, 2); cmd&(pci.CmdINTxDisable|pci.CmdMemory) != pci.CmdINTxDisable|pci.CmdMemory {
		t.Errorf("command %#x", cmd)
	}

	// AHCI: MSI only.
	ahci := find(devs, at(0, 0x1f, 2))
	kind, irqs, err = ahci.Interrupts(p, 4)
	if err != nil || kind != pci.MSI || len(irqs) != 1 {
		t.Fatalf("ahci: %v %d %v", kind, len(irqs), err)
	}
	off, _ = ahci.Cap(pci.CapMSI)
	if ctrl := c.Read(ahci.Addr, off+2, 2); ctrl&0x71 != 1 {
		t.Errorf("MSI control %#x", ctrl)
	}
	if a, d := c.Read(ahci.Addr, off+4, 4), c.Read(ahci.Addr, off+12, 2); a != 0xfee00000 || d != 0x33 {
		t.Errorf("MSI message %#x %#x", a, d)
	}

	// e1000e with MSI-X whose mapping fails falls back to MSI; out of
	// vectors, to INTx.
	nic := find(devs, at(1, 0, 0))
	p.mapErr = errors.New("no mapping")
	if kind, _, err = nic.Interrupts(p, 1); kind != pci.MSI || err != nil {
		t.Errorf("e1000e without MSI-X mapping: %v %v", kind, err)
	}
	p.limit = 0
	if kind, _, err = nic.Interrupts(p, 1); kind != pci.INTx || err != nil || p.intx != 1 {
		t.Errorf("e1000e without vectors: %v %v", kind, err)
	}
	host := find(devs, at(0, 0, 0))
	if _, _, err = host.Interrupts(p, 1); !errors.Is(err, pci.ErrNoInterrupt) {
		t.Errorf("host bridge: %v", err)
	}
}

// InterruptsOn aims each MSI-X entry at its CPU, and the one MSI of the
// fallback at the first.
func TestInterruptsOn(t *testing.T) {
	c := pcitest.Q35()
	devs, _ := pci.Scan(c)
	p := &platform{bars: map[uint64]*pcitest.Mem{}, limit: 8}

	// virtio-blk: MSI-X, 2 entries, asked for 3 on CPUs 3, 1 and 2.
	blk := find(devs, at(0, 2, 0))
	kind, irqs, err := blk.InterruptsOn(p, []int{3, 1, 2})
	if err != nil || kind != pci.MSIX || len(irqs) != 2 {
		t.Fatalf("virtio: %v %d irqs %v", kind, len(irqs), err)
	}
	tbl := p.bars[0xfebd5000]
	for i, cpu := range []uint32{3, 1} {
		if a := binary.LittleEndian.Uint32(tbl.B[16*i:]); a != 0xfee00000|cpu<<12 {
			t.Errorf("MSI-X entry %d: address %#x, want CPU %d's %#x", i, a, cpu, 0xfee00000|cpu<<12)
		}
	}

	// AHCI: MSI only, on the first CPU named.
	ahci := find(devs, at(0, 0x1f, 2))
	if kind, irqs, err = ahci.InterruptsOn(p, []int{2, 0}); err != nil || kind != pci.MSI || len(irqs) != 1 {
		t.Fatalf("ahci: %v %d %v", kind, len(irqs), err)
	}
	off, _ := ahci.Cap(pci.CapMSI)
	if a := c.Read(ahci.Addr, off+4, 4); a != 0xfee02000 {
		t.Errorf("MSI address %#x, want CPU 2's 0xfee02000", a)
	}
}

// An MSI-X table that does not fit its BAR is refused.
func TestMSIXTableOutsideBAR(t *testing.T) {
	c := pcitest.New()
	f := c.Add(at(0, 2, 0), 0x1af4, 0x1042, 0x010000).MemBAR(1, 0xfebd5000, 4096, false, false)
	f.AddCap(pci.CapMSIX, pcitest.MSIXCap(300, 1, 0, 0x800)) // 300*16 > 4096
	devs, _ := pci.Scan(c)
	p := &platform{bars: map[uint64]*pcitest.Mem{}, limit: 8}
	if kind, _, err := devs[0].Interrupts(p, 1); !errors.Is(err, pci.ErrNoInterrupt) || kind != pci.INTx {
		t.Errorf("%v %v", kind, err)
	}
	if p.limit != 8 {
		t.Errorf("vectors taken for a refused table")
	}
}

func TestBusDriversAndProc(t *testing.T) {
	p := &platform{bars: map[uint64]*pcitest.Mem{}, limit: 8}
	bus, _ := pci.NewBus(pcitest.Q35(), p)
	var probed []string
	lines := bus.Register(&pci.Driver{
		Name: "virtio-pci",
		IDs:  []pci.ID{{Vendor: 0x1af4, Device: 0x1042}, {Vendor: 0x1af4, Device: 0x1041}},
		Probe: func(d *pci.Device, _ pci.Platform) error {
			probed = append(probed, d.Addr.String())
			return nil
		},
	})
	lines = append(lines, bus.Register(&pci.Driver{
		Name:  "e1000e",
		IDs:   []pci.ID{{Vendor: 0x8086, Device: 0x10d3}},
		Probe: func(d *pci.Device, _ pci.Platform) error { return errors.New("no link") },
	})...)
	if fmt.Sprint(probed) != "[0000:00:02.0]" || len(lines) != 2 || !strings.Contains(lines[1], "no link") {
		t.Fatalf("probed %v, lines %q", probed, lines)
	}
	out := string(bus.ProcDevices())
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(rows) != 8 {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	// As Linux prints it: bus+devfn, vendor+device, irq, 7 starts with
	// flag bits, 7 sizes, driver.
	z := fmt.Sprintf("%16x", 0)
	want := "0010\t1af41042\ta\t" + z + "\t" + fmt.Sprintf("%16x", 0xfebd5000) + "\t" + z + "\t" + z + "\t" +
		fmt.Sprintf("%16x", 0xfe00000c) + "\t" + z + "\t" + z + "\t" +
		z + "\t" + fmt.Sprintf("%16x", 0x1000) + "\t" + z + "\t" + z + "\t" + fmt.Sprintf("%16x", 0x4000) + "\t" + z + "\t" + z +
		"\tvirtio-pci"
	if rows[2] != want {
		t.Errorf("virtio row\n%q\nwant\n%q", rows[2], want)
	}
	if !strings.HasPrefix(rows[4], "0100\t808610d3\tb\t") || !strings.HasSuffix(rows[4], "\t") {
		t.Errorf("e1000e row (unbound) %q", rows[4])
	}
	if !strings.Contains(rows[4], fmt.Sprintf("\t%16x\t", 0xc001)) {
		t.Errorf("I/O BAR without its flag bit: %q", rows[4])
	}
}
