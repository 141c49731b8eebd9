// Package kmode runs the kernel-mode experiment's servers (package
// servers) as kernel goroutines directly on netstack, through gVisor's
// net.Listener adapter (gonet): the same source bench/kmode/kmserver
// runs as a user program, without the system calls between it and the
// sockets. A benchmark mode only, started by the kmode boot option and
// never otherwise: kernel code serving the network is not a way to run
// programs.
package kmode

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/kmode/servers"
)

// The kernel's servers' ports on every IPv4 address (bench/kmode/run.sh
// runs the user program's on others).
const (
	EchoPort = 7100
	HTTPPort = 8100
	PageSize = 1024 // bytes of the HTTP server's page, as nginx's 1k.bin
)

// Start listens on s and serves until the kernel stops; a server that
// stops early is reported through logf.
func Start(s *stack.Stack, logf func(format string, args ...any)) error {
	el, err := gonet.ListenTCP(s, tcpip.FullAddress{Port: EchoPort}, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("kmode: echo port %d: %v", EchoPort, err)
	}
	hl, err := gonet.ListenTCP(s, tcpip.FullAddress{Port: HTTPPort}, ipv4.ProtocolNumber)
	if err != nil {
		el.Close()
		return fmt.Errorf("kmode: HTTP port %d: %v", HTTPPort, err)
	}
	go func() { logf("kmode: echo server stopped: %v", servers.Echo(el)) }()
	go func() { logf("kmode: HTTP server stopped: %v", servers.HTTP(hl, servers.Page(PageSize))) }()
	return nil
}
