package intelnic

import (
	"sync/atomic"

	"shortbread/kernel/net/link"
)

// RahAV is receive address high's address-valid bit.
const RahAV = 1 << 31

// MAC is the address the card loaded into receive address 0 (ral, rah)
// from its EEPROM at reset, else the one in the EEPROM's first three
// words as eeprom reads them. ok is false when neither is valid.
func MAC(ral, rah uint32, eeprom func(word int) (uint16, error)) (mac [6]byte, ok bool, err error) {
	if rah&RahAV != 0 {
		mac = [6]byte{byte(ral), byte(ral >> 8), byte(ral >> 16), byte(ral >> 24), byte(rah), byte(rah >> 8)}
		if validMAC(mac) {
			return mac, true, nil
		}
	}
	for w := 0; w < 3; w++ {
		v, err := eeprom(w)
		if err != nil {
			return mac, false, err
		}
		mac[2*w], mac[2*w+1] = byte(v), byte(v>>8)
	}
	return mac, validMAC(mac), nil
}

// validMAC rejects the all-zero, broadcast and multicast addresses.
func validMAC(m [6]byte) bool {
	return m != [6]byte{} && m[0]&1 == 0
}

// Receive is a card's receiver goroutine: each time work is signalled
// (the interrupt goroutine's word that the card raised an interrupt)
// it harvests the ring, hands a copy of each good frame (its buffer is
// re-armed next) to e with the card's word on its checksums, counts
// errors in e's Stats and oversize frames in oversize, and gives the
// descriptors back through setTail. It is a goroutine of its own
// because the stack may send from inside a delivery and wait for a
// transmit interrupt, which the interrupt goroutine must stay free to
// pass on. Frames wait in the ring while the stack is behind (the card
// holds or counts what does not fit), rather than in a queue in
// between.
func (r *RxRing) Receive(work chan struct{}, e *link.Ether, setTail func(int), oversize *atomic.Uint64) {
	deliver := func(frame []byte, csumOK bool) { e.DeliverChecked(append([]byte(nil), frame...), csumOK) }
	for range work {
		var c RxCounts
		taken, tail := r.Harvest(deliver, &c)
		e.Stats.RxErrors.Add(uint64(c.Errs))
		oversize.Add(uint64(c.Oversize))
		if taken > 0 {
			setTail(tail)
		}
		if taken == r.N-1 {
			// The ring may hold more than one pass takes.
			select {
			case work <- struct{}{}:
			default:
			}
		}
	}
}
