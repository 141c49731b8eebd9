// Command kmserver is the user-program side of the kernel-mode
// experiment: the echo and HTTP servers of kernel/kmode/servers over
// the system's sockets (a static Linux program; bench/kmode/run.sh runs
// it in the guest beside the kernel's own copy, kmode=).
package main

import (
	"flag"
	"log"
	"net"

	"shortbread/kernel/kmode/servers"
)

func main() {
	echo := flag.String("echo", "127.0.0.1:7200", "echo server address")
	http := flag.String("http", "127.0.0.1:8200", "HTTP server address")
	page := flag.Int("page", 1024, "bytes of the HTTP server's page")
	flag.Parse()
	el, err := net.Listen("tcp", *echo)
	if err != nil {
		log.Fatal(err)
	}
	hl, err := net.Listen("tcp", *http)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(servers.Echo(el)) }()
	log.Fatal(servers.HTTP(hl, servers.Page(*page)))
}
