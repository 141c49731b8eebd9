package inet

import (
	"net/netip"
	"testing"
)

func TestParseIPParam(t *testing.T) {
	c, err := ParseIPParam("10.0.2.15::10.0.2.2:255.255.255.0:sb:eth0:off")
	if err != nil || c.Addr != netip.MustParsePrefix("10.0.2.15/24") || c.Gateway != netip.MustParseAddr("10.0.2.2") ||
		c.Host != "sb" || c.Device != "eth0" {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = ParseIPParam("192.168.1.7:::255.255.0.0")
	if err != nil || c.Addr != netip.MustParsePrefix("192.168.1.7/16") || c.Gateway.IsValid() || c.Device != "" {
		t.Fatalf("short form: %+v %v", c, err)
	}
	for _, s := range []string{"dhcp", "on", "any", ":::::eth1:dhcp", "10.0.2.15::10.0.2.2:255.255.255.0:box:eth1:dhcp"} {
		c, err := ParseIPParam(s)
		if err != nil || !c.DHCP || c.Addr.IsValid() || (s != "dhcp" && s != "on" && s != "any") != (c.Device == "eth1") {
			t.Errorf("ip=%s: %+v %v", s, c, err)
		}
	}
	for _, s := range []string{"off", "none"} {
		if c, err := ParseIPParam(s); err != nil || c.DHCP || c.Addr.IsValid() {
			t.Errorf("ip=%s: %+v %v", s, c, err)
		}
	}
	for _, bad := range []string{
		"bootp", "rarp", ":::::eth0:bootp", "10.0.2.15::10.0.2.2:255.0.255.0",
		"10.0.2.15::10.0.3.2:255.255.255.0", "::1::255.255.255.0", "10.0.2.15", "10.0.2.15::x:255.255.255.0",
	} {
		if _, err := ParseIPParam(bad); err == nil {
			t.Errorf("ip=%s accepted", bad)
		}
	}
}
