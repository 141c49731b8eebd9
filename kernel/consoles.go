package main

// The consoles: the first serial port and the screen with the PS/2
// keyboard, chosen by console= (package console) or every one found.
// Kernel messages and the console terminal's output go to each chosen
// console, and the terminal's input comes from each. The machine layer's
// own messages go to the serial port only; a crash report (printed below
// the runtime, where the screen's console cannot run) goes there and, when
// the screen is a console, to the screen through term.Crash, which draws
// without allocating or locking.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unsafe"

	"shortbread/kernel/arch"
	"shortbread/kernel/console"
	"shortbread/kernel/drivers/framebuffer"
	"shortbread/kernel/drivers/ps2"
	"shortbread/kernel/drivers/uart"
	"shortbread/kernel/drivers/vga"
	"shortbread/kernel/machine"
	"shortbread/kernel/multiboot"
	"shortbread/kernel/term"
	"shortbread/kernel/tty"
)

// outputs writes to every chosen console; the set changes once, when the
// consoles are chosen, and until then it is the serial port.
type outputs struct {
	mu sync.RWMutex
	ws []io.Writer // protected by mu
}

func (o *outputs) Write(p []byte) (int, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.ws == nil {
		return os.Stdout.Write(p)
	}
	for _, w := range o.ws {
		w.Write(p)
	}
	return len(p), nil
}

func (o *outputs) set(ws ...io.Writer) {
	o.mu.Lock()
	o.ws = ws
	o.mu.Unlock()
}

// consoles is what chooseConsoles found and chose.
type consoles struct {
	chosen console.Devices
	screen *term.Console // the screen's terminal; nil without a screen
	kernel outputs       // kernel messages: "\n" ends a line
	tty    outputs       // the console terminal's output, as processed by its line discipline
}

// chooseConsoles finds the serial port and the screen, chooses among them
// by the console= values args, and sends output to the chosen ones. It
// returns warnings for the log.
func (k *kernel) chooseConsoles(args []string) []string {
	c := &k.cons
	found := console.Devices{Serial: uart.Present()}
	disp, rows, cols, err := screenDisplay(k.boot.Framebuffer)
	var warns []string
	if err != nil {
		warns = append(warns, "screen: "+err.Error())
	}
	found.Screen = disp != nil
	chosen, w := console.Choose(args, found)
	warns = append(warns, w...)
	c.chosen = chosen
	var kout, tout []io.Writer
	if chosen.Serial {
		kout, tout = append(kout, os.Stdout), append(tout, os.Stdout)
	}
	if chosen.Screen {
		c.screen = term.NewConsole(disp, rows, cols, func(b []byte) {
			// An answer to a status query is input, given from another
			// goroutine: the terminal echoes it while the screen is locked.
			if t := k.console; t != nil {
				go t.Input(b)
			}
		})
		c.screen.Start(10 * time.Millisecond)
		machine.SetCrashScreen(term.NewCrash(disp, rows, cols, c.screen).Put)
		kout, tout = append(kout, console.NewlineWriter{W: c.screen}), append(tout, c.screen)
	}
	c.kernel.set(kout...)
	c.tty.set(tout...)
	var names []string
	if chosen.Serial {
		names = append(names, "ttyS0 (COM1)")
	}
	if chosen.Screen {
		names = append(names, fmt.Sprintf("tty0 (%s, %dx%d)", screenKind(k.boot.Framebuffer), cols, rows))
	}
	k.log.Infof("console: %s", strings.Join(names, ", "))
	return warns
}

// screenDisplay returns a display for the screen the boot loader
// describes: VGA text (framebuffer type 2, GRUB's report of a BIOS text
// mode) or a direct-colour framebuffer (type 1, UEFI's GOP). It returns a
// nil display when there is none.
func screenDisplay(fb *multiboot.Framebuffer) (term.Display, int, int, error) {
	if fb == nil {
		return nil, 0, 0, nil
	}
	switch fb.Type {
	case multiboot.FramebufferEGAText:
		rows, cols := int(fb.Height), int(fb.Width)
		if rows == 0 || cols == 0 || rows > 100 || cols > 250 || fb.Addr+uint64(rows*cols*2) > machine.PhysEnd() {
			return nil, 0, 0, errText("text mode", fb)
		}
		mem := unsafe.Slice((*uint16)(machine.PhysPointer(uintptr(fb.Addr))), rows*cols)
		return &vga.Text{Mem: mem, Rows: rows, Cols: cols, Ports: archPorts{}}, rows, cols, nil
	case multiboot.FramebufferRGB:
		size := uint64(fb.Pitch) * uint64(fb.Height)
		if size == 0 || size > 256<<20 {
			return nil, 0, 0, errText("framebuffer", fb)
		}
		if fb.Addr+size > machine.PhysEnd() {
			if err := machine.MapDevice(fb.Addr, size); err != nil {
				return nil, 0, 0, errText("framebuffer (cannot map it)", fb)
			}
		}
		mem := unsafe.Slice((*byte)(machine.PhysPointer(uintptr(fb.Addr))), size)
		d, err := framebuffer.New(mem, framebuffer.Mode{
			Width: int(fb.Width), Height: int(fb.Height), Pitch: int(fb.Pitch), BPP: int(fb.BPP),
			RedPos: fb.RedPos, RedSize: fb.RedSize, GreenPos: fb.GreenPos, GreenSize: fb.GreenSize,
			BluePos: fb.BluePos, BlueSize: fb.BlueSize,
		})
		if err != nil {
			return nil, 0, 0, err
		}
		rows, cols := d.Size()
		return d, rows, cols, nil
	}
	return nil, 0, 0, errText("indexed-colour framebuffer", fb)
}

func errText(what string, fb *multiboot.Framebuffer) error {
	return fmt.Errorf("%s not used: %dx%d at %#x, %d bpp", what, fb.Width, fb.Height, fb.Addr, fb.BPP)
}

func screenKind(fb *multiboot.Framebuffer) string {
	if fb.Type == multiboot.FramebufferEGAText {
		return "VGA text"
	}
	return fmt.Sprintf("framebuffer %dx%d", fb.Width, fb.Height)
}

// archPorts is port I/O for the VGA driver.
type archPorts struct{}

func (archPorts) Inb(port uint16) uint8     { return arch.Inb(port) }
func (archPorts) Outb(port uint16, v uint8) { arch.Outb(port, v) }

// consoleSize is the console terminal's window size: the screen's when
// it is a console, else a VT100's.
func (k *kernel) consoleSize() tty.Winsize {
	if s := k.cons.screen; s != nil {
		rows, cols := s.Size()
		return tty.Winsize{Row: uint16(rows), Col: uint16(cols)}
	}
	return tty.Winsize{Row: 24, Col: 80}
}

// consoleInputs opens the input of every chosen console: the serial
// port's receive interrupt, the keyboard's.
func (k *kernel) consoleInputs() []io.Reader {
	var in []io.Reader
	if k.cons.chosen.Serial {
		if r, err := uart.Input(); err != nil {
			k.log.Errorf("console input: serial: %v", err)
		} else {
			in = append(in, r)
		}
	}
	if k.cons.chosen.Screen {
		if !ps2.Present() {
			k.log.Warnf("console input: no PS/2 keyboard controller")
		} else if r, err := ps2.Input(); err != nil {
			k.log.Errorf("console input: keyboard: %v", err)
		} else {
			in = append(in, r)
		}
	}
	return in
}

// mergeInputs returns one reader of everything the readers give.
func mergeInputs(in []io.Reader) io.Reader {
	pr, pw := io.Pipe()
	for _, r := range in {
		go io.Copy(pw, r)
	}
	return pr
}
