// Package machine is the kernel's view of the machine layer beneath the Go
// runtime (runtime-patches/sb_*.go). It is the whole hook surface: the
// functions declared here without bodies are provided by the runtime
// patch set through go:linkname, and the rest wrap the machine layer's
// private system calls, or do what needs no runtime internals itself
// (the kernel half's page tables, kernelhalf.go; starting application
// processors, smp.go). Only the kernel image links this package; host
// tests must not call into it.
package machine

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Provided by the machine layer (runtime-patches/sb_hooks.go).

// bootConfig is what the machine layer settled before the runtime
// started; its layout is shared with the machine layer (sbBootConfig).
type bootConfig struct {
	bootInfo, directMap, physEnd, deviceMemStart, kernelPML4 uintptr
	trampSrc, trampLen                                       uintptr // the AP start-up code in the boot stub
	startTSC, tscHz, xFeatures                               uint64
	bootAPICID                                               uint32
	x2APIC                                                   bool
}

//go:noescape
func readBootConfig(c *bootConfig)

var (
	bootOnce sync.Once
	bootCfg  bootConfig
)

// boot returns the boot configuration, read at the first use (not in an
// init function, which would make host tests of packages importing this
// one need the machine layer to link). None of it changes.
func boot() *bootConfig {
	bootOnce.Do(func() { readBootConfig(&bootCfg) })
	return &bootCfg
}

// BootInfo returns the physical address of the multiboot2 information
// (the command line, ACPI's RSDP, the modules), which stays reserved.
func BootInfo() uintptr { return boot().bootInfo }

// PhysAddr returns the kernel virtual address of physical address pa (the
// direct map of all RAM and device memory below 4 GiB).
func PhysAddr(pa uintptr) uintptr { return boot().directMap + pa }

// DeviceMemStart is where the direct map's uncached window for device
// registers begins (the end of the RAM below 4 GiB, 2 MiB-aligned); it
// ends at 4 GiB.
func DeviceMemStart() uintptr { return boot().deviceMemStart }

// Exit powers the machine off with status: under QEMU through
// isa-debug-exit (QEMU exits with status*2+1), else it halts.
func Exit(status uint8)

// NumCPU is the number of CPUs running the scheduler.
func NumCPU() int

// SetCrashScreen makes the machine layer give put every byte of a fatal
// crash report (the runtime's panic and goroutine traces, the machine
// layer's registers) besides the serial port. put runs beneath the
// runtime, in trap context with interrupts off: it must not allocate,
// block or take locks.
func SetCrashScreen(put func(byte))

// CurrentCPU is the index of the CPU running the caller (which may move
// right after).
func CurrentCPU() int

// SetThreadCPUs tells the runtime the CPUs (bit i for CPU i, AnyCPU for
// all) the user thread the calling goroutine runs may use: a goroutine on
// another CPU that wakes it then has an M started for it on one of them
// (runtime-patches/proc.diff, readyAway) instead of running it up to
// RunUser itself and moving there. A mask also tells the runtime that the
// goroutine runs a user thread: a kernel goroutine (mask 0) that wakes
// one whose thread may use the waker's CPU only starts no spinning M for
// it (ready), as it does not keep its P in user mode.
func SetThreadCPUs(cpus uint64)

// AnyCPU is SetThreadCPUs's mask for a thread that may use every CPU.
const AnyCPU = ^uint64(0)

// TSCHz is the calibrated time-stamp counter frequency.
func TSCHz() uint64 { return boot().tscHz }

// StartTSC is the TSC value at the boot stub's first instruction.
func StartTSC() uint64 { return boot().startTSC }

// Rdtsc reads the time-stamp counter (machine.s).
func Rdtsc() uint64

// SetWalltime makes the machine's time of day (CLOCK_REALTIME, beneath
// package wallclock's offset) read unixNano now. The kernel sets it once
// at boot from the CMOS clock; until then it counts from 1970.
func SetWalltime(unixNano int64)

// Interrupt vectors, as Interrupts counts them.
const (
	VecIRQBase = 32 // I/O APIC pins 0-23
	VecTimer   = 56 // the local APIC timer
	VecResched = 57 // rescheduling IPIs
	VecTLB     = 58 // TLB shootdown IPIs
)

// Interrupts is the number of interrupts CPU cpu has taken on vector vec.
func Interrupts(cpu, vec int) uint64

// IRQCount is the number of interrupts taken on ISA IRQ line irq, on all
// CPUs.
func IRQCount(irq int) uint64 {
	var n uint64
	for cpu := 0; cpu < NumCPU(); cpu++ {
		n += Interrupts(cpu, VecIRQBase+irq)
	}
	return n
}

// IdleTime is how long CPU cpu has run its idle thread (halted, waiting
// for work), in nanoseconds since boot.
func IdleTime(cpu int) int64

// Threads is the number of machine-layer threads (the runtime's Ms).
func Threads() int

// memStats returns MemStats's fields, in their order.
func memStats() (total, free, committed, vmas uint64)

func physPointer(pa uintptr) unsafe.Pointer

// PhysPointer returns the direct-map pointer for physical address pa.
func PhysPointer(pa uintptr) unsafe.Pointer { return physPointer(pa) }

// PhysEnd is the end of the direct map: every physical address below it
// (all RAM, and device memory below 4 GiB) can be read with ReadPhys.
func PhysEnd() uint64 { return uint64(boot().physEnd) }

// ReadPhys copies physical memory at pa into p (firmware tables, boot
// information).
func ReadPhys(p []byte, pa uint64) error {
	if pa+uint64(len(p)) < pa || pa+uint64(len(p)) > PhysEnd() {
		return errors.New("machine: physical range outside the direct map")
	}
	for off := 0; off < len(p); off += physChunk {
		copyPhys(p[off:min(off+physChunk, len(p))], uintptr(pa)+uintptr(off))
	}
	return nil
}

// physChunk bounds one copy of ReadPhys. A copy is a call of the
// runtime's assembly memmove, where no goroutine can be preempted: the
// initramfs (tens of MiB) in one copy kept the garbage collector, which
// its allocation had just started, waiting ~150 ms under TCG to scan the
// copying goroutine's stack, sending it a preemption signal every 10 µs
// (6,000 signals, some 18 million instructions of a 2-CPU boot). Each
// call of copyPhys is a preemption point (its prologue checks).
const physChunk = 64 << 10

//go:noinline
func copyPhys(p []byte, pa uintptr) {
	copy(p, unsafe.Slice((*byte)(PhysPointer(pa)), len(p)))
}

// MemStats describes physical memory as the machine layer sees it.
type MemStats struct {
	TotalFrames     uint64 // 4 KiB frames of usable RAM
	FreeFrames      uint64 // frames not in use
	CommittedFrames uint64 // frames backing the runtime's mappings
	VMAs            uint64 // mappings the runtime holds
}

// ReadMemStats returns current physical memory figures.
func ReadMemStats() MemStats {
	t, f, c, v := memStats()
	return MemStats{t, f, c, v}
}

// Private system calls of the machine layer (numbered in sb_hooks.go,
// served by sb_syscall.go).
const (
	sysBase      = 0x5300
	sysIRQOpen   = sysBase + 0
	sysProfStart = sysBase + 2
	sysProfStop  = sysBase + 3
	sysIOAPIC    = sysBase + 4
	sysDebugSpin = sysBase + 10
)

// OpenIRQ opens ISA interrupt line irq and unmasks it (edge-triggered,
// active high). See OpenInterrupt.
func OpenIRQ(irq int) (*Interrupt, error) { return OpenInterrupt(irq, 0) }

// Flags for OpenInterrupt; a pin's are its I/O APIC redirection entry's
// bits, which the machine layer writes as they are.
const (
	IRQMessage   = 1       // message-signalled (MSI, MSI-X): no I/O APIC pin
	IRQLevel     = 1 << 15 // level-triggered pin (PCI INTx): masked until the next Wait
	IRQActiveLow = 1 << 13 // active-low pin
)

// NumIRQ is the number of device vectors (VecIRQBase...): I/O APIC pins
// and message-signalled interrupts share them.
const NumIRQ = 24

var irqMu sync.Mutex
var irqUsed [NumIRQ]bool
var irqFlags [NumIRQ]int

// InterruptFlags reports whether device vector irq is open and the
// flags it was opened with.
func InterruptFlags(irq int) (open bool, flags int) {
	if irq < 0 || irq >= NumIRQ {
		return false, 0
	}
	irqMu.Lock()
	defer irqMu.Unlock()
	return irqUsed[irq], irqFlags[irq]
}

// Interrupt is an open device vector, which one driver goroutine waits
// on. A closed vector stays taken.
type Interrupt struct {
	irq    int
	closed atomic.Bool
}

// waitInterrupt blocks until vector irq has had an interrupt since it
// last returned (parked in the runtime's netpoller, no thread held);
// false once the vector is closed.
func waitInterrupt(irq int) bool

func closeInterrupt(irq int)

// Wait blocks until the vector has had one or more interrupts since the
// last Wait; it fails once the vector is closed.
func (i *Interrupt) Wait() error {
	if !waitInterrupt(i.irq) {
		return os.ErrClosed
	}
	return nil
}

// Close ends the goroutine's Wait with an error (os.ErrClosed).
func (i *Interrupt) Close() error {
	if !i.closed.CompareAndSwap(false, true) {
		return os.ErrClosed
	}
	closeInterrupt(i.irq)
	return nil
}

// OpenInterrupt opens device vector VecIRQBase+irq. Unless flags has
// IRQMessage, it routes I/O APIC pin irq there and unmasks it. A vector
// is open at most once (EBUSY).
func OpenInterrupt(irq, flags int) (*Interrupt, error) {
	if irq < 0 || irq >= NumIRQ {
		return nil, syscall.EINVAL
	}
	irqMu.Lock()
	defer irqMu.Unlock()
	if irqUsed[irq] {
		return nil, syscall.EBUSY
	}
	if _, _, errno := syscall.RawSyscall(sysIRQOpen, uintptr(irq), uintptr(flags), 0); errno != 0 {
		return nil, errno
	}
	irqUsed[irq], irqFlags[irq] = true, flags
	return &Interrupt{irq: irq}, nil
}

// AllocMSI opens the highest free device vector for a message-signalled
// interrupt and returns it and the MSI message (address and data) that
// raises it on the CPU whose local APIC ID is apicID (physical
// destination, fixed delivery, edge-triggered: Intel SDM vol. 3
// §11.11). The vector is the same on every CPU (one IDT), and the
// machine layer records and acknowledges it on whichever CPU it arrives
// at, so the destination only decides where the driver's goroutine is
// woken. The message's destination field has 8 bits: without interrupt
// remapping, CPUs with larger (x2APIC) IDs cannot be named (EINVAL; the
// caller picks another CPU). Vectors 0-15 stay for ISA lines.
func AllocMSI(apicID uint32) (i *Interrupt, addr uint64, data uint32, err error) {
	if apicID > 0xff {
		return nil, 0, 0, syscall.EINVAL
	}
	for irq := NumIRQ - 1; irq >= 16; irq-- {
		i, err = OpenInterrupt(irq, IRQMessage)
		if err == nil {
			return i, MSIAddress(apicID), uint32(VecIRQBase + irq), nil
		}
		if err != syscall.EBUSY {
			return nil, 0, 0, err
		}
	}
	return nil, 0, 0, syscall.ENOSPC
}

// MSIAddress is the MSI message address that delivers to the local APIC
// with ID apicID (at most 0xff), physical destination mode.
func MSIAddress(apicID uint32) uint64 { return 0xfee00000 | uint64(apicID&0xff)<<12 }

// BootAPICID is the local APIC ID of the boot CPU (CPU 0), which takes
// the I/O APIC's interrupts.
func BootAPICID() uint32 { return boot().bootAPICID }

// X2APIC reports whether the local APICs run in x2APIC mode (chosen at
// boot when the CPU has it): 32-bit APIC IDs, registers as MSRs.
func X2APIC() bool { return boot().x2APIC }

// SetIOAPIC tells the machine layer where the I/O APIC is (from the MADT;
// it assumes the PC default until told).
func SetIOAPIC(phys uint64) error {
	if _, _, errno := syscall.RawSyscall(sysIOAPIC, uintptr(phys), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// ProfBuffer is one CPU's sample buffer: Cap 16-byte records at Addr,
// which must stay allocated and already touched while sampling runs. Its
// layout is shared with the machine layer (sbProfBuffer), which counts
// the samples it records in N and those lost to a full buffer in Dropped.
type ProfBuffer struct {
	Addr, Cap, N, Dropped uint64
}

// profBufs holds the buffers of the last ProfStart: the machine layer
// writes them (through their address only) while sampling runs, and
// ProfCount reads them.
var profBufs atomic.Pointer[[]ProfBuffer]

// Sample sources ProfStart can report.
const (
	ProfSourceNMI   = 1 // HPET timer delivered as an NMI to every CPU
	ProfSourceTimer = 2 // local APIC timer interrupt
)

// ProfStart starts sampling every CPU hz times a second into bufs (one per
// CPU). nmiPin is the I/O APIC pin of a periodic timer the caller starts
// at hz once ProfStart reports ProfSourceNMI (the pin's interrupt then
// becomes an NMI to every CPU), or -1 for none. It returns the sample
// source in use.
func ProfStart(bufs []ProfBuffer, hz int, nmiPin int) (int, error) {
	if len(bufs) == 0 {
		return 0, syscall.EINVAL
	}
	src, _, errno := syscall.Syscall6(sysProfStart, uintptr(unsafe.Pointer(&bufs[0])), uintptr(len(bufs)),
		uintptr(hz), uintptr(nmiPin), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	profBufs.Store(&bufs)
	return int(src), nil
}

// ProfStop stops sampling; the caller stops its NMI timer first.
func ProfStop() {
	syscall.Syscall(sysProfStop, 0, 0, 0)
}

// The hard-lockup watchdog (runtime-patches/sb_watchdog.go).

// SetWatchdog makes each CPU's timer interrupt watch the next CPU: one
// that runs a thread and takes no timer interrupt for thresh nanoseconds
// (0: off) is reported on the console with every busy CPU's registers and
// stack, and with panic the machine powers off after the report.
func SetWatchdog(thresh int64, panic bool)

// SetWakeDelay sets how long a busy CPU that wakes a thread waits for its
// own thread to block, and so to run the woken one itself, before it
// sends an IPI to a halted CPU (0: at once).
func SetWakeDelay(d time.Duration) { setWakeDelay(int64(d)) }

func setWakeDelay(ns int64)

// Lockups is how many hard lockups the watchdog has reported.
func Lockups() uint32

// DebugSpin spins this CPU with interrupts off, as a machine-layer bug
// would, until the watchdog reports it or d (at most 120 s) has passed:
// the watchdog's test.
func DebugSpin(d time.Duration) error {
	if _, _, errno := syscall.Syscall(sysDebugSpin, uintptr(d), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// ProfCount returns how many samples CPU cpu has recorded and dropped
// (buffer full) since ProfStart.
func ProfCount(cpu int) (n, dropped uint64) {
	p := profBufs.Load()
	if p == nil || cpu < 0 || cpu >= len(*p) {
		return 0, 0
	}
	b := &(*p)[cpu]
	return atomic.LoadUint64(&b.N), atomic.LoadUint64(&b.Dropped)
}

// User mode (runtime-patches/sb_user.go).

// UserRegs is a user thread's register state. Its layout is shared with
// the machine layer.
type UserRegs struct {
	R15, R14, R13, R12, R11, R10, R9, R8 uint64
	RBP, RDI, RSI, RDX, RCX, RBX, RAX    uint64
	FSBase, GSBase                       uint64
	RIP, RFLAGS, RSP                     uint64
	// Why RunUser returned: a CPU exception vector (0-31; 14 is a page
	// fault with the address in Addr), TrapSyscall, or TrapInterrupt.
	Trap, ErrCode, Addr uint64
	// Kick, when non-zero, makes the thread leave user mode at its next
	// trap (see Kick); RunUser then returns TrapInterrupt.
	Kick uint64
	// CPU, when non-zero, is the CPU index + 1 the kernel last told
	// the program it runs on (rseq's cpu_id): RunUser then returns
	// TrapInterrupt instead of running the program on another CPU, and
	// when the thread comes back after being switched out in user mode
	// (preempted or moved), so the kernel can update the program and
	// abort its critical section.
	CPU uint64
	// Affinity, Prio and Slice are the program's scheduling class, which
	// the machine layer's run queue honours while the thread runs the
	// program (not while it runs kernel code): the CPUs it may run on
	// (bit i for CPU i; 0 for any), whom RunUser first moves to one of
	// them; a real-time priority (1-99; 0 for none), which runs before
	// every lower priority; and the time slice in ns (0: the default,
	// 10 ms; SliceEndless).
	Affinity, Prio, Slice uint64
	// ExitCPU is the CPU the program ran on when RunUser last returned.
	// Preempts counts, as of that return, the times the machine layer
	// switched the thread out while it ran the program (its time slice
	// ended with another thread waiting, or a higher priority came):
	// the program's involuntary context switches, added up over every
	// RunUser with these registers.
	ExitCPU, Preempts uint64
	// Away is the time, in TSC cycles, the thread spent switched out in
	// user mode during the last RunUser: other threads ran meanwhile,
	// so it is not the program's CPU time. While RunUser runs, the
	// machine layer keeps it current for another goroutine reading the
	// thread's CPU clock, in one word: the time away so far while the
	// thread runs, and while it is switched out that time less the TSC
	// at which it went out (negative as an int64: add the TSC now).
	// Each store gives a value never seen before, so two equal loads
	// around a clock read saw one state.
	Away uint64
	// fpu holds the image FPU returns, where traps from user mode save
	// it and the way back loads it (no copy per system call).
	fpu [FPUSize + 64]byte
}

// FPUSize is the size of the FPU image.
const FPUSize = 832

// FPU is the x87, SSE and AVX state in XSAVE's standard format: the
// FXSAVE layout in the first 512 bytes, then the XSAVE header and the
// upper halves of the YMM registers. Without XSAVE (XFeatures 0) only
// the first 512 bytes are used. It is the 64-byte aligned part of a
// larger array (XSAVE's alignment), so it moves with the array: copy
// it by itself (*dst.FPU() = *src.FPU()) after copying a UserRegs.
func (r *UserRegs) FPU() *[FPUSize]byte {
	return (*[FPUSize]byte)(unsafe.Pointer((uintptr(unsafe.Pointer(&r.fpu)) + 63) &^ 63))
}

// XFeatures is the XSAVE feature mask (XCR0) user threads' FPU state
// covers: 7 for x87, SSE and AVX, or 0 if the CPUs save state with FXSAVE
// (no AVX for programs).
func XFeatures() uint64 { return boot().xFeatures }

// SliceEndless in UserRegs.Slice is SCHED_FIFO's: a real-time thread
// keeps its CPU against its own priority until its slice ends.
const SliceEndless = 1 << 62

// Reasons in UserRegs.Trap besides exception vectors.
const (
	TrapPageFault = 14
	TrapSyscall   = 256
	TrapInterrupt = 512 // the runtime needed the thread; just run again
)

const (
	sysRunUser  = sysBase + 5
	sysFlushTLB = sysBase + 7
	sysKick     = sysBase + 8
)

// RunUser runs the user thread whose state is r in the address space whose
// PML4 is at physical address cr3, until it makes a system call or takes a
// fault (or the runtime needs the thread); r then holds the new state. To
// the runtime the goroutine is in a system call meanwhile. r.RIP must be
// canonical: an Intel CPU's IRETQ to any other faults in ring 0, after
// SWAPGS, so the caller (kernel/proc's run loop) checks it.
func RunUser(r *UserRegs, cr3 uintptr) error {
	_, _, errno := syscall.Syscall(sysRunUser, uintptr(unsafe.Pointer(r)), cr3, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Kick makes the thread running r in user mode return from RunUser soon
// (a signal is waiting for it): it sets r.Kick and interrupts the CPU
// running it. The caller clears r.Kick after RunUser returns.
func Kick(r *UserRegs) {
	atomic.StoreUint64(&r.Kick, 1)
	syscall.RawSyscall(sysKick, uintptr(unsafe.Pointer(r)), 0, 0)
}

// FlushTLB drops stale user translations on every CPU after mappings were
// removed or made stricter.
func FlushTLB() {
	syscall.RawSyscall(sysFlushTLB, 0, 0, 0)
}

// FlushSpaceTLB is FlushTLB for the user address space at root: only the
// CPUs that have it loaded are interrupted.
func FlushSpaceTLB(root uintptr) {
	syscall.RawSyscall(sysFlushTLB, root, 0, 0)
}

// FlushSpaceRange is FlushSpaceTLB after a change to [start, end) only:
// the calling CPU drops just those pages' translations when they are few
// (INVLPG), instead of its whole TLB.
func FlushSpaceRange(root, start, end uintptr) {
	syscall.RawSyscall6(sysFlushTLB, root, 3, start, end, 0, 0)
}

// FlushOtherTLBs is FlushSpaceTLB except on the calling CPU, for a caller
// whose own CPU cannot hold the stale translation (it just faulted on it).
func FlushOtherTLBs(root uintptr) {
	syscall.RawSyscall(sysFlushTLB, root, 2, 0)
}

// ReleaseAddressSpace makes every CPU stop using the page tables at root
// (a CPU keeps a user space loaded after leaving user mode, to spare a
// CR3 switch per system call); call it before freeing them.
func ReleaseAddressSpace(root uintptr) {
	syscall.RawSyscall(sysFlushTLB, root, 1, 0)
}

// AllocFrame returns the physical address of a zeroed 4 KiB frame, or 0
// when no more than keep frames are free (memory exhausted: keep is the
// reserve the caller leaves for the kernel's own heap and stacks; the
// check is made under the allocator's lock).
func AllocFrame(keep uint64) uintptr {
	pa := allocFrame(keep)
	if pa != 0 {
		framesHeld.Add(1)
	}
	return pa
}

// FreeFrame returns a frame from AllocFrame.
func FreeFrame(pa uintptr) {
	if pa != 0 {
		framesHeld.Add(-1)
	}
	freeFrame(pa)
}

// framesHeld counts the frames the kernel holds from AllocFrame: with
// the runtime's committed frames it splits the frames in use between
// the Go heap's mappings, the kernel's direct users (programs' pages,
// page tables, DMA) and what neither counts (the machine layer's page
// tables for the runtime's mappings), which is how a slow loss of free
// memory is put in one place (/proc/shortbread/kmem).
var framesHeld atomic.Int64

// FramesHeld returns the number of frames taken with AllocFrame and not
// yet freed.
func FramesHeld() int64 { return framesHeld.Load() }

func allocFrame(keep uint64) uintptr
func freeFrame(pa uintptr)
