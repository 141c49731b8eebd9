package main

// Network cards: the PCI drivers that attach them to the stack, named
// eth0, eth1, ... in the order they are bound (bus order within a
// driver, the drivers in netDrivers' order), and configured from ip=
// when it names the card (or names none: the first card): statically, or
// by DHCP once every driver has bound its cards (netAutoconf), before
// init starts, as Linux's ip=dhcp holds back the first program.

import (
	"fmt"
	"strings"

	"shortbread/kernel/drivers/e1000"
	"shortbread/kernel/drivers/igb"
	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio"
	virtionet "shortbread/kernel/drivers/virtio/net"
	"shortbread/kernel/net/inet"
	"shortbread/kernel/net/link"
	"shortbread/kernel/proc"
)

// netCards names and attaches the cards the drivers bind.
type netCards struct {
	k    *kernel
	cfg  *inet.IfConfig // from ip=
	n    int
	dhcp int // the interface ip=dhcp configures, once bound; 0: none
	// static is the interface a static ip= configured, once bound; 0: none
	static int
}

func (k *kernel) netDrivers() []*pci.Driver {
	c := &netCards{k: k}
	if s := k.opts["ip"]; s != "" {
		cfg, err := inet.ParseIPParam(s)
		if err != nil {
			k.log.Warnf("%v", err)
		} else if cfg.DHCP || cfg.Addr.IsValid() {
			c.cfg = &cfg
			if cfg.Host != "" {
				proc.SetHostname(cfg.Host) // as Linux's ipconfig sets the node name
			}
		}
	}
	k.netCards = c
	return []*pci.Driver{c.virtioDriver(), c.e1000Driver(e1000.E1000), c.e1000Driver(e1000.E1000E), c.igbDriver()}
}

// name is the next card's interface name.
func (c *netCards) name() string { return fmt.Sprintf("eth%d", c.n) }

// attach adds a bound card to the stack under the name name() gave.
func (c *netCards) attach(dev link.Device, what string) error {
	name := c.name()
	c.n++
	var cfg *inet.IfConfig
	if c.cfg != nil && (c.cfg.Device == name || c.cfg.Device == "" && name == "eth0") {
		cfg = c.cfg
	}
	static := cfg
	if cfg != nil && cfg.DHCP {
		static = nil
	}
	id, err := inet.AddEthernet(name, dev, static)
	if err != nil {
		return err
	}
	addr := "none"
	switch {
	case cfg != nil && cfg.DHCP:
		addr = "by DHCP"
		c.dhcp = int(id)
	case cfg != nil:
		addr = cfg.Addr.String()
		c.static = int(id)
		inet.SetStaticPnp()
	}
	c.k.log.Infof("%s: %s, MAC %v, link up %v, address %s", name, what, dev.LinkAddress(), dev.LinkUp(), addr)
	return nil
}

func (c *netCards) virtioDriver() *pci.Driver {
	return &pci.Driver{
		Name: "virtio-pci", // the PCI driver Linux binds virtio devices to
		IDs:  virtionet.IDs,
		Probe: func(d *pci.Device, p pci.Platform) error {
			nic, err := virtionet.New(d, p, virtionet.Config{Name: c.name(), DMA: frameDMA{}, Log: c.k.log.Errorf})
			if err != nil {
				return err
			}
			what := "virtio-net"
			if o := nic.Offloads(); o != "" {
				what += " (" + o + ")"
			}
			return c.attach(nic, what)
		},
	}
}

// e1000Driver binds model m's cards; the name is Linux's driver's.
func (c *netCards) e1000Driver(m *e1000.Model) *pci.Driver {
	return &pci.Driver{
		Name: m.Name,
		IDs:  e1000.IDs(m),
		Probe: func(d *pci.Device, p pci.Platform) error {
			nic, err := e1000.New(d, p, m, e1000.Config{Name: c.name(), DMA: intelDMA{}, Log: c.k.log.Infof})
			if err != nil {
				return err
			}
			return c.attach(nic, fmt.Sprintf("%s (%s) by %v", m.Name, m.Chip, nic.Kind))
		},
	}
}

// intelDMA is frameDMA in the page type of the Intel drivers' shared
// rings (intelnic).
type intelDMA struct{}

func (intelDMA) Alloc() (intelnic.Page, error) {
	p, err := frameDMA{}.Alloc()
	return intelnic.Page{Phys: p.Phys, Mem: p.Mem}, err
}

func (intelDMA) Free(p intelnic.Page) { frameDMA{}.Free(virtio.Page{Phys: p.Phys, Mem: p.Mem}) }

// igbDriver binds Intel 82576 and i350 ports.
func (c *netCards) igbDriver() *pci.Driver {
	return &pci.Driver{
		Name: igb.Name,
		IDs:  igb.IDs,
		Probe: func(d *pci.Device, p pci.Platform) error {
			nic, err := igb.New(d, p, igb.Config{Name: c.name(), DMA: intelDMA{}, Log: c.k.log.Infof})
			if err != nil {
				return err
			}
			return c.attach(nic, fmt.Sprintf("igb (%s, port %d) by %v", nic.Model, nic.Port, nic.Kind))
		},
	}
}

// netAutoconf runs ip=dhcp on its card, if the drivers bound one, and
// logs the lease as Linux's "IP-Config" lines do. A failure leaves the
// card without an address and boot goes on. A static ip= waits for its
// card's link (bounded), as the DHCP client does, so that init does not
// start sending into a link still negotiating.
func (k *kernel) netAutoconf() {
	c := k.netCards
	if c == nil || c.cfg == nil {
		return
	}
	if !c.cfg.DHCP {
		if c.static != 0 {
			inet.WaitCarrier(c.static, k.log.Warnf)
		}
		return
	}
	if c.dhcp == 0 {
		k.log.Warnf("IP-Config: no network card %q for ip=dhcp", c.cfg.Device)
		return
	}
	host := c.cfg.Host
	lease, err := inet.ConfigureDHCP(c.dhcp, host, k.log.Infof)
	if err != nil {
		k.log.Warnf("IP-Config: %v", err)
		return
	}
	if host == "" && lease.Host != "" {
		proc.SetHostname(lease.Host)
	}
	dns := make([]string, len(lease.DNS))
	for i, a := range lease.DNS {
		dns[i] = a.String()
	}
	k.log.Infof("IP-Config: got DHCP answer from %v, address %v, gateway %v, name servers %s, lease %v",
		lease.Server, lease.Addr, lease.Router, strings.Join(dns, " "), lease.Duration)
}
