package igb

import (
	"encoding/binary"
	"testing"

	"shortbread/kernel/drivers/intelnic/intelnictest"
)

// FuzzRxDescriptors: whatever a card writes back into the receive ring
// (descriptors and buffers) in this driver's descriptor format,
// intelnic's Harvest takes at most the descriptors the card owns,
// delivers only frames from a header's length to MaxFrame whose bytes
// came from the buffers, re-arms what it took with the driver's own
// buffer addresses, and never panics (intelnictest.Harvest).
func FuzzRxDescriptors(f *testing.F) {
	desc := func(n uint16, status uint32) []byte {
		d := make([]byte, descSize)
		binary.LittleEndian.PutUint64(d, 0x11)
		binary.LittleEndian.PutUint16(d[rxLen:], n)
		binary.LittleEndian.PutUint32(d[rxStatus:], status)
		return d
	}
	f.Add(append(desc(60, rxdDD|rxdEOP), desc(100, rxdDD|rxdEOP)...), byte(7))
	f.Add(append(desc(1000, rxdDD), desc(1000, rxdDD|rxdEOP)...), byte(1))
	f.Add(append(desc(4000, rxdDD|rxdEOP), desc(60, rxdDD|rxdEOP|1<<31)...), byte(2))
	f.Fuzz(func(t *testing.T, ring []byte, fill byte) { intelnictest.Harvest(t, advanced, ring, fill) })
}
