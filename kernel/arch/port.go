// Package arch holds the few x86-64 instructions kernel code above the
// runtime needs directly: port I/O for legacy devices (CMOS, 16550, ACPI
// PM registers), and an ordered read of the time-stamp counter for the
// clocks. Everything that must run beneath the runtime lives in the
// machine layer instead.
package arch

// Inb reads a byte from an I/O port.
func Inb(port uint16) uint8

// Outb writes a byte to an I/O port.
func Outb(port uint16, v uint8)

// Inw reads a 16-bit word from an I/O port.
func Inw(port uint16) uint16

// Outw writes a 16-bit word to an I/O port.
func Outw(port uint16, v uint16)

// Inl reads a 32-bit doubleword from an I/O port.
func Inl(port uint16) uint32

// Outl writes a 32-bit doubleword to an I/O port.
func Outl(port uint16, v uint32)

// Device registers in memory (MMIO) are read and written through these,
// one instruction of the given width each, which the compiler can neither
// merge, split, reorder nor drop (Go has no volatile). addr is a kernel
// virtual address of an uncached mapping.

func Read8(addr uintptr) uint8
func Read16(addr uintptr) uint16
func Read32(addr uintptr) uint32
func Read64(addr uintptr) uint64
func Write8(addr uintptr, v uint8)
func Write16(addr uintptr, v uint16)
func Write32(addr uintptr, v uint32)
func Write64(addr uintptr, v uint64)

// CPUID executes CPUID with EAX=leaf and ECX=sub.
func CPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// RdtscOrdered reads the time-stamp counter with LFENCE before and after,
// so the read neither moves before earlier loads nor after later ones.
func RdtscOrdered() uint64
