package machine

import (
	"syscall"
	"time"
	"unsafe"
)

// Application processors start in real mode at a page below 640 KiB
// (their STARTUP IPI names it): the boot stub's start-up code
// (boot/stub.asm: ap_trampoline) is copied there, identity-mapped
// read-only in the kernel's tables because the AP turns paging on while
// it runs there, and reads the parameter block below. It ends in the
// machine layer's AP entry on the CPU's trap stack.

// The start-up code's parameter block: offsets in its page, as
// boot/stub.asm reads them; the code and its stack stay below.
const (
	trampCR3   = 0xF00
	trampEntry = 0xF08
	trampStack = 0xF10
	trampArg   = 0xF18
	trampG     = 0xF20
	trampLimit = 0xE00
)

// Provided by the machine layer (runtime-patches/sb_smp.go).
func prepareCPU(apicID uint32) (id int, stack, g, entry uintptr, ok bool)
func sendICR(dest, low uint32)

var trampPage uintptr // the page the start-up code is in, 0 before the first AP

// StartCPU starts the application processor with the given local APIC
// ID, with the start-up code at page (free RAM below 640 KiB the kernel
// keeps for it), and returns once the CPU is idle in the machine layer's
// scheduler, numbered NumCPU()-1. APs start one at a time: the caller
// does not call it concurrently.
func StartCPU(apicID uint32, page uintptr) error {
	if apicID == BootAPICID() {
		return syscall.EEXIST
	}
	if page != trampPage {
		if err := setTrampoline(page); err != nil {
			return err
		}
	}
	id, stack, g, entry, ok := prepareCPU(apicID)
	if !ok {
		return syscall.ENOMEM
	}
	for _, w := range [...]struct{ off, v uintptr }{
		{trampCR3, boot().kernelPML4}, {trampEntry, entry}, {trampStack, stack}, {trampArg, uintptr(id)}, {trampG, g},
	} {
		*(*uint64)(PhysPointer(page + w.off)) = uint64(w.v)
	}
	// INIT, then two STARTUPs naming the page (Intel SDM vol. 3
	// §9.4.4.1).
	sendICR(apicID, 0x4500)
	time.Sleep(10 * time.Millisecond)
	for range 2 {
		sendICR(apicID, 0x4600|uint32(page>>12))
		time.Sleep(200 * time.Microsecond)
	}
	for deadline := time.Now().Add(2 * time.Second); NumCPU() <= id; time.Sleep(50 * time.Microsecond) {
		if time.Now().After(deadline) {
			return syscall.ETIMEDOUT
		}
	}
	return nil
}

// setTrampoline copies the start-up code to page and maps the page at
// its own address, read-only and executable, in the kernel's tables
// (nothing was mapped there, so no CPU has a translation to flush).
func setTrampoline(page uintptr) error {
	c := boot()
	if page < pageSize || page+pageSize > 0xA0000 || page%pageSize != 0 || c.trampLen == 0 || c.trampLen > trampLimit {
		return syscall.EINVAL
	}
	halfMu.Lock()
	defer halfMu.Unlock()
	e, err := kernelEntry(page, 12)
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(PhysPointer(page)), c.trampLen), unsafe.Slice((*byte)(PhysPointer(c.trampSrc)), c.trampLen))
	*e = uint64(page) | ptePresent
	trampPage = page
	return nil
}
