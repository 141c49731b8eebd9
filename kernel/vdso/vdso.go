// Package vdso is the virtual dynamic shared object every process gets,
// as on Linux: a small ELF shared library (c/vdso.c, built by
// tools/build-kernel.sh with gcc and c/vdso.lds, and carried in the kernel
// image) exporting __vdso_clock_gettime, __vdso_gettimeofday,
// __vdso_time, __vdso_clock_getres and __vdso_getcpu at version
// LINUX_2.6, and the read-only data page ([vvar]) below it that the
// kernel keeps the clocks' parameters in (kernel/wallclock's Data).
// exec maps both into the new program and passes the library's address
// in AT_SYSINFO_EHDR; C libraries and Go find the functions there and
// call them instead of making the system calls.
//
// One set of frames serves every process: the data page is mapped
// shared and may never be made writable; the library is mapped private,
// so a debugger's breakpoint copies the page it writes.
package vdso

import (
	"errors"
	"unsafe"

	"shortbread/kernel/mm"
	"shortbread/kernel/wallclock"
)

// Layout of the data page (c/vdso.h).
const (
	cpuOff = 128 // struct vcpu

	// How __vdso_getcpu finds the CPU (struct vcpu's how).
	CPURdpid  = 1 // RDPID reads IA32_TSC_AUX, which holds the CPU number
	CPURdtscp = 2 // RDTSCP does
)

// vcpu mirrors struct vcpu.
type vcpu struct {
	how uint32
}

// VDSO is the library's and its data page's frames.
type VDSO struct {
	obj   *mm.Shm
	pages uintptr // the library's pages, after the data page
	data  *wallclock.Data
	cpu   *vcpu
}

// ErrNoImage is New's error in a kernel built without the library.
var ErrNoImage = errors.New("vdso: no image built into the kernel")

// New puts the data page and the library into frames from p.
func New(p mm.Phys) (*VDSO, error) {
	if len(image) == 0 {
		return nil, ErrNoImage
	}
	obj := mm.NewShm(p)
	vvar, err := obj.Page(0, true)
	if err != nil {
		return nil, err
	}
	v := &VDSO{
		obj:   obj,
		pages: (uintptr(len(image)) + mm.PageSize - 1) / mm.PageSize,
		data:  (*wallclock.Data)(unsafe.Pointer(vvar)),
		cpu:   (*vcpu)(unsafe.Pointer(&vvar[cpuOff])),
	}
	for i := uintptr(0); i < v.pages; i++ {
		pg, err := obj.Page(1+i, true)
		if err != nil {
			obj.DecRef()
			return nil, err
		}
		copy(pg[:], image[i*mm.PageSize:])
	}
	return v, nil
}

// Data returns the clocks' state in the data page, for wallclock.Init.
func (v *VDSO) Data() *wallclock.Data { return v.data }

// SetCPUMode tells __vdso_getcpu how to read the CPU number
// (CPURdpid, CPURdtscp), or 0 to make the system call. Only a kernel
// that keeps IA32_TSC_AUX set to each CPU's number may set it.
func (v *VDSO) SetCPUMode(how uint32) { v.cpu.how = how }

// CPUMode is the mode for SetCPUMode on a CPU whose CPUID leaf
// 0x80000001 returns ext1EDX and leaf 7 (subleaf 0) leaf7ECX, when the
// machine layer writes IA32_TSC_AUX wherever RDTSCP exists (its bit 27
// in ext1EDX): RDPID (leaf7ECX bit 22) where the CPU has it too, as it
// reads the MSR alone, without RDTSCP's counter read; RDTSCP otherwise;
// without RDTSCP, 0 (the MSR is not written, so RDPID alone would read
// garbage).
func CPUMode(ext1EDX, leaf7ECX uint32) uint32 {
	switch {
	case ext1EDX&(1<<27) == 0:
		return 0
	case leaf7ECX&(1<<22) != 0:
		return CPURdpid
	}
	return CPURdtscp
}

// Size is the address space the data page and the library take.
func (v *VDSO) Size() uintptr { return (1 + v.pages) * mm.PageSize }

// Map maps the data page at at and the library after it into s, and
// returns the library's address (AT_SYSINFO_EHDR).
func (v *VDSO) Map(s *mm.Space, at uintptr) (uintptr, error) {
	err := s.Map(mm.VMA{
		Start: at, End: at + mm.PageSize, Prot: mm.ProtRead,
		Deny: mm.ProtWrite | mm.ProtExec, Shm: v.obj, Name: "[vvar]",
	})
	if err != nil {
		return 0, err
	}
	lib := at + mm.PageSize
	err = s.Map(mm.VMA{
		Start: lib, End: lib + v.pages*mm.PageSize, Prot: mm.ProtRead | mm.ProtExec,
		Shm: v.obj, Private: true, Off: mm.PageSize, Name: "[vdso]",
	})
	if err != nil {
		return 0, err
	}
	return lib, nil
}
