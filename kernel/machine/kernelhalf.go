package machine

import (
	"sync"
	"syscall"
)

// The kernel half of every address space (PML4 slots 256-511: the direct
// map, the runtime's mappings, the kernel image) is the machine layer's
// tables, built at boot. A user address space shares them by copying
// their PML4 entries, so those entries may change only before the first
// copy: MapDevice adds some at boot. Both are plain page-table writes
// through the direct map, made here in order under halfMu.

// Page-table entry bits (Intel SDM vol. 3 §4.5).
const (
	ptePresent = 1 << 0
	pteWrite   = 1 << 1
	pteUser    = 1 << 2
	ptePCD     = 1 << 4
	pteHuge    = 1 << 7
	pteGlobal  = 1 << 8
	pteNX      = 1 << 63
	pteAddr    = 0x000ffffffffff000

	pageSize = 4096
	hugeSize = 2 << 20
	// directMapLimit bounds the direct map: the runtime's mappings begin
	// 64 TiB above its start (runtime-patches/sb_mm.go, sbMmapMin).
	directMapLimit = 64 << 40
)

var (
	halfMu     sync.Mutex
	userSpaces bool // an address space copied the kernel half's PML4 entries
)

func table(pa uintptr) *[512]uint64 { return (*[512]uint64)(PhysPointer(pa)) }

// KernelReserved lists the 2 MiB-aligned lower-half ranges [start, end)
// that user programs cannot map: the first 2 MiB (page 0, the AP
// trampoline). The kernel image is in the kernel half.
func KernelReserved() [1][2]uintptr { return [1][2]uintptr{{0, hugeSize}} }

// InitAddressSpace fills three zeroed frames as a new address space: pml4
// gets the shared kernel half, pdpt and pd cover the first GiB and hold
// the kernel's reserved entries (see KernelReserved), copied from the
// kernel's tables (supervisor-only).
func InitAddressSpace(pml4, pdpt, pd uintptr) error {
	for _, p := range [...]uintptr{pml4, pdpt, pd} {
		if p == 0 || p%pageSize != 0 || uint64(p) >= PhysEnd() {
			return syscall.EINVAL
		}
	}
	halfMu.Lock()
	userSpaces = true
	halfMu.Unlock()
	k, u := table(boot().kernelPML4), table(pml4)
	copy(u[256:], k[256:])
	const userTable = ptePresent | pteWrite | pteUser
	u[0] = uint64(pdpt) | userTable
	table(pdpt)[0] = uint64(pd) | userTable
	if k[0]&ptePresent == 0 {
		return nil // the kernel maps nothing in the lower half
	}
	kpdpt := table(uintptr(k[0] & pteAddr))
	if kpdpt[0]&ptePresent == 0 {
		return nil
	}
	kpd, upd := table(uintptr(kpdpt[0]&pteAddr)), table(pd)
	for _, r := range KernelReserved() {
		for va := r[0]; va < r[1]; va += hugeSize {
			upd[va>>21&511] = kpd[va>>21&511]
		}
	}
	return nil
}

// MapDevice makes device memory [pa, pa+size) above the direct map (a
// 64-bit BAR the firmware put above RAM) reachable, uncached, at
// PhysAddr(pa), in 2 MiB pages. It works only at boot, before the first
// user address space copies the kernel half's PML4 entries (a new one may
// be among those it writes).
func MapDevice(pa, size uint64) error {
	halfMu.Lock()
	defer halfMu.Unlock()
	if userSpaces || size == 0 || pa < PhysEnd() || pa+size < pa || pa+size > directMapLimit {
		return syscall.EINVAL
	}
	for p := pa &^ (hugeSize - 1); p < pa+size; p += hugeSize {
		if err := mapHuge(uintptr(p)); err != nil {
			return err
		}
	}
	return nil
}

// mapHuge maps pa at PhysAddr(pa) with an uncached 2 MiB page in the
// kernel's tables. Nothing was mapped there (the direct map ends below),
// so no CPU has a translation to flush.
func mapHuge(pa uintptr) error {
	e, err := kernelEntry(PhysAddr(pa), 21)
	if err == nil {
		*e = uint64(pa) | ptePresent | pteWrite | pteNX | pteGlobal | ptePCD | pteHuge
	}
	return err
}

// kernelEntry is the kernel tables' entry for va at the level whose
// entries map 1<<shift bytes (21: 2 MiB, 12: 4 KiB), adding the tables
// on the way. The caller holds halfMu.
func kernelEntry(va uintptr, shift int) (*uint64, error) {
	t := table(boot().kernelPML4)
	for s := 39; s > shift; s -= 9 {
		e := &t[va>>s&511]
		if *e&ptePresent == 0 {
			f := AllocFrame(0)
			if f == 0 {
				return nil, syscall.ENOMEM
			}
			*e = uint64(f) | ptePresent | pteWrite
		}
		t = table(uintptr(*e & pteAddr))
	}
	return &t[va>>shift&511], nil
}
