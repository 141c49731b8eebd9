package kmode

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"shortbread/kernel/kmode/servers"
	"shortbread/kernel/net/inet"
)

// TestOnNetstack serves from the kernel's own stack (loopback) and
// talks to both servers over it as a program's socket would.
func TestOnNetstack(t *testing.T) {
	s := inet.Stack()
	if err := Start(s, t.Logf); err != nil {
		t.Fatal(err)
	}
	lo := tcpip.AddrFrom4([4]byte{127, 0, 0, 1})
	c, err := gonet.DialTCP(s, tcpip.FullAddress{Addr: lo, Port: EchoPort}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("ping over netstack")
	c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo: %q (%v)", got, err)
	}
	c.Close()

	h, err := gonet.DialTCP(s, tcpip.FullAddress{Addr: lo, Port: HTTPPort}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.Write([]byte("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"))
	all, err := io.ReadAll(h)
	if err != nil {
		t.Fatal(err)
	}
	page := servers.Page(PageSize)
	want := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(page), page)
	if !bytes.HasPrefix(all, []byte("HTTP/1.1 200 OK\r\n")) || !bytes.HasSuffix(all, []byte(want)) {
		t.Errorf("HTTP answer:\n%s", all)
	}
	if err := Start(s, t.Logf); err == nil {
		t.Error("a second Start took the same ports")
	}
}
