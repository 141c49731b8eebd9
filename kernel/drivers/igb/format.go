package igb

import "shortbread/kernel/drivers/intelnic"

// advanced is the advanced descriptor format (see regs.go) for
// intelnic's rings, which the e1000 driver shares: receive
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
