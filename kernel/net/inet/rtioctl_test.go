package inet

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// rtentry builds the bytes of a struct rtentry: dst/gw/mask as dotted
// quads ("" leaves the sockaddr zero), dev non-empty sets rt_dev.
func rtentry(t *testing.T, dst, gw, mask string, flags uint16, dev string) Rtentry {
	t.Helper()
	b := make([]byte, RtentrySize)
	put := func(off int, a string) {
		if a == "" {
			return
		}
		var x [4]byte
		if _, err := parse4(a, &x); err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint16(b[off:], linux.AF_INET)
		copy(b[off+4:], x[:])
	}
	put(8, dst)
	put(24, gw)
	put(40, mask)
	binary.LittleEndian.PutUint16(b[56:], flags)
	if dev != "" {
		binary.LittleEndian.PutUint64(b[88:], 0x1000) // a pointer the caller follows
	}
	e := ParseRtentry(b)
	e.Dev = dev
	return e
}

func parse4(s string, x *[4]byte) (int, error) {
	a, err := netip.ParseAddr(s)
	*x = a.As4()
	return 4, err
}

func routeLine(dst string) string {
	for _, l := range strings.Split(string(ProcNetRoute()), "\n") {
		if f := strings.Split(strings.TrimRight(l, " "), "\t"); len(f) > 1 && f[1] == dst {
			return strings.TrimRight(l, " ")
		}
	}
	return ""
}

func TestRouteIoctl(t *testing.T) {
	Stack() // lo, 127.0.0.1/8
	net := rtentry(t, "10.99.0.0", "", "255.255.0.0", rtfUp, "lo")
	if err := RouteIoctl(SIOCADDRT, net); err != nil {
		t.Fatalf("add 10.99.0.0/16 dev lo: %v", err)
	}
	// 10.99.0.0 and 255.255.0.0 as network-order words in hex
	if got, want := routeLine("0000630A"), "lo\t0000630A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0"; got != want {
		t.Errorf("/proc/net/route line %q, want %q", got, want)
	}
	if err := RouteIoctl(SIOCADDRT, net); !errors.Is(err, linux.EEXIST) {
		t.Errorf("the same route again: %v, want EEXIST", err)
	}
	host := rtentry(t, "10.97.1.2", "", "", rtfUp|rtfHost, "lo")
	if err := RouteIoctl(SIOCADDRT, host); err != nil {
		t.Fatalf("host route: %v", err)
	}
	if got, want := routeLine("0201610A"), "lo\t0201610A\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0"; got != want {
		t.Errorf("host route line %q, want %q", got, want)
	}
	via := rtentry(t, "10.98.0.0", "127.0.0.2", "255.255.0.0", rtfUp|rtfGateway, "")
	if err := RouteIoctl(SIOCADDRT, via); err != nil {
		t.Fatalf("route via 127.0.0.2: %v", err)
	}
	if got, want := routeLine("0000620A"), "lo\t0000620A\t0200007F\t0003\t0\t0\t0\t0000FFFF\t0\t0\t0"; got != want {
		t.Errorf("gateway route line %q, want %q", got, want)
	}
	// The header, and every line padded to 127 characters.
	lines := strings.Split(strings.TrimSuffix(string(ProcNetRoute()), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "Iface\tDestination\tGateway \tFlags") {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines {
		if len(l) != 127 {
			t.Errorf("line of %d characters, want 127: %q", len(l), l)
		}
	}
	for _, e := range []Rtentry{net, host, via} {
		if err := RouteIoctl(SIOCDELRT, e); err != nil {
			t.Errorf("delete: %v", err)
		}
	}
	if err := RouteIoctl(SIOCDELRT, net); !errors.Is(err, linux.ESRCH) {
		t.Errorf("delete again: %v, want ESRCH", err)
	}
	if l := routeLine("0000630A"); l != "" {
		t.Errorf("deleted route still listed: %q", l)
	}

	bad := []struct {
		name string
		e    Rtentry
		want error
	}{
		{"host bits", rtentry(t, "10.99.1.0", "", "255.255.0.0", rtfUp, "lo"), linux.EINVAL},
		{"mask with holes", rtentry(t, "10.99.0.0", "", "255.0.255.0", rtfUp, "lo"), linux.EINVAL},
		{"gateway flag, no gateway", rtentry(t, "10.99.0.0", "", "255.255.0.0", rtfUp|rtfGateway, "lo"), linux.EINVAL},
		{"no such device", rtentry(t, "10.99.0.0", "", "255.255.0.0", rtfUp, "eth9"), linux.ENODEV},
		{"neither device nor gateway", rtentry(t, "10.99.0.0", "", "255.255.0.0", rtfUp, ""), linux.ENODEV},
		{"unreachable gateway", rtentry(t, "10.99.0.0", "192.0.2.1", "255.255.0.0", rtfUp|rtfGateway, ""), linux.ENETUNREACH},
	}
	for _, c := range bad {
		if err := RouteIoctl(SIOCADDRT, c.e); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	v6 := rtentry(t, "10.99.0.0", "", "255.255.0.0", rtfUp, "lo")
	binary.LittleEndian.PutUint16(v6.Dst[:], linux.AF_INET6)
	if err := RouteIoctl(SIOCADDRT, v6); !errors.Is(err, linux.EAFNOSUPPORT) {
		t.Errorf("AF_INET6 destination: %v, want EAFNOSUPPORT", err)
	}
}
