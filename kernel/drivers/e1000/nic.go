// Package e1000 drives Intel's 82540EM (QEMU's e1000, the pc machine's
// default NIC, common under hypervisors) and 82574L (QEMU's e1000e,
// q35's default, and on physical servers) as netstack link endpoints.
// Model holds the few differences; the register map, the legacy
// descriptor rings and the interrupt logic are shared.
//
// Frames travel through two rings of 16-byte descriptors in DMA memory,
// each descriptor with its own 2048-byte buffer. The card interrupts by
// MSI-X (82574), else MSI, else its INTx pin through the I/O APIC, at
// most IntrRate times a second (ITR/EITR moderation); a goroutine woken
// by the interrupt acknowledges it, notes link changes (LSC) and wakes
// the receiver goroutine, which takes received frames to the stack and
// re-arms their descriptors. Transmit
// completions are reaped when frames are sent; their interrupt is
// enabled only while a sender waits for a full ring, so an idle card
// costs nothing. Every descriptor the card hands back is checked (see
// intelnic.RxRing.Harvest): a device is input too.
package e1000

import (
	"errors"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/net/link"
)

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
// interrupt per 125 µs (ITR 488), about QEMU e1000e's floor of 500. A
// burst of frames then costs one interrupt per ring pass; a lone frame
// still interrupts at once.
const DefaultIntrRate = 8000

// NIC is one card.
type NIC struct {
	Name  string
	Model *Model
	Kind  pci.IntrKind // how it interrupts
	link.Ether
	// Oversize counts frames dropped for spanning more than
	// intelnic.MaxFrame (also in Stats.RxErrors); Wakeups counts the
	// interrupt goroutine's wake-ups, so tests can tell it never polls.
	Oversize, Wakeups atomic.Uint64

	regs pci.Region
	dma  intelnic.DMA
	irqs []pci.IRQ
	log  func(format string, args ...any)
	up   atomic.Bool

	rxCause, txCause, linkCause uint32

	rx     *intelnic.RxRing // the receiver goroutine's
	rxWork chan struct{}    // signalled after an interrupt, for the receiver

	tx *intelnic.Tx // the transmit ring, behind WritePackets' lock

	stopped atomic.Bool
}

var (
	errNoBAR  = errors.New("e1000: BAR 0 is not a memory BAR of the register file's size")
	errGone   = errors.New("e1000: registers read as all ones (the card is gone)")
	errReset  = errors.New("e1000: the card did not come out of reset")
	errEEPROM = errors.New("e1000: EEPROM read timed out")
	errNoMAC  = errors.New("e1000: no valid MAC address in RAL0/RAH0 or the EEPROM")
)

// New resets d and brings it up as a network card of model m.
func New(d *pci.Device, p pci.Platform, m *Model, c Config) (*NIC, error) {
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
	n := &NIC{Name: c.Name, Model: m, regs: regs, dma: c.DMA, log: c.Log,
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

	rx, err := intelnic.NewRing(c.DMA, legacy, c.RxDescs)
	if err != nil {
		return nil, err
	}
	tx, err := intelnic.NewRing(c.DMA, legacy, c.TxDescs)
	if err != nil {
		rx.Free(c.DMA)
		return nil, err
	}
	n.rx = &intelnic.RxRing{Ring: rx}
	n.tx = intelnic.NewTx(tx, func(tail int) { n.regs.Write32(regTDT, uint32(tail)) }, n.txInterrupt)

	vectors := 1
	if !m.msix || c.NoMSIX {
		vectors = 0 // Interrupts then skips MSI-X
	}
	kind, irqs, err := d.Interrupts(p, vectors)
	if err != nil {
		rx.Free(c.DMA)
		tx.Free(c.DMA)
		return nil, err
	}
	n.Kind, n.irqs = kind, irqs
	n.configure(mac, c.IntrRate)
	go n.interrupts()
	go n.receiver()
	return n, nil
}

// reset masks the card's interrupts, stops both directions and resets
// the MAC (SDM §14.9: wait at least 1 µs; RST clears itself).
func (n *NIC) reset() error {
	r := n.regs
	if r.Read32(regSTATUS) == 0xffffffff {
		return errGone
	}
	r.Write32(regIMC, 0xffffffff)
	r.Write32(regRCTL, 0)
	r.Write32(regTCTL, 0)
	r.Write32(regCTRL, r.Read32(regCTRL)|ctrlRST)
	time.Sleep(time.Millisecond)
	for i := 0; r.Read32(regCTRL)&ctrlRST != 0; i++ {
		if i == 100 {
			return errReset
		}
		time.Sleep(100 * time.Microsecond)
	}
	r.Write32(regIMC, 0xffffffff)
	r.Read32(regICR)
	return nil
}

// readMAC takes the address the card loaded into receive address 0 from
// its EEPROM at reset, else reads the EEPROM's first three words.
func (n *NIC) readMAC() ([6]byte, error) {
	mac, ok, err := intelnic.MAC(n.regs.Read32(regRAL0), n.regs.Read32(regRAH0), n.eeprom)
	if err == nil && !ok {
		err = errNoMAC
	}
	return mac, err
}

// eeprom reads one 16-bit EEPROM word through EERD, bounded.
func (n *NIC) eeprom(word int) (uint16, error) {
	n.regs.Write32(regEERD, uint32(word)<<n.Model.eerdAddrShift|1)
	for i := 0; i < 1000; i++ {
		v := n.regs.Read32(regEERD)
		if v&n.Model.eerdDone != 0 {
			return uint16(v >> 16), nil
		}
		time.Sleep(10 * time.Microsecond)
	}
	return 0, errEEPROM
}

// itr is ITR's value for rate interrupts a second (256 ns units).
func itr(rate int) uint32 { return uint32(1e9 / 256 / rate) }

// configure sets up the link, address filter, interrupt routing and
// moderation, and both rings, then unmasks the interrupts it waits for.
func (n *NIC) configure(mac [6]byte, rate int) {
	r := n.regs
	r.Write32(regCTRL, r.Read32(regCTRL)&^(ctrlLRST|ctrlPHY|ctrlILOS|ctrlVME)|ctrlSLU|ctrlASDE)
	for i := uint32(0); i < 128; i++ {
		r.Write32(regMTA+4*i, 0)
	}
	r.Write32(regRAL0, uint32(mac[0])|uint32(mac[1])<<8|uint32(mac[2])<<16|uint32(mac[3])<<24)
	r.Write32(regRAH0, uint32(mac[4])|uint32(mac[5])<<8|rahAV)

	n.rxCause, n.txCause, n.linkCause = icrRXT0|icrRXO|icrRXDMT, icrTXDW, icrLSC
	if n.Kind == pci.MSIX {
		// Every cause on vector 0: one goroutine serves the card.
		r.Write32(regIVAR, (ivarValid|0)<<ivarRxQ0|(ivarValid|0)<<ivarTxQ0|(ivarValid|0)<<ivarOther)
		r.Write32(regEITR0, itr(rate))
		n.rxCause |= icrRXQ0
		n.txCause |= icrTXQ0
		n.linkCause |= icrOTHER
	}
	r.Write32(regITR, itr(rate))

	r.Write32(regRXCSUM, rxcsumIPOFL|rxcsumTUOFL) // the card checks checksums (legacy.RxCsum)
	r.Write32(regRDTR, 0)                         // ITR alone moderates receive interrupts
	r.Write32(regRADV, 0)
	tail := n.rx.Init()
	r.Write32(regRDBAL, uint32(n.rx.Desc.Phys))
	r.Write32(regRDBAH, uint32(n.rx.Desc.Phys>>32))
	r.Write32(regRDLEN, uint32(n.rx.N*descSize))
	r.Write32(regRDH, 0)
	r.Write32(regRDT, uint32(tail))

	r.Write32(regTIDV, 0)
	r.Write32(regTADV, 0)
	r.Write32(regTDBAL, uint32(n.tx.Desc.Phys))
	r.Write32(regTDBAH, uint32(n.tx.Desc.Phys>>32))
	r.Write32(regTDLEN, uint32(n.tx.N*descSize))
	r.Write32(regTDH, 0)
	r.Write32(regTDT, 0)
	r.Write32(regTIPG, tipg)
	if n.Model.tarc {
		r.Write32(regTARC0, r.Read32(regTARC0)|tarcEnable)
	}
	r.Write32(regTCTL, tctlEN|tctlPSP|tctlCT|tctlCOLD)
	// Multicast promiscuous rather than the MTA hash of each group:
	// netstack joins solicited-node groups per IPv6 address without
	// telling the link, and Linux falls back to the same when its list
	// outgrows the table.
	r.Write32(regRCTL, rctlEN|rctlBAM|rctlMPE|rctlSECRC)

	n.up.Store(r.Read32(regSTATUS)&statusLU != 0)
	r.Write32(regIMS, n.rxCause|n.linkCause)
}

// MAC is the card's address.

// txInterrupt enables the transmit completion interrupt (on) or masks
// it.
func (n *NIC) txInterrupt(on bool) {
	if on {
		n.regs.Write32(regIMS, n.txCause)
	} else {
		n.regs.Write32(regIMC, n.txCause)
	}
}

// LinkUp reports the link state as of the last link-change interrupt.
func (n *NIC) LinkUp() bool { return n.up.Load() }

// interrupts is the card's goroutine: it acknowledges what the card
// raised, then does the work, then sleeps until the next interrupt.
// Acknowledging first means a cause raised during the work interrupts
// again, so nothing is lost between the last look and the sleep.
func (n *NIC) interrupts() {
	for {
		n.Wakeups.Add(1)
		icr := n.regs.Read32(regICR)
		if icr == 0xffffffff {
			n.log("%s %s: %v; the card is stopped", n.Model.Name, n.Name, errGone)
			n.stopped.Store(true)
			return
		}
		if icr != 0 {
			// ICR clears on read on the 82540EM; the 82574 (and QEMU's
			// model of it) clears only what is written back under MSI
			// and MSI-X unless auto-masking is set up. Writing the bits
			// read back works on both.
			n.regs.Write32(regICR, icr)
		}
		if icr&n.linkCause != 0 {
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
		n.log("%s %s: link %s", n.Model.Name, n.Name, state)
	}
}

// receiver is the card's receiver goroutine (intelnic.RxRing.Receive).
func (n *NIC) receiver() {
	n.rx.Receive(n.rxWork, &n.Ether, func(tail int) { n.regs.Write32(regRDT, uint32(tail)) }, &n.Oversize)
}
