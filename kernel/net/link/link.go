// Package link is what a network card's driver offers the network stack
// besides netstack's stack.LinkEndpoint: its carrier (link) state and
// the counters it keeps, which /proc/net/dev and the interface flags
// show. It sits below both the drivers and kernel/net/inet so neither
// imports the other.
package link

import (
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Stats are a card's counters, in the units /proc/net/dev prints: bytes
// are whole Ethernet frames without the frame check sequence. Errors
// are frames the card or driver rejected (bad descriptors, CRC and
// length errors); drops are good frames with nowhere to go (the stack
// behind, no buffer, link down).
type Stats struct {
	RxPackets, RxBytes, RxErrors, RxDropped atomic.Uint64
	TxPackets, TxBytes, TxErrors, TxDropped atomic.Uint64
}

// Device is a network card as the stack attaches it.
type Device interface {
	stack.LinkEndpoint
	// LinkUp reports the carrier as the card last saw it.
	LinkUp() bool
	// Counters are the card's counters, updated as it runs.
	Counters() *Stats
}
