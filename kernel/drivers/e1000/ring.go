package e1000

import "shortbread/kernel/drivers/intelnic"

// The rings, their buffers and the DMA memory are intelnic's, shared
// with the igb driver; what is this driver's is the legacy descriptor
// format below.

// PageSize is the unit of DMA memory.
const PageSize = intelnic.PageSize

type (
	// Page is a page a device can reach.
	Page = intelnic.Page
	// DMA hands out zeroed pages.
	DMA = intelnic.DMA
)

const (
	bufSize  = intelnic.BufSize
	maxFrame = intelnic.MaxFrame
	frameMTU = intelnic.FrameMTU
)

// legacy is the legacy descriptor format (see regs.go). The errors byte
// follows the status byte, so the status word read at rxStatus carries
// both.
var legacy = &intelnic.Format{
	RxStatus: rxStatus,
	RxLen:    rxLen,
	RxDD:     rxdDD,
	RxEOP:    rxdEOP,
	RxErrs:   rxeFrame << (8 * (rxErrors - rxStatus)),
	TxWords: func(size int) (uint32, uint32) {
		return uint32(size) | uint32(txcEOP|txcIFCS|txcRS)<<(8*(txCmd-txLen)), 0 // status (DD) cleared
	},
	TxStatus: txStatus,
	TxDD:     txdDD,
}
