//go:build shortbread

// Shortbread machine layer: the x86-64 instructions Go cannot express.
//
// Every trap (exception, interrupt, SYSCALL) builds one sbFrame on the
// CPU's trap stack and calls sbTrap there with the CPU's trap g in R14;
// sbTrap may replace the frame with another thread's, and the exit path
// restores whatever the frame holds. Interrupts stay off while a frame is
// live, so one trap stack per CPU is enough.

#include "go_asm.h"
#include "textflag.h"

#define MSR_FS_BASE 0xC0000100

// sbStart is the Go kernel's ELF entry point, jumped to by the boot stub
// in long mode with RDI = multiboot2 info, RSI/RDX = kernel module bounds,
// RCX = end of the stub, R8 = TSC at the stub's start, R9/R10 = the AP
// trampoline's code and length (inside the stub).
// It moves to a boot stack, gives Go code a g to run with, calls sbBoot and
// then enters the unmodified runtime as if Linux had started a process.
TEXT runtime·sbStart(SB),NOSPLIT|NOFRAME,$0
	LEAQ	runtime·sbBootStack+const_sbBootStackSize(SB), SP
	MOVQ	R9, runtime·sbTrampSrc(SB)
	MOVQ	R10, runtime·sbTrampLen(SB)
	SUBQ	$48, SP				// sbBoot's arguments
	MOVQ	DI, 0(SP)
	MOVQ	SI, 8(SP)
	MOVQ	DX, 16(SP)
	MOVQ	CX, 24(SP)
	MOVQ	R8, 32(SP)
	// The ABI0->Go wrapper reads g from FS:-8, so point FS at a block
	// whose last word is the boot g.
	LEAQ	runtime·sbBootG(SB), AX
	LEAQ	runtime·sbBootStack(SB), BX
	MOVQ	BX, (g_stack+stack_lo)(AX)
	LEAQ	runtime·sbBootStack+const_sbBootStackSize(SB), BX
	MOVQ	BX, (g_stack+stack_hi)(AX)
	LEAQ	runtime·sbBootStack+const_sbStackGuard(SB), BX
	MOVQ	BX, g_stackguard0(AX)
	MOVQ	BX, g_stackguard1(AX)
	MOVQ	AX, runtime·sbBootTLS(SB)
	LEAQ	runtime·sbBootTLS+8(SB), AX
	CALL	sbSetFS<>(SB)
	CALL	runtime·sbBoot(SB)
	// sbBoot built the Linux process stack (argc, argv, envp, auxv) and
	// armed the timer; enter the runtime exactly where Linux would.
	MOVQ	runtime·sbInitSP(SB), SP
	XORQ	AX, AX
	XORQ	BX, BX
	XORQ	CX, CX
	XORQ	DX, DX
	XORQ	SI, SI
	XORQ	DI, DI
	XORQ	BP, BP
	STI
	JMP	_rt0_amd64_linux(SB)

// sbSyscallEntry is LSTAR: both the runtime's SYSCALLs (ring 0) and user
// programs' (ring 3) land here. SYSCALL left the return RIP in CX and
// RFLAGS in R11, masked IF and switched neither stack nor GS. The return
// address tells the two apart before GS or the stack is touched: user
// programs cannot map the kernel image, so a RIP inside it is the
// runtime's. The caller's SP is parked in the per-CPU scratch word while
// we move to the trap stack.
TEXT runtime·sbSyscallEntry(SB),NOSPLIT|NOFRAME,$0
	CMPQ	CX, runtime·sbKernelStart(SB)
	JB	fromuser
	CMPQ	CX, runtime·sbKernelEnd(SB)
	JAE	fromuser
	MOVQ	SP, sbCPU_scratch(GS)
	MOVQ	sbCPU_stackTop(GS), SP
	PUSHQ	$const_sbKernelDS		// ss
	PUSHQ	sbCPU_scratch(GS)		// rsp
	PUSHQ	R11				// rflags
	PUSHQ	$const_sbKernelCS		// cs
	PUSHQ	CX				// rip
	PUSHQ	$0				// error code
	PUSHQ	$const_sbVecSyscall		// vector
	JMP	sbTrapCommon<>(SB)
fromuser:
	SWAPGS
	MOVQ	SP, sbCPU_scratch(GS)
	MOVQ	sbCPU_stackTop(GS), SP
	PUSHQ	$const_sbUserDS			// ss
	PUSHQ	sbCPU_scratch(GS)		// rsp
	PUSHQ	R11				// rflags
	PUSHQ	$const_sbUserCS			// cs
	PUSHQ	CX				// rip
	PUSHQ	$0				// error code
	PUSHQ	$const_sbVecSyscall		// vector
	JMP	sbTrapCommon<>(SB)

// sbTrapEntry is where the vector stubs go: a trap from user mode first
// swaps in the kernel's GS base. The stack holds vector, error code, RIP,
// CS, ...
TEXT sbTrapEntry<>(SB),NOSPLIT|NOFRAME,$0
	TESTQ	$3, 24(SP)
	JZ	kernel
	SWAPGS
kernel:
	JMP	sbTrapCommon<>(SB)

// sbTrapCommon saves the rest of the frame, calls sbTrap and restores.
// On entry the stack holds vector, error code and an IRETQ frame.
TEXT sbTrapCommon<>(SB),NOSPLIT|NOFRAME,$0
	SUBQ	$8, SP				// fsbase
	PUSHQ	AX
	PUSHQ	BX
	PUSHQ	CX
	PUSHQ	DX
	PUSHQ	SI
	PUSHQ	DI
	PUSHQ	BP
	PUSHQ	R8
	PUSHQ	R9
	PUSHQ	R10
	PUSHQ	R11
	PUSHQ	R12
	PUSHQ	R13
	PUSHQ	R14
	PUSHQ	R15
	SUBQ	$(const_sbFPUSize+8), SP		// noFPU + FPU area
	MOVQ	$0, sbFrame_noFPU(SP)
	// A program's FPU image goes to its UserRegs, the rest to the frame
	// (64-byte aligned for XSAVE: it starts at the trap stack's fixed
	// top). EDX:EAX = all: XSAVE saves what XCR0 enables.
	MOVQ	SP, BX
	TESTQ	$3, (sbFrame_sbGPRs+sbGPRs_cs)(SP)
	JZ	kimage
	CALL	sbUserImage<>(SB)
	JMP	save
kimage:
	CMPB	runtime·sbXSave(SB), $0
	JEQ	save
	// A system call from ring 0 (the runtime's, RunUser's) needs no save:
	// Go code keeps no vector register live across SYSCALL, and X15, the
	// ABI's zero register, comes back zero from the initial state that
	// an XSTATE_BV of 0 restores (with the default MXCSR, which XRSTOR
	// reads whenever it restores SSE) if the frame goes to a signal
	// handler; else noFPU.
	CMPQ	(sbFrame_sbGPRs+sbGPRs_vector)(SP), $const_sbVecSyscall
	JNE	save
	MOVQ	$0, 512(SP)
	MOVL	$0x1f80, 24(SP)
	MOVQ	$1, sbFrame_noFPU(SP)
	JMP	saved
save:
	CMPB	runtime·sbXSave(SB), $0
	JEQ	fxsave
	MOVL	$-1, AX
	MOVL	$-1, DX
	XSAVE64	(BX)
	JMP	saved
fxsave:
	FXSAVE64	(BX)
saved:
	// RDFSBASE/WRFSBASE if sbFSGS: cheaper than MSRs (and inline in TCG).
	CMPB	runtime·sbFSGS(SB), $0
	JEQ	rdmsr
	RDFSBASEQ	AX
	JMP	fsread
rdmsr:
	MOVL	$MSR_FS_BASE, CX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
fsread:
	MOVQ	AX, (sbFrame_sbGPRs+sbGPRs_fsbase)(SP)
	// Go code reloads g from FS:-8 after every assembly call, so FS must
	// point at this CPU's trap TLS block while the handler runs.
	MOVQ	sbCPU_self(GS), AX
	LEAQ	(sbCPU_tls+8)(AX), AX
	MOVQ	$sbSetFS<>(SB), BX
	CALL	BX
	MOVQ	sbCPU_trapG(GS), R14
	XORPS	X15, X15
	MOVQ	SP, AX
	// The register ABI lets a callee spill its arguments into space its
	// caller reserves above the return address; without these 16 bytes
	// sbTrap would spill f into the frame itself.
	SUBQ	$16, SP
	// Indirect, so the linker's nosplit-chain check stops here: sbTrap
	// runs on the trap stack with its own g and ordinary stack checks.
	MOVQ	$runtime·sbTrap<ABIInternal>(SB), BX
	CALL	BX
	ADDQ	$16, SP
	JMP	sbTrapRestore<>(SB)

// sbTrapRestore loads the frame at SP into the CPU and returns from the
// trap into whatever thread the frame belongs to.
TEXT sbTrapRestore<>(SB),NOSPLIT|NOFRAME,$0
	MOVQ	(sbFrame_sbGPRs+sbGPRs_fsbase)(SP), AX
	MOVQ	$sbSetFS<>(SB), BX
	CALL	BX
	MOVQ	SP, BX
	TESTQ	$3, (sbFrame_sbGPRs+sbGPRs_cs)(SP)
	JZ	kimage
	CALL	sbUserImage<>(SB)
	JMP	restore
kimage:
	CMPQ	sbFrame_noFPU(SP), $0
	JNE	nofpu
restore:
	CMPB	runtime·sbXSave(SB), $0
	JEQ	fxrstor
	MOVL	$-1, AX
	MOVL	$-1, DX
	XRSTOR64	(BX)
	JMP	restored
fxrstor:
	FXRSTOR64	(BX)
	JMP	restored
nofpu:
	LDMXCSR	24(SP)
	XORPS	X15, X15
restored:
	ADDQ	$(const_sbFPUSize+8), SP
	POPQ	R15
	POPQ	R14
	POPQ	R13
	POPQ	R12
	POPQ	R11
	POPQ	R10
	POPQ	R9
	POPQ	R8
	POPQ	BP
	POPQ	DI
	POPQ	SI
	POPQ	DX
	POPQ	CX
	POPQ	BX
	POPQ	AX
	ADDQ	$24, SP				// fsbase, vector, error code
	// When RCX and R11 hold RIP and RFLAGS (as SYSCALL left them) cheaper
	// ways than IRETQ restore the same state: SYSRET to ring 3 (not for a
	// RIP at the lower half's top or beyond: Intel CPUs raise #GP for a
	// non-canonical one in ring 0, on the user's stack); in ring 0, POPFQ
	// and a jump on the caller's stack (an interrupt before the jump sees
	// RCX != RIP). An NMI runs on its own IST stack.
	CMPQ	CX, 0(SP)			// rip
	JNE	iret
	CMPQ	R11, 16(SP)			// rflags
	JNE	iret
	TESTQ	$3, 8(SP)			// returning to user mode?
	JZ	ret0
	CMPQ	CX, runtime·sbSysretMaxRIP(SB)
	JAE	iret
	MOVQ	24(SP), SP			// the user's rsp
	SWAPGS
	BYTE	$0x48; BYTE $0x0f; BYTE $0x07	// SYSRETQ (REX.W: to 64-bit mode)
ret0:
	MOVQ	24(SP), SP
	PUSHQ	R11
	POPFQ
	JMP	CX
iret:
	TESTQ	$3, 8(SP)
	JZ	tokernel
	SWAPGS
tokernel:
	IRETQ

// sbUserImage sets BX to the FPU image of the user thread running on
// this CPU: sbUserRegs.fpu of its sbThread.user rounded up to 64 bytes.
// GS must be the kernel's; it clobbers CX.
TEXT sbUserImage<>(SB),NOSPLIT|NOFRAME,$0
	MOVLQSX	sbCPU_cur(GS), BX
	IMULQ	$sbThread__size, BX
	LEAQ	runtime·sbThreads(SB), CX
	MOVQ	sbThread_user(CX)(BX*1), BX
	ADDQ	$(sbUserRegs_fpu+63), BX
	ANDQ	$-64, BX
	RET

// sbSetFS loads AX into the FS base; it clobbers CX and DX.
TEXT sbSetFS<>(SB),NOSPLIT|NOFRAME,$0
	CMPB	runtime·sbFSGS(SB), $0
	JEQ	wrmsr
	WRFSBASEQ	AX
	RET
wrmsr:
	MOVQ	AX, DX
	SHRQ	$32, DX
	MOVL	$MSR_FS_BASE, CX
	WRMSR
	RET

// Entry stubs, one per vector, 16 bytes apart from sbVectors (PCALIGN; a
// stub is at most 13 bytes). TRAP pushes a dummy error code, TRAPERR is for
// the exceptions whose CPU pushes one (8, 10-14, 17, 21, 29, 30); both push
// the vector and go to sbTrapEntry. 32-55: I/O APIC pins 0-23; 56-59: APIC
// timer, reschedule IPI, TLB shootdown IPI, spurious. The ADJSP after each
// JMP takes the stub's pushes off the assembler's running stack count.
#define TRAP(v)	PCALIGN $16; PUSHQ $0; PUSHQ $(v); JMP sbTrapEntry<>(SB); ADJSP $-16
#define TRAPERR(v)	PCALIGN $16; PUSHQ $(v); JMP sbTrapEntry<>(SB); ADJSP $-8
#define TRAP4(v)	TRAP(v); TRAP(v+1); TRAP(v+2); TRAP(v+3)

TEXT runtime·sbVectors(SB),NOSPLIT|NOFRAME,$0
	TRAP(0); TRAP(1)
	PCALIGN	$16; JMP runtime·sbNMI(SB)		// 2: NMI, below
	TRAP(3); TRAP(4); TRAP(5); TRAP(6); TRAP(7)
	TRAPERR(8); TRAP(9)
	TRAPERR(10); TRAPERR(11); TRAPERR(12); TRAPERR(13); TRAPERR(14)
	TRAP(15); TRAP(16); TRAPERR(17); TRAP(18); TRAP(19); TRAP(20)
	TRAPERR(21); TRAP4(22); TRAP(26); TRAP(27); TRAP(28)
	TRAPERR(29); TRAPERR(30); TRAP(31)
	TRAP4(32); TRAP4(36); TRAP4(40); TRAP4(44); TRAP4(48); TRAP4(52)
	TRAP4(56)

// sbNMI is vector 2: the profiler's samples (sb_prof.go) and the
// watchdog's register requests (sb_watchdog.go). It can land anywhere
// (before an entry's SWAPGS too), so it finds its CPU from its IST stack
// (CPU i's is sbDFStacks[i], 8 KiB), not GS, and never calls Go. Record:
// interrupted RIP; CPU index | flags<<16 (1 = idle thread, 2 = interrupts
// were off, 4 = user mode); the low 32 bits of the TSC.
TEXT runtime·sbNMI(SB),NOSPLIT|NOFRAME,$0
	PUSHQ	AX
	PUSHQ	BX
	PUSHQ	CX
	PUSHQ	DX
	PUSHQ	R8
	RDTSC					// EAX = TSC low
	MOVL	AX, R8
	MOVQ	SP, CX
	LEAQ	runtime·sbDFStacks(SB), DX
	SUBQ	DX, CX
	SHRQ	$13, CX				// CX = CPU index
	IMULQ	$sbCPU__size, CX
	LEAQ	runtime·sbCPUs(SB), DX
	ADDQ	CX, DX				// DX = this CPU's sbCPU
	MOVQ	runtime·sbProfBufs(SB), AX
	TESTQ	AX, AX
	JZ	nmidone
	MOVL	sbCPU_id(DX), BX
	CMPQ	BX, runtime·sbProfNBufs(SB)
	JAE	nmidone
	IMULQ	$sbProfBuffer__size, BX
	ADDQ	BX, AX				// AX = this CPU's sbProfBuffer
	MOVQ	sbProfBuffer_n(AX), BX
	CMPQ	BX, sbProfBuffer_cap(AX)
	JAE	nmifull
	SHLQ	$4, BX
	ADDQ	sbProfBuffer_addr(AX), BX	// BX = the record
	MOVL	R8, 12(BX)			// TSC low bits: lets duplicates be told apart
	MOVQ	40(SP), CX			// RIP
	MOVQ	CX, 0(BX)
	MOVL	sbCPU_id(DX), CX
	TESTQ	$0x200, 56(SP)			// RFLAGS
	JNZ	nmiifon
	ORL	$(2<<16), CX
nmiifon:
	TESTQ	$3, 48(SP)			// CS
	JZ	nmikernel
	ORL	$(4<<16), CX
nmikernel:
	MOVL	sbCPU_cur(DX), R8
	CMPL	R8, sbCPU_idle(DX)
	JNE	nmibusy
	ORL	$(1<<16), CX
nmibusy:
	MOVL	CX, 8(BX)
	INCQ	sbProfBuffer_n(AX)
	JMP	nmidone
nmifull:
	INCQ	sbProfBuffer_dropped(AX)
nmidone:
	CMPL	sbCPU_nmiWant(DX), $0
	JNE	nmiregs
nmifanout:
	// The HPET's NMI reaches the boot CPU (index 0) only; it passes it on
	// to every other online CPU by physical APIC ID (sb_prof.go). In xAPIC
	// mode the ICR's high word may hold a destination the interrupted code
	// is about to use: it is restored.
	CMPB	runtime·sbProfFanout(SB), $0
	JEQ	nmiret
	CMPL	sbCPU_id(DX), $0
	JNE	nmiret
	PUSHQ	R9
	MOVL	runtime·sbNCPU(SB), R8
	LEAQ	runtime·sbCPUs(SB), R9
	MOVQ	runtime·sbLAPIC(SB), CX
	CMPB	runtime·sbX2APIC(SB), $0
	JNE	nmifwd
	MOVL	0x310(CX), BX			// xAPIC ICR high, restored below
nmifwd:
	DECL	R8
	JLE	nmifwddone
	ADDQ	$sbCPU__size, R9
	MOVL	sbCPU_apicID(R9), DX
	MOVL	$0x4400, AX			// NMI, assert, physical destination
	MOVQ	runtime·sbLAPIC(SB), CX
	CMPB	runtime·sbX2APIC(SB), $0
	JEQ	nmixapic
	MOVL	$0x830, CX
	WRMSR					// x2APIC ICR = EDX:EAX
	JMP	nmifwd
nmixapic:
	TESTL	$0x1000, 0x300(CX)		// delivery status: previous IPI pending
	JZ	nmixsend
	PAUSE
	JMP	nmixapic
nmixsend:
	SHLL	$24, DX
	MOVL	DX, 0x310(CX)
	MOVL	AX, 0x300(CX)
	JMP	nmifwd
nmifwddone:
	CMPB	runtime·sbX2APIC(SB), $0
	JNE	nmifwdret
	MOVL	BX, 0x310(CX)
nmifwdret:
	POPQ	R9
nmiret:
	POPQ	R8
	POPQ	DX
	POPQ	CX
	POPQ	BX
	POPQ	AX
	IRETQ
nmiregs:
	// The watchdog asked (sb_watchdog.go): copy the interrupted RIP, CS,
	// RFLAGS and RSP from the NMI frame, and RBP, then count the copy.
	MOVQ	40(SP), AX
	MOVQ	AX, (sbCPU_nmiRegs+0)(DX)
	MOVQ	48(SP), AX
	MOVQ	AX, (sbCPU_nmiRegs+8)(DX)
	MOVQ	56(SP), AX
	MOVQ	AX, (sbCPU_nmiRegs+16)(DX)
	MOVQ	64(SP), AX
	MOVQ	AX, (sbCPU_nmiRegs+24)(DX)
	MOVQ	BP, (sbCPU_nmiRegs+32)(DX)
	INCL	sbCPU_nmiSeq(DX)
	MOVL	$0, sbCPU_nmiWant(DX)
	JMP	nmifanout

// sbIdle is the body of every CPU's idle thread: halt with interrupts on
// until a trap handler finds something runnable and switches away.
TEXT runtime·sbIdle(SB),NOSPLIT|NOFRAME,$0
again:
	STI
	HLT
	JMP	again

// sbLoadTables loads a GDT, reloads every segment register (CS through
// IRETQ, since a far jump cannot load a 64-bit CS from Go assembly), the
// task register and then the IDT.
TEXT runtime·sbLoadTables(SB),NOSPLIT,$0-18
	MOVQ	idtr+8(FP), CX
	MOVWQZX	tss+16(FP), DX
	MOVQ	gdtr+0(FP), AX
	LGDT	(AX)
	MOVQ	$const_sbKernelDS, AX
	MOVW	AX, DS
	MOVW	AX, ES
	MOVW	AX, SS
	MOVQ	SP, BX
	PUSHQ	$const_sbKernelDS
	PUSHQ	BX
	PUSHFQ
	PUSHQ	$const_sbKernelCS
	LEAQ	reloaded<>(SB), AX
	PUSHQ	AX
	IRETQ

TEXT reloaded<>(SB),NOSPLIT|NOFRAME,$0
	LTR	DX
	LIDT	(CX)
	RET

TEXT runtime·sbRdmsr(SB),NOSPLIT,$0-16
	MOVL	msr+0(FP), CX
	RDMSR
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+8(FP)
	RET

TEXT runtime·sbWrmsr(SB),NOSPLIT,$0-16
	MOVL	msr+0(FP), CX
	MOVQ	v+8(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	WRMSR
	RET

// sbX2APICICR writes the x2APIC ICR (MSR 0x830). WRMSR to
// the x2APIC MSRs is not serializing: MFENCE makes earlier stores visible
// and LFENCE keeps the WRMSR from starting before it (SDM vol. 3 §11.12.3).
TEXT runtime·sbX2APICICR(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	MOVL	$0x830, CX
	MFENCE
	LFENCE
	WRMSR
	RET

TEXT runtime·sbInb(SB),NOSPLIT,$0-9
	MOVW	port+0(FP), DX
	INB
	MOVB	AX, ret+8(FP)
	RET

TEXT runtime·sbOutb(SB),NOSPLIT,$0-3
	MOVW	port+0(FP), DX
	MOVB	v+2(FP), AX
	OUTB
	RET

TEXT runtime·sbRdtsc(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

TEXT runtime·sbReadCR2(SB),NOSPLIT,$0-8
	MOVQ	CR2, AX
	MOVQ	AX, ret+0(FP)
	RET

TEXT runtime·sbReadCR3(SB),NOSPLIT,$0-8
	MOVQ	CR3, AX
	MOVQ	AX, ret+0(FP)
	RET

TEXT runtime·sbWriteCR3(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, CR3
	RET

TEXT runtime·sbReadCR4(SB),NOSPLIT,$0-8
	MOVQ	CR4, AX
	MOVQ	AX, ret+0(FP)
	RET

TEXT runtime·sbWriteCR4(SB),NOSPLIT,$0-8
	MOVQ	v+0(FP), AX
	MOVQ	AX, CR4
	RET

// sbXsetbv sets extended control register reg
// (0: XCR0, the state components XSAVE manages). Needs CR4.OSXSAVE.
TEXT runtime·sbXsetbv(SB),NOSPLIT,$0-16
	MOVL	reg+0(FP), CX
	MOVQ	v+8(FP), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	XSETBV
	RET

TEXT runtime·sbInvlpg(SB),NOSPLIT,$0-8
	MOVQ	va+0(FP), AX
	INVLPG	(AX)
	RET

TEXT runtime·sbCpuid(SB),NOSPLIT,$0-24
	MOVL	eax+0(FP), AX
	MOVL	ecx+4(FP), CX
	CPUID
	MOVL	AX, a+8(FP)
	MOVL	BX, b+12(FP)
	MOVL	CX, c+16(FP)
	MOVL	DX, d+20(FP)
	RET

// sbHalt stops this CPU for good: interrupts off, HLT forever.
TEXT runtime·sbHalt(SB),NOSPLIT,$0-0
again:
	CLI
	HLT
	JMP	again

TEXT runtime·sbPause(SB),NOSPLIT,$0-0
	PAUSE
	RET

TEXT runtime·sbRdrand(SB),NOSPLIT,$0-9
	// RDRAND RAX (0F C7 F0); the assembler has no mnemonic for it.
	BYTE	$0x48; BYTE $0x0F; BYTE $0xC7; BYTE $0xF0
	SETCS	ok+8(FP)
	MOVQ	AX, v+0(FP)
	RET

// sbGSBase returns this CPU's sbCPU (its self pointer at GS:0).
TEXT runtime·sbGSBase(SB),NOSPLIT,$0-8
	MOVQ	0(GS), AX
	MOVQ	AX, ret+0(FP)
	RET

// sbResume enters the frame at f (on the trap stack): each CPU's idle thread.
TEXT runtime·sbResume(SB),NOSPLIT,$0-8
	MOVQ	f+0(FP), SP
	JMP	sbTrapRestore<>(SB)

// sbAPEntry is where the trampoline lands on an application processor:
// long mode, kernel page tables, RSP = the CPU's trap stack, DI = CPU
// index, R14 = the CPU's trap g. It calls sbAPMain, which never returns.
TEXT runtime·sbAPEntry(SB),NOSPLIT|NOFRAME,$0
	// FS:-8 must hold the trap g (see sbTrapCommon).
	MOVQ	R14, runtime·sbAPTLS(SB)
	LEAQ	runtime·sbAPTLS+8(SB), AX
	MOVQ	AX, DX
	SHRQ	$32, DX
	MOVL	$MSR_FS_BASE, CX
	WRMSR					// leaves DI
	MOVQ	DI, AX
	SUBQ	$16, SP				// argument spill space, as above
	XORPS	X15, X15
	MOVQ	$runtime·sbAPMain<ABIInternal>(SB), BX
	CALL	BX
	CALL	runtime·sbHalt(SB)

// sbIntrOff disables interrupts and returns the previous RFLAGS.
TEXT runtime·sbIntrOff(SB),NOSPLIT,$0-8
	PUSHFQ
	POPQ	AX
	CLI
	MOVQ	AX, ret+0(FP)
	RET

// sbIntrRestore restores RFLAGS.IF as saved by sbIntrOff.
TEXT runtime·sbIntrRestore(SB),NOSPLIT,$0-8
	MOVQ	flags+0(FP), AX
	PUSHQ	AX
	POPFQ
	RET

// sbVdsoClockGettime is clock_gettime as a vDSO provides it, called by
// the runtime's nanotime1 and walltime with the C ABI: DI = clock id,
// SI = *timespec; returns 0 in AX. It reads the TSC like sbNanotime
// (ns = (tsc - sbTSC0) * sbTSCMult >> 32) and adds sbBootUnixNano for
// CLOCK_REALTIME, so the runtime's clock costs no trap. It uses only
// AX, CX, DX and R8 (caller-saved) and no stack.
TEXT runtime·sbVdsoClockGettime(SB),NOSPLIT|NOFRAME,$0
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	SUBQ	runtime·sbTSC0(SB), AX
	MULQ	runtime·sbTSCMult(SB)
	SHRQ	$32, AX
	SHLQ	$32, DX
	ORQ	DX, AX
	CMPL	DI, $0 // CLOCK_REALTIME
	JNE	split
	ADDQ	runtime·sbBootUnixNano(SB), AX
split:
	XORL	DX, DX
	MOVQ	$1000000000, R8
	DIVQ	R8
	MOVQ	AX, 0(SI)
	MOVQ	DX, 8(SI)
	XORL	AX, AX
	RET
