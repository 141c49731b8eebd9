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

// func Inl(port uint16) uint32
TEXT ·Inl(SB),NOSPLIT,$0-12
	MOVW	port+0(FP), DX
	INL
	MOVL	AX, ret+8(FP)
	RET

// func Outl(port uint16, v uint32)
TEXT ·Outl(SB),NOSPLIT,$0-8
	MOVW	port+0(FP), DX
	MOVL	v+4(FP), AX
	OUTL
	RET

// func Read8(addr uintptr) uint8
TEXT ·Read8(SB),NOSPLIT,$0-9
	MOVQ	addr+0(FP), BX
	MOVB	(BX), AX
	MOVB	AX, ret+8(FP)
	RET

// func Read16(addr uintptr) uint16
TEXT ·Read16(SB),NOSPLIT,$0-10
	MOVQ	addr+0(FP), BX
	MOVW	(BX), AX
	MOVW	AX, ret+8(FP)
	RET

// func Read32(addr uintptr) uint32
TEXT ·Read32(SB),NOSPLIT,$0-12
	MOVQ	addr+0(FP), BX
	MOVL	(BX), AX
	MOVL	AX, ret+8(FP)
	RET

// func Write8(addr uintptr, v uint8)
TEXT ·Write8(SB),NOSPLIT,$0-9
	MOVQ	addr+0(FP), BX
	MOVB	v+8(FP), AX
	MOVB	AX, (BX)
	RET

// func Write16(addr uintptr, v uint16)
TEXT ·Write16(SB),NOSPLIT,$0-10
	MOVQ	addr+0(FP), BX
	MOVW	v+8(FP), AX
	MOVW	AX, (BX)
	RET

// func Write32(addr uintptr, v uint32)
TEXT ·Write32(SB),NOSPLIT,$0-12
	MOVQ	addr+0(FP), BX
	MOVL	v+8(FP), AX
	MOVL	AX, (BX)
	RET

// func CPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
// CPUID with EAX=leaf and ECX=sub: the processor's identification and
// feature bits (/proc/cpuinfo). It clobbers only the four registers.
TEXT ·CPUID(SB),NOSPLIT,$0-24
	MOVL	leaf+0(FP), AX
	MOVL	sub+4(FP), CX
	CPUID
	MOVL	AX, eax+8(FP)
	MOVL	BX, ebx+12(FP)
	MOVL	CX, ecx+16(FP)
	MOVL	DX, edx+20(FP)
	RET

// func Read64(addr uintptr) uint64
TEXT ·Read64(SB),NOSPLIT,$0-16
	MOVQ	addr+0(FP), BX
	MOVQ	(BX), AX
	MOVQ	AX, ret+8(FP)
	RET

// func Write64(addr uintptr, v uint64)
TEXT ·Write64(SB),NOSPLIT,$0-16
	MOVQ	addr+0(FP), BX
	MOVQ	v+8(FP), AX
	MOVQ	AX, (BX)
	RET

// func RdtscOrdered() uint64
// The time-stamp counter, read after every earlier instruction has
// completed and before any later one starts (LFENCE on both sides, as
// Intel SDM vol. 2B RDTSC advises): a clock reading that must fall
// between two loads of a sequence counter (kernel/wallclock) stays there.
TEXT ·RdtscOrdered(SB),NOSPLIT,$0-8
	LFENCE
	RDTSC
	LFENCE
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET
