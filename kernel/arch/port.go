// Package arch holds the few x86-64 instructions kernel code above the
// runtime needs directly: port I/O for legacy devices (CMOS, 16550, ACPI
// PM registers). Everything that must run beneath the runtime lives in the
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
