// Package uart drives the first 16550 UART's receive side. Output goes
// through the machine layer's console (file descriptors 1 and 2); input
// arrives through the receive interrupt: a goroutine blocks reading the
// IRQ 4 file descriptor and drains the receive FIFO when woken.
package uart

import (
	"io"

	"shortbread/kernel/arch"
	"shortbread/kernel/machine"
)

// 16550 registers (PC16550D data sheet §8), relative to COM1.
const (
	com1   = 0x3f8
	regIER = 1
	regLSR = 5
	regSCR = 7    // scratch register
	lsrDR  = 0x01 // receive data ready
	ierRDA = 0x01 // receive-data-available interrupt
	irq    = 4
)

// Present reports whether COM1 is there: its scratch register keeps
// what is written to it, where an empty bus reads back all ones.
func Present() bool {
	for _, v := range []uint8{0x5a, 0xa5} {
		arch.Outb(com1+regSCR, v)
		if arch.Inb(com1+regSCR) != v {
			return false
		}
	}
	return true
}

// Input returns a reader of bytes typed on COM1.
func Input() (io.Reader, error) {
	intr, err := machine.OpenIRQ(irq)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	arch.Outb(com1+regIER, ierRDA)
	go func() {
		for {
			drain(pw) // the FIFO says how many bytes arrived
			if err := intr.Wait(); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr, nil
}

func drain(w io.Writer) {
	var b []byte
	for arch.Inb(com1+regLSR)&lsrDR != 0 {
		b = append(b, arch.Inb(com1))
	}
	if len(b) > 0 {
		w.Write(b)
	}
}
