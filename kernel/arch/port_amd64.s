#include "textflag.h"

// func Inb(port uint16) uint8
TEXT ·Inb(SB),NOSPLIT,$0-9
	MOVW	port+0(FP), DX
	INB
	MOVB	AX, ret+8(FP)
	RET

// func Outb(port uint16, v uint8)
TEXT ·Outb(SB),NOSPLIT,$0-3
	MOVW	port+0(FP), DX
	MOVB	v+2(FP), AX
	OUTB
	RET

// func Inw(port uint16) uint16
TEXT ·Inw(SB),NOSPLIT,$0-10
	MOVW	port+0(FP), DX
	INW
	MOVW	AX, ret+8(FP)
	RET

// func Outw(port uint16, v uint16)
TEXT ·Outw(SB),NOSPLIT,$0-4
	MOVW	port+0(FP), DX
	MOVW	v+2(FP), AX
	OUTW
	RET
