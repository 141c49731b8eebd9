//go:build shortbread

// Shortbread machine layer: shared definitions.
//
// It serves the stock runtime's SYSCALLs beneath the runtime, so it never
// uses it: no heap, goroutines, write barriers (sbTrap is
// //go:nowritebarrierrec) or print; state is in static arrays.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

const (
	sbBootStackSize = 64 << 10
	sbStackGuard    = 4096 // boot and trap g stack guard: generous, frames are small
	sbTrapStackSize = 64 << 10
	sbM0StackSize   = 256 << 10
	sbMaxCPU        = 64
	sbMaxThreads    = 256
	// sbFPUSize is the FPU area of a frame: the XSAVE standard format for
	// x87, SSE and AVX (512-byte legacy region, 64-byte header, 256 bytes
	// of YMM upper halves); with FXSAVE only the first 512 bytes are used.
	sbFPUSize  = 832
	sbPageSize = 4096

	// GDT selectors, laid out as Linux does so SYSRET works later:
	// kernel CS, kernel DS, user CS32, user DS, user CS64, TSS.
	sbKernelCS = 0x10
	sbKernelDS = 0x18
	sbUserDS   = 0x28 | 3
	sbUserCS   = 0x30 | 3
	sbTSSSel   = 0x40

	// Trap vectors.
	sbVecPF       = 14
	sbVecIRQBase  = 32 // IOAPIC pins 0-23
	sbVecTimer    = 56
	sbVecResched  = 57
	sbVecTLB      = 58
	sbVecSpurious = 59
	sbVecCount    = 60
	sbVecSyscall  = 256

	// Direct map of all physical memory.
	sbDirectMap = 0xffff800000000000

	// The kernel image is linked in the top 2 GiB (the "kernel" code
	// model, tools/build-kernel.sh): virtual sbKernelVBase + P is
	// physical P (the boot stub copies it there), so the whole lower
	// half but page 0's 2 MiB is the user program's.
	sbKernelVBase = 0xffffffff80000000
)

// sbFrame is the register state saved by sbTrapCommon, in stack order.
// A thread that is not running keeps its state in the same shape.
type sbFrame struct {
	fpu [sbFPUSize]byte
	// noFPU = 1: a return from a SYSCALL in ring 0, after which Go needs
	// only X15 = 0 and fpu's MXCSR loaded, not the whole FPU state.
	noFPU uint64
	sbGPRs
}

// sbGPRs is a frame without its FPU area: the general registers, FS base,
// trap number and the interrupt return frame.
type sbGPRs struct {
	r15     uint64
	r14     uint64
	r13     uint64
	r12     uint64
	r11     uint64
	r10     uint64
	r9      uint64
	r8      uint64
	rbp     uint64
	rdi     uint64
	rsi     uint64
	rdx     uint64
	rcx     uint64
	rbx     uint64
	rax     uint64
	fsbase  uint64
	vector  uint64
	errcode uint64
	rip     uint64
	cs      uint64
	rflags  uint64
	rsp     uint64
	ss      uint64
}

// gprs is the first fifteen registers, R15 to RAX, in the order
// sbUserRegs holds them too.
func (g *sbGPRs) gprs() *[15]uint64 { return (*[15]uint64)(unsafe.Pointer(g)) }

// sbSpin is a test-and-set spinlock. Trap handlers run with interrupts off,
// so a holder is never interrupted on its own CPU.
type sbSpin struct{ v uint32 }

func (l *sbSpin) lock() {
	for !atomic.Cas(&l.v, 0, 1) {
		sbPause()
		sbServiceTLB() // a shootdown initiator may hold the lock we want
	}
}

func (l *sbSpin) unlock() { atomic.Store(&l.v, 0) }

// Boot-time globals the entry assembly uses.
var (
	sbBootStack [sbBootStackSize]byte
	sbBootG     g
	sbBootTLS   [2]uintptr
	sbInitSP    uintptr
	sbM0Stack   [sbM0StackSize]byte
)

// Assembly helpers (sb_amd64.s).
func sbStart()
func sbSyscallEntry()
func sbIdle()
func sbLoadTables(gdtr, idtr uintptr, tss uint16)
func sbRdmsr(msr uint32) uint64
func sbWrmsr(msr uint32, v uint64)
func sbInb(port uint16) uint8
func sbOutb(port uint16, v uint8)
func sbRdtsc() uint64
func sbReadCR2() uintptr
func sbReadCR3() uintptr
func sbReadCR4() uint64
func sbWriteCR4(v uint64)
func sbXsetbv(reg uint32, v uint64)
func sbWriteCR3(v uintptr)
func sbInvlpg(va uintptr)
func sbCpuid(eax, ecx uint32) (a, b, c, d uint32)
func sbHalt()
func sbPause()
func sbRdrand() (v uint64, ok bool)

// Small helpers over raw memory. Kernel memory seen by the machine layer is
// addressed by uintptr so the compiler neither inserts write barriers nor
// lets the GC see these as pointers.

func sbLoad64(a uintptr) uint64 { return *(*uint64)(unsafe.Pointer(a)) }

func sbStore64(a uintptr, v uint64) { *(*uint64)(unsafe.Pointer(a)) = v }

func sbLoad32(a uintptr) uint32 { return *(*uint32)(unsafe.Pointer(a)) }

func sbMemzero(a, n uintptr) { memclrNoHeapPointers(unsafe.Pointer(a), n) }

func sbMemcpy(dst, src, n uintptr) { memmove(unsafe.Pointer(dst), unsafe.Pointer(src), n) }

func sbPhys(pa uintptr) uintptr { return pa + sbDmapBase }

// sbNeg turns an errno into a syscall return register value.
func sbNeg(errno int64) uint64 { return uint64(-errno) }
