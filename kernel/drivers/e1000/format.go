package e1000

import (
	"encoding/binary"

	"shortbread/kernel/drivers/intelnic"
)

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
	RxCsum: func(st uint32) bool {
		const bad = (rxeTCPE | rxeIPE) << (8 * (rxErrors - rxStatus))
		return st&(rxdIXSM|rxdIPCS|rxdTCPCS|bad) == rxdIPCS|rxdTCPCS
	},
	TxWords: func(size int) (uint32, uint32) {
		return uint32(size) | uint32(txcEOP|txcIFCS|txcRS)<<(8*(txCmd-txLen)), 0 // status (DD) cleared
	},
	TxStatus: txStatus,
	TxDD:     txdDD,
	TSO: &intelnic.TSOFormat{
		Context: func(d []byte, s intelnic.TSOSegment) {
			tcp := s.EthLen + s.IPLen
			d[ctxIPCSS], d[ctxIPCSO] = byte(s.EthLen), byte(s.EthLen+10)
			binary.LittleEndian.PutUint16(d[ctxIPCSE:], uint16(tcp-1))
			d[ctxTUCSS], d[ctxTUCSO] = byte(tcp), byte(tcp+16) // TUCSE 0: to the end
			cmd := uint32(tucmdTCP | tucmdIP | txcTSE | txcDEXT)
			intelnic.Store32(d, ctxLen, uint32(s.PayLen)|cmd<<(8*(txCmd-txLen)))
			d[ctxHdrLen] = byte(s.HdrLen())
			binary.LittleEndian.PutUint16(d[ctxMSS:], uint16(s.MSS))
		},
		Data: func(size int, first, last bool, s intelnic.TSOSegment) (uint32, uint32) {
			cmd := uint32(txcDEXT | txcTSE | txcIFCS)
			if last {
				cmd |= txcEOP | txcRS
			}
			return uint32(size) | dtypData | cmd<<(8*(txCmd-txLen)), (poptsIXSM | poptsTXSM) << (8 * (txPopts - txStatus))
		},
	},
}
