package igb

import "shortbread/kernel/drivers/intelnic"

// advanced is the advanced descriptor format (see regs.go) for
// intelnic's rings, which the e1000 driver shares: receive
// descriptors are armed in the read format and checked in the
// write-back format; each frame goes out in one data descriptor whose
// second word carries the payload length with DD clear, and a TCP
// segment the card cuts up (TSO) in a context descriptor and as many
// data descriptors as its bytes fill.
var advanced = &intelnic.Format{
	RxStatus: rxStatus,
	RxLen:    rxLen,
	RxDD:     rxdDD,
	RxEOP:    rxdEOP,
	RxErrs:   rxeFrame,
	RxCsum: func(st uint32) bool {
		return st&(rxdIPCS|rxdL4I|rxeIPE|rxeL4E) == rxdIPCS|rxdL4I
	},
	TxWords: func(size int) (uint32, uint32) {
		return uint32(size) | txdtypData | txcEOP | txcIFCS | txcRS | txcDEXT, uint32(size) << txPaylen
	},
	TxStatus: txStatus,
	TxDD:     txdDD,
	TSO: &intelnic.TSOFormat{
		Context: func(d []byte, s intelnic.TSOSegment) {
			intelnic.Store32(d, ctxMACIPLens, uint32(s.IPLen)|uint32(s.EthLen)<<ctxMACLenShift)
			intelnic.Store32(d, ctxTUCMD, tucmdIPv4|tucmdL4TCP|txdtypCtxt|txcDEXT)
			intelnic.Store32(d, ctxMSSL4Len, uint32(s.TCPLen)<<ctxL4LenShift|uint32(s.MSS)<<ctxMSSShift)
		},
		Data: func(size int, first, last bool, s intelnic.TSOSegment) (w8, w12 uint32) {
			w8 = uint32(size) | txdtypData | txcDEXT | txcIFCS | txcTSE
			if last {
				w8 |= txcEOP | txcRS
			}
			if first { // the payload (headers excluded) and what to insert
				w12 = uint32(s.PayLen)<<txPaylen | poptsIXSM | poptsTXSM
			}
			return w8, w12
		},
	},
}
