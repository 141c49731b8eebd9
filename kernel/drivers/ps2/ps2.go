// Package ps2 drives the keyboard on the PC's i8042 keyboard controller:
// the keyboard interrupt (ISA IRQ 1, routed through the I/O APIC as the
// UART's IRQ 4 is) wakes a goroutine that reads the scan codes and turns
// them into terminal input (keymap.go). USB keyboards reach it too where
// the firmware emulates a PS/2 keyboard for them ("USB legacy support").
package ps2

import (
	"io"

	"shortbread/kernel/arch"
	"shortbread/kernel/machine"
)

// i8042 ports, status bits, commands and configuration bits.
const (
	portData   = 0x60
	portStatus = 0x64 // read: status; write: command

	statusOutFull = 0x01 // a byte waits at portData
	statusInFull  = 0x02 // the controller has not taken the last byte
	statusAux     = 0x20 // the waiting byte is the mouse's

	cmdReadConfig  = 0x20
	cmdWriteConfig = 0x60
	cmdDisableAux  = 0xa7
	cmdEnableKbd   = 0xae

	cfgKbdIRQ    = 0x01 // interrupt on keyboard bytes
	cfgAuxIRQ    = 0x02
	cfgKbdClock  = 0x10 // set: keyboard port disabled
	cfgTranslate = 0x40 // translate set 2 to set 1
	irq          = 1
	waitLoops    = 100000
)

// Present reports whether an i8042 answers: a status port that reads as
// all ones is an empty bus.
func Present() bool { return arch.Inb(portStatus) != 0xff }

// wait spins until the controller can take a byte; false if it never can.
func wait() bool {
	for i := 0; i < waitLoops; i++ {
		if arch.Inb(portStatus)&statusInFull == 0 {
			return true
		}
	}
	return false
}

// waitOut spins until a byte arrives; false if none does.
func waitOut() bool {
	for i := 0; i < waitLoops; i++ {
		if arch.Inb(portStatus)&statusOutFull != 0 {
			return true
		}
	}
	return false
}

// setup turns the mouse port off, the keyboard port and its interrupt on,
// and keeps translation to set 1 on.
func setup() {
	if wait() {
		arch.Outb(portStatus, cmdDisableAux)
	}
	for arch.Inb(portStatus)&statusOutFull != 0 { // whatever firmware left
		arch.Inb(portData)
	}
	if !wait() {
		return
	}
	arch.Outb(portStatus, cmdReadConfig)
	if !waitOut() {
		return
	}
	cfg := arch.Inb(portData)
	cfg = (cfg | cfgKbdIRQ | cfgTranslate) &^ (cfgAuxIRQ | cfgKbdClock)
	if wait() {
		arch.Outb(portStatus, cmdWriteConfig)
	}
	if wait() {
		arch.Outb(portData, cfg)
	}
	if wait() {
		arch.Outb(portStatus, cmdEnableKbd)
	}
}

// Input returns a reader of what is typed on the keyboard.
func Input() (io.Reader, error) {
	intr, err := machine.OpenIRQ(irq)
	if err != nil {
		return nil, err
	}
	setup()
	pr, pw := io.Pipe()
	go func() {
		var k Keymap
		for {
			drain(&k, pw) // the status register says whether bytes wait
			if err := intr.Wait(); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr, nil
}

func drain(k *Keymap, w io.Writer) {
	var out []byte
	for i := 0; i < 64; i++ {
		st := arch.Inb(portStatus)
		if st&statusOutFull == 0 {
			break
		}
		b := arch.Inb(portData)
		if st&statusAux != 0 {
			continue // a mouse byte, though its port is off
		}
		out = append(out, k.Translate(b)...)
	}
	if len(out) > 0 {
		w.Write(out)
	}
}
