package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

func frames(t *testing.T, name string) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		if k.name == name {
			var out [][]byte
			for range 50 {
				out = append(out, k.make(r, p)...)
			}
			return out
		}
	}
	t.Fatalf("no kind %s", name)
	return nil
}

// ipOf is the IPv4 packet of an Ethernet frame.
func ipOf(f []byte) header.IPv4 { return header.IPv4(f[14:]) }

func l4Valid(ip header.IPv4) bool {
	payload := ip.Payload()
	xsum := checksum.Checksum(payload, header.PseudoHeaderChecksum(tcpip.TransportProtocolNumber(ip.Protocol()),
		ip.SourceAddress(), ip.DestinationAddress(), uint16(len(payload))))
	return xsum == 0xffff
}

// Each kind is malformed the way it says, and only that way, as checked
// by netstack's own parsers.
func TestKindsAreWhatTheySay(t *testing.T) {
	for _, f := range frames(t, "runt") {
		if len(f) == 0 || len(f) >= header.EthernetMinimumSize {
			t.Errorf("runt of %d bytes", len(f))
		}
	}
	for _, f := range frames(t, "oversized") {
		if len(f) <= 1514 {
			t.Errorf("oversized frame of %d bytes", len(f))
		}
	}
	for _, f := range frames(t, "ip-bad-checksum") {
		if ip := ipOf(f); !ip.IsValid(len(ip)) || ip.IsChecksumValid() {
			t.Errorf("ip-bad-checksum: valid %v checksum valid %v", ip.IsValid(len(ip)), ip.IsChecksumValid())
		}
	}
	for _, f := range frames(t, "ip-bad-lengths") {
		// netstack's own check, and the header's first byte: 0x45
		// (IPv4, 20 bytes) is the only one the builder writes
		if ip := ipOf(f); len(ip) >= header.IPv4MinimumSize && ip.IsValid(len(ip)) && ip[0] == 0x45 {
			t.Errorf("ip-bad-lengths frame is well formed: % x", f[:34])
		}
	}
	for _, name := range []string{"udp-bad", "tcp-bad"} {
		for _, f := range frames(t, name) {
			ip := ipOf(f)
			if !ip.IsValid(len(ip)) || !ip.IsChecksumValid() {
				t.Fatalf("%s: the IP header is bad too", name)
			}
			p := ip.Payload()
			bad := !l4Valid(ip)
			if name == "udp-bad" && len(p) >= 8 {
				bad = bad || int(binary.BigEndian.Uint16(p[4:])) != len(p)
			}
			if name == "tcp-bad" && len(p) >= 20 {
				bad = bad || int(p[12]>>4)*4 > len(p)
			}
			if !bad {
				t.Errorf("%s: a well-formed segment % x", name, p[:min(len(p), 20)])
			}
		}
	}
	for _, name := range []string{"tcp-odd-flags", "syn-flood"} {
		for _, f := range frames(t, name) {
			ip := ipOf(f)
			if !ip.IsChecksumValid() || !l4Valid(ip) {
				t.Errorf("%s: checksums must be right, only the flags or the sources hostile", name)
			}
			if src := ip.SourceAddress().As4(); name == "syn-flood" && (src == p.guestIP || src == p.ourIP) {
				t.Errorf("syn-flood from %v", src)
			}
		}
	}
	for _, f := range frames(t, "fragments") {
		ip := ipOf(f)
		if ip.Flags()&header.IPv4FlagMoreFragments == 0 && ip.FragmentOffset() == 0 {
			t.Errorf("a fragment that is a whole datagram")
		}
	}
	for _, f := range frames(t, "arp-garbage") {
		a := f[14:]
		if len(a) >= 28 && binary.BigEndian.Uint16(a[6:]) == 2 && [4]byte(a[14:18]) == p.ourIP {
			t.Errorf("an ARP reply claims the injector's own address: the test would cut its own link")
		}
	}
}

func TestChecksumsAgreeWithNetstack(t *testing.T) {
	u := udpDgram(p.ourIP, p.guestIP, 1, 2, []byte("hello, world!"))
	pkt := header.IPv4(ip4pkt(p.ourIP, p.guestIP, protoUDP, 1, 0, u))
	if !pkt.IsChecksumValid() || !l4Valid(pkt) {
		t.Errorf("checksums of a good datagram do not verify")
	}
}

// A guest log's counters, before and after, and the checks judged on
// them: each check sums its counters' growth, and a sum short of what
// was sent fails the run.
func TestDropCounters(t *testing.T) {
	snap := func(errs, hdr, tcpErrs, tcpCsum, udpErrs, udpCsum int) string {
		return fmt.Sprintf(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0
  eth0:123456789    8552 %d    0    0     0          0         0   210318    3618    0    0    0     0       0          0
Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors
Ip: 2 64 7869 %d 0
Tcp: RtoAlgorithm InErrs OutRsts InCsumErrors
Tcp: 1 %d 972 %d
Udp: InDatagrams NoPorts InErrors OutDatagrams InCsumErrors
Udp: 0 462 %d 0 %d
`, errs, hdr, tcpErrs, tcpCsum, udpErrs, udpCsum)
	}
	glog := "inject-counters-before\n" + snap(4, 10, 1, 0, 0, 0) + "inject-counters-end\n" +
		"inject-counters-after\n" + snap(320, 1113, 313, 156, 462, 154) + "inject-counters-end\n"
	glog = strings.ReplaceAll(glog, "\n", "\r\n") // as the serial console has it
	before, after := counters(glog, "inject-counters-before"), counters(glog, "inject-counters-after")
	for name, want := range map[string]int{"eth0.rx_errs": 316, "Ip.InHdrErrors": 1103, "Tcp.InErrs": 312, "Tcp.InCsumErrors": 156, "Udp.InErrors": 462, "Udp.InCsumErrors": 154} {
		if got := after[name] - before[name]; got != want {
			t.Errorf("%s grew by %d, want %d", name, got, want)
		}
	}
	sent := map[string]int{"runt": 152, "oversized": 164, "ip-bad-checksum": 185, "ip-bad-lengths": 918, "tcp-bad": 468, "udp-bad": 616}
	short := func(nic string) []string {
		var out []string
		for _, c := range dropChecks(nic, sent) {
			got := 0
			for _, n := range c.counters {
				got += after[n] - before[n]
			}
			if got < c.least {
				out = append(out, strings.Join(c.counters, "+"))
			}
		}
		return out
	}
	if s := short("virtio-net-pci"); len(s) != 0 {
		t.Errorf("checks short with every frame counted: %v", s)
	}
	sent["ip-bad-checksum"] += 100
	sent["runt"]++
	if s := short("virtio-net-pci"); len(s) != 2 {
		t.Errorf("more frames sent than counted in two families, failing checks %v, want two", s)
	}
	if s := short("e1000e"); len(s) != 1 {
		t.Errorf("on an Intel card the card-level frames are not owed: failing %v, want only Ip", s)
	}
	sent["ip-bad-checksum"] -= 100
	sent["runt"]--
	sent["tcp-bad"] += 1000
	if s := short("virtio-net-pci"); len(s) != 0 {
		t.Errorf("the TCP counters are reported, not held to a count: failing %v", s)
	}
}
