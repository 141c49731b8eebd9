package igb

import "shortbread/kernel/drivers/intelnic"

// The rings, their buffers and the DMA memory are intelnic's, shared
// with the e1000 driver; what is this driver's is the advanced
// descriptor format below.

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

// advanced is the advanced descriptor format (see regs.go): receive
// descriptors are armed in the read format and checked in the
// write-back format; each frame goes out in one data descriptor whose
// second word carries the payload length with DD clear.
var advanced = &intelnic.Format{
	RxStatus: rxStatus,
	RxLen:    rxLen,
	RxDD:     rxdDD,
	RxEOP:    rxdEOP,
	RxErrs:   rxeFrame,
	TxWords: func(size int) (uint32, uint32) {
		return uint32(size) | txdtypData | txcEOP | txcIFCS | txcRS | txcDEXT, uint32(size) << txPaylen
	},
	TxStatus: txStatus,
	TxDD:     txdDD,
}
