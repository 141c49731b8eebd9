package proc

import (
	"shortbread/kernel/arch"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/vdso"
	"shortbread/kernel/wallclock"
)

// theVDSO is the library and data page exec maps into every program
// (nil if the kernel was built without it: programs then make system
// calls for the time, as on a Linux booted with vdso=0).
var theVDSO *vdso.VDSO

// InitClocks moves the clocks' state into the vDSO's data page, where
// the system calls and the vDSO both read it, with CLOCK_MONOTONIC
// starting now. The kernel calls it first thing, before any goroutine
// reads the clocks. A kernel without the vDSO keeps the state in
// kernel memory, counting the same TSC.
func InitClocks() error {
	v, err := vdso.New(Frames{})
	d := new(wallclock.Data)
	if err == nil {
		theVDSO, d = v, v.Data()
		// The machine layer sets IA32_TSC_AUX to each CPU's index
		// (sbCPUInit) where CPUID reports RDTSCP, as Linux does, so
		// getcpu needs no system call there.
		_, _, _, ext1 := arch.CPUID(0x80000001, 0)
		var leaf7 uint32
		if max, _, _, _ := arch.CPUID(0, 0); max >= 7 {
			_, _, leaf7, _ = arch.CPUID(7, 0)
		}
		v.SetCPUMode(vdso.CPUMode(ext1, leaf7))
	}
	// The TSC: the machine layer's clock counts it at this rate, and
	// user code may read it (CR4.TSD is clear: PR_SET_TSC cannot trap it).
	wallclock.Init(d, arch.RdtscOrdered, machine.TSCHz(), true)
	return err
}

// mapVDSO maps the vDSO into a new program's space a page above its
// stack, or at a random page up to 16 above it, as Linux's vdso_addr
// does, and returns the library's address for AT_SYSINFO_EHDR (0
// without a vDSO).
func mapVDSO(s *mm.Space, lay layout) (uint64, error) {
	if theVDSO == nil {
		return 0, nil
	}
	at := lay.stackTop + (1+lay.draw(16))*mm.PageSize
	lib, err := theVDSO.Map(s, at)
	return uint64(lib), err
}
