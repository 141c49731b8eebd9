// Its presence lets machine.go declare functions without bodies, which the
// runtime patch set provides through go:linkname; Rdtsc is its own.

#include "textflag.h"

// func Rdtsc() uint64
TEXT ·Rdtsc(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET
