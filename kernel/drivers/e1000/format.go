package e1000

import "shortbread/kernel/drivers/intelnic"

// legacy is the legacy descriptor format (see regs.go) for
// intelnic's rings, which the igb driver shares. The errors byte
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
