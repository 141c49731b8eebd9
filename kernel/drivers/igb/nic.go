// Package igb drives Intel's 82576 and i350 gigabit server
// controllers (QEMU's igb is an 82576; the i350 is the port of many
// servers' network cards; model.go says how they differ) as a netstack
// link endpoint. The 82576 keeps the e1000 family's register file but moves
// the data path to per-queue registers and "advanced" descriptors, and
// interrupts by MSI-X vectors that IVAR assigns to each cause; the
// driver uses one queue pair.
//
// Frames travel through two rings of 16-byte advanced descriptors in
// DMA memory, each descriptor with its own 2 KiB buffer. The card
// interrupts by MSI-X, else MSI, else its INTx pin, at most IntrRate
// times a second (EITR moderation); a goroutine woken by the interrupt
// reads the causes, notes link changes and wakes the receiver
// goroutine, which takes received frames to the stack and re-arms
// their descriptors. Transmit completions are reaped when frames are
// sent; their interrupt is routed only while a sender waits for a full
// ring, so an idle card costs nothing. Every descriptor the card hands
// back is checked (see intelnic.RxRing.Harvest): a device is input too.
package igb

import (
	"errors"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/net/link"
)

// Name is the driver's name, as the kernel log and Linux name it.
const Name = "igb"

// Config is what New needs besides the device.
type Config struct {
	Name string // eth0, ...
	DMA  intelnic.DMA
	Log  func(format string, args ...any)
	// RxDescs and TxDescs size the rings (multiples of 8 up to 256;
	// 0: 256 each; a 64 KiB TSO segment takes 34 transmit descriptors).
	RxDescs, TxDescs int
	// IntrRate caps the interrupts per second (0: DefaultIntrRate).
	IntrRate int
	// NoMSIX skips MSI-X (tests use it to take the MSI path).
	NoMSIX bool
}

// DefaultIntrRate is the interrupt moderation default: at most one
// interrupt per 125 µs. A burst of frames then costs one interrupt per
// ring pass; a lone frame still interrupts at once.
const DefaultIntrRate = 8000

// NIC is one card.
type NIC struct {
	Name  string
	Kind  pci.IntrKind // how it interrupts
	Model string       // the controller: 82576 or i350
	Port  int          // the controller's port (LAN function), from STATUS
	link.Ether
	// Oversize counts frames dropped for spanning more than
	// intelnic.MaxFrame (also in Stats.RxErrors); Wakeups counts the
	// interrupt goroutine's wake-ups, so tests can tell it never polls.
	Oversize, Wakeups atomic.Uint64

	model *model
	regs  pci.Region
	dma   intelnic.DMA
	irqs  []pci.IRQ
	log   func(format string, args ...any)
	up    atomic.Bool

	rx     *intelnic.RxRing // the receiver goroutine's
	rxWork chan struct{}    // signalled after an interrupt, for the receiver

	tx *intelnic.Tx // the transmit ring, behind WritePackets' lock

	stopped atomic.Bool
}

var (
	errModel  = errors.New("igb: not a controller this driver knows")
	errNoBAR  = errors.New("igb: BAR 0 is not a memory BAR of the register file's size")
	errGone   = errors.New("igb: registers read as all ones (the card is gone)")
	errReset  = errors.New("igb: the card did not come out of reset")
	errEEPROM = errors.New("igb: EEPROM read timed out")
	errNoMAC  = errors.New("igb: no valid MAC address in RAL0/RAH0 or the EEPROM")
	errQueue  = errors.New("igb: a queue did not report itself enabled")
)

// New resets d and brings it up as a network card.
func New(d *pci.Device, p pci.Platform, c Config) (*NIC, error) {
	m := modelOf(d)
	if m == nil {
		return nil, errModel
	}
	bar := d.BARs[0]
	if bar.IO || bar.Size < regsSize {
		return nil, errNoBAR
	}
	regs, err := p.Map(bar)
	if err != nil {
		return nil, err
	}
	if c.RxDescs == 0 {
		c.RxDescs = 256
	}
	if c.TxDescs == 0 {
		c.TxDescs = 256
	}
	if c.IntrRate <= 0 {
		c.IntrRate = DefaultIntrRate
	}
	n := &NIC{Name: c.Name, Model: m.name, model: m, regs: regs, dma: c.DMA, log: c.Log,
		rxWork: make(chan struct{}, 1)}
	if n.log == nil {
		n.log = func(string, ...any) {}
	}
	d.SetCommand(pci.CmdMemory|pci.CmdBusMaster, 0)
	if err := n.reset(); err != nil {
		return nil, err
	}
	mac, err := n.readMAC()
	if err != nil {
		return nil, err
	}
	n.InitEther(tcpip.LinkAddress(mac[:]), intelnic.FrameMTU)

	rx, err := intelnic.NewRing(c.DMA, advanced, c.RxDescs)
	if err != nil {
		return nil, err
	}
	tx, err := intelnic.NewRing(c.DMA, advanced, c.TxDescs)
	if err != nil {
		rx.Free(c.DMA)
		return nil, err
	}
	n.rx = &intelnic.RxRing{Ring: rx}
	n.tx = intelnic.NewTx(tx, func(tail int) { n.regs.Write32(regTDT, uint32(tail)) }, n.txInterrupt)

	vectors := 1
	if c.NoMSIX {
		vectors = 0 // Interrupts then skips MSI-X
	}
	kind, irqs, err := d.Interrupts(p, vectors)
	if err != nil {
		rx.Free(c.DMA)
		tx.Free(c.DMA)
		return nil, err
	}
	n.Kind, n.irqs = kind, irqs
	if err := n.configure(mac, c.IntrRate); err != nil {
		n.reset()
		for _, irq := range irqs {
			irq.Close()
		}
		rx.Free(c.DMA)
		tx.Free(c.DMA)
		return nil, err
	}
	go n.interrupts()
	go n.receiver()
	return n, nil
}

// wait polls until done, at most limit/50µs+1 times 50 µs apart; it
// reports whether done held. The bound is a count of polls, so at least
// limit: a host that stalls the driver between two polls (a loaded
// machine under the tests' device model) cannot use the bound up while
// the device is still given its polls.
func wait(limit time.Duration, done func() bool) bool {
	const every = 50 * time.Microsecond
	for i := limit / every; ; i-- {
		if done() {
			return true
		}
		if i <= 0 {
			return false
		}
		time.Sleep(every)
	}
}

// reset masks the card's interrupts, stops both directions and resets
// it (DS §4.3.1: the software reset clears itself; the EEPROM is then
// read again, which sets EECD.AUTO_RD when done, and the port's
// configuration loaded, which sets its EEMNGCTL.CFG_DONE bit).
func (n *NIC) reset() error {
	r := n.regs
	status := r.Read32(regSTATUS)
	if status == 0xffffffff {
		return errGone
	}
	n.Port = int(status>>statusLANIDShift) & 3
	r.Write32(regIMC, 0xffffffff)
	r.Write32(regEIMC, 0xffffffff)
	r.Write32(regRCTL, 0)
	r.Write32(regTCTL, 0)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlRST)
	time.Sleep(time.Millisecond)
	if !wait(10*time.Millisecond, func() bool { return r.Read32(regCTRL)&ctrlRST == 0 }) {
		return errReset
	}
	// A card without an EEPROM (QEMU's) never sets AUTO_RD; the address
	// is then read as the EEPROM fallback says, so this only waits.
	wait(10*time.Millisecond, func() bool { return r.Read32(regEECD)&eecdAutoRD != 0 })
	// The port's configuration load: within 100 ms, the bound Linux's
	// igb gives it (PHY_CFG_TIMEOUT).
	if !wait(100*time.Millisecond, func() bool { return r.Read32(regEEMNGCTL)&(eemngctlCfgDone0<<n.Port) != 0 }) {
		n.log("%s %s: the configuration load after reset did not end in 100 ms; going on", Name, n.Name)
	}
	r.Write32(regIMC, 0xffffffff)
	r.Write32(regEIMC, 0xffffffff)
	r.Read32(regICR)
	return nil
}

// readMAC takes the address the card loaded into receive address 0 from
// its EEPROM at reset, else reads the first three words of the port's
// section of the EEPROM.
func (n *NIC) readMAC() ([6]byte, error) {
	base := n.model.nvmBase(n.Port)
	mac, ok, err := intelnic.MAC(n.regs.Read32(regRAL0), n.regs.Read32(regRAH0),
		func(w int) (uint16, error) { return n.eeprom(base + w) })
	if err == nil && !ok {
		err = errNoMAC
	}
	return mac, err
}

// eeprom reads one 16-bit EEPROM word through EERD, bounded.
func (n *NIC) eeprom(word int) (uint16, error) {
	n.regs.Write32(regEERD, uint32(word)<<eerdAddrShift|eerdStart)
	var v uint32
	if !wait(10*time.Millisecond, func() bool { v = n.regs.Read32(regEERD); return v&eerdDone != 0 }) {
		return 0, errEEPROM
	}
	return uint16(v >> 16), nil
}

// eitr is EITR's value for rate interrupts a second: the interval in
// microseconds from bit 2.
func eitr(rate int) uint32 { return uint32(1e6/rate) << 2 }

// configure sets up the link, address filter, interrupt routing and
// moderation, and both rings (DS §4.5.9, §4.5.10: a queue is enabled
// after its ring is described and before its tail moves), then unmasks
// the interrupts it waits for.
func (n *NIC) configure(mac [6]byte, rate int) error {
	r := n.regs
	r.Write32(regCTRL, r.Read32(regCTRL)&^(ctrlLRST|ctrlPHY|ctrlVME)|ctrlSLU)
	r.Write32(regCTRLEXT, r.Read32(regCTRLEXT)|ctrlExtDrvLoad)
	if r.Read32(regSTATUS)&statusLU == 0 {
		n.restartAutoNeg()
	}
	for i := uint32(0); i < 128; i++ {
		r.Write32(regMTA+4*i, 0)
	}
	r.Write32(regRAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
	r.Write32(regRAH0, uint32(mac[4])|uint32(mac[5])<<8|rahAV)
	r.Write32(regRXCSUM, rxcsumIPOFLD|rxcsumTUOFLD) // the card checks checksums (advanced.RxCsum)

	if n.Kind == pci.MSIX {
		// Every cause on vector 0, one goroutine serving the card: the
		// receive queue and the "other" causes (link, overrun) always,
		// the transmit queue only while a sender waits (txInterrupt).
		// EIAC clears the vector's EICR bit as its message is sent.
		r.Write32(regGPIE, gpieNSICR|gpieMSIXMode|gpiePBA)
		r.Write32(regEIAC, 1)
		ivar, shift := n.model.ivar(0)
		r.Write32(ivar, ivarValid<<shift)
		r.Write32(regIVARMSC, ivarValid<<ivarOther)
	} else {
		r.Write32(regGPIE, gpieNSICR)
	}
	r.Write32(regEITR0, eitr(rate))

	tail := n.rx.Init()
	r.Write32(regRXDCTL, 0)
	r.Write32(regRDBAL, uint32(n.rx.Desc.Phys))
	r.Write32(regRDBAH, uint32(n.rx.Desc.Phys>>32))
	r.Write32(regRDLEN, uint32(n.rx.N*descSize))
	r.Write32(regRDH, 0)
	r.Write32(regRDT, 0)
	r.Write32(regSRRCTL, intelnic.BufSize>>srrctlBSizeShift|srrctlOneBuf)
	r.Write32(regRXDCTL, dctlThresh|dctlEnable)

	r.Write32(regTXDCTL, 0)
	r.Write32(regTDBAL, uint32(n.tx.Desc.Phys))
	r.Write32(regTDBAH, uint32(n.tx.Desc.Phys>>32))
	r.Write32(regTDLEN, uint32(n.tx.N*descSize))
	r.Write32(regTDH, 0)
	r.Write32(regTDT, 0)
	r.Write32(regTXDCTL, dctlThresh|dctlEnable)
	if !wait(10*time.Millisecond, func() bool {
		return r.Read32(regRXDCTL)&dctlEnable != 0 && r.Read32(regTXDCTL)&dctlEnable != 0
	}) {
		return errQueue
	}
	r.Write32(regTCTL, tctlEN|tctlPSP|tctlCT|tctlCOLD|tctlRTLC)
	// Multicast promiscuous rather than the MTA hash of each group:
	// netstack joins solicited-node groups per IPv6 address without
	// telling the link, and Linux falls back to the same when its list
	// outgrows the table.
	r.Write32(regRCTL, rctlEN|rctlBAM|rctlMPE|rctlSECRC)
	r.Write32(regRDT, uint32(tail))

	n.up.Store(r.Read32(regSTATUS)&statusLU != 0)
	if n.Kind == pci.MSIX {
		r.Write32(regIMS, icrLSC|icrRXO)
		r.Write32(regEIMS, 1)
	} else {
		r.Write32(regIMS, icrRXDW|icrRXO|icrLSC)
	}
	return nil
}

// restartAutoNeg asks the PHY to negotiate the link again: after the
// reset QEMU's card reports no link until it has, and a real PHY that
// lost its link does the same. The link-change interrupt says when it
// is up. A PHY that does not answer leaves the link as it is.
func (n *NIC) restartAutoNeg() {
	r := n.regs
	r.Write32(regMDIC, (bmcrAutoNeg|bmcrRestartAN|bmcrFullDuplex|bmcrSpeed1000MSB)|
		phyBMCR<<mdicRegShift|mdicPHY1|mdicOpWrite)
	var v uint32
	if !wait(10*time.Millisecond, func() bool { v = r.Read32(regMDIC); return v&mdicReady != 0 }) || v&mdicError != 0 {
		n.log("%s %s: the PHY did not take the auto-negotiation restart (MDIC %#x)", Name, n.Name, v)
	}
}

// txInterrupt routes the transmit completions to the interrupt (on) or
// away from it.
func (n *NIC) txInterrupt(on bool) {
	if n.Kind == pci.MSIX {
		ivar, shift := n.model.ivar(0)
		v := uint32(ivarValid) << shift
		if on {
			v |= ivarValid << (shift + ivarTxShift)
		}
		n.regs.Write32(ivar, v)
		return
	}
	if on {
		n.regs.Write32(regIMS, icrTXDW)
	} else {
		n.regs.Write32(regIMC, icrTXDW)
	}
}

// LinkUp reports the link state as of the last link-change interrupt.
func (n *NIC) LinkUp() bool { return n.up.Load() }

// interrupts is the card's goroutine: it reads (and so clears, GPIE.NSICR)
// the causes the card raised, does the work, then sleeps until the next
// interrupt. Under MSI-X the vector's cause bit cleared itself when the
// message was sent (EIAC); a cause raised during the work interrupts
// again, so nothing is lost between the last look and the sleep.
func (n *NIC) interrupts() {
	for {
		n.Wakeups.Add(1)
		icr := n.regs.Read32(regICR)
		if icr == 0xffffffff {
			n.log("%s %s: %v; the card is stopped", Name, n.Name, errGone)
			n.stopped.Store(true)
			return
		}
		if icr&icrLSC != 0 {
			n.linkChanged()
		}
		if icr&icrRXO != 0 {
			n.Stats.RxDropped.Add(uint64(n.regs.Read32(regMPC)))
		}
		for _, c := range []chan struct{}{n.rxWork, n.tx.Space} {
			select {
			case c <- struct{}{}:
			default:
			}
		}
		if err := n.irqs[0].Wait(); err != nil {
			return
		}
	}
}

func (n *NIC) linkChanged() {
	up := n.regs.Read32(regSTATUS)&statusLU != 0
	if n.up.Swap(up) != up {
		state := "down"
		if up {
			state = "up"
		}
		n.log("%s %s: link %s", Name, n.Name, state)
	}
}

// receiver is the card's receiver goroutine (intelnic.RxRing.Receive).
func (n *NIC) receiver() {
	n.rx.Receive(n.rxWork, &n.Ether, func(tail int) { n.regs.Write32(regRDT, uint32(tail)) }, &n.Oversize)
}
