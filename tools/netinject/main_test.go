package main

import (
	"encoding/binary"
	"math/rand/v2"
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
