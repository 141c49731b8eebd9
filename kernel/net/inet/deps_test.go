package inet

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoHostOSPackages checks that none of netstack's packages that talk
// to a host OS are linked into the kernel: there is no Linux below
// Shortbread to take their system calls.
func TestNoHostOSPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "shortbread", "shortbread/kernel").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "gvisor.dev/gvisor/pkg/tcpip/stack") {
		t.Fatalf("netstack is not linked at all; the check would prove nothing")
	}
	banned := []string{
		"gvisor.dev/gvisor/pkg/tcpip/link/fdbased",
		"gvisor.dev/gvisor/pkg/tcpip/link/rawfile",
		"gvisor.dev/gvisor/pkg/rawfile",
		"gvisor.dev/gvisor/pkg/tcpip/link/sharedmem",
		"gvisor.dev/gvisor/pkg/tcpip/link/xdp",
		"gvisor.dev/gvisor/pkg/tcpip/link/tun",
		"gvisor.dev/gvisor/pkg/tcpip/link/qdisc/fifo",
		"gvisor.dev/gvisor/pkg/tcpip/link/loopback",
		"gvisor.dev/gvisor/pkg/xdp",
		"gvisor.dev/gvisor/pkg/fdnotifier",
		"gvisor.dev/gvisor/pkg/unet",
	}
	for _, d := range deps {
		for _, b := range banned {
			if d == b {
				t.Errorf("kernel links %s", d)
			}
		}
	}
}
