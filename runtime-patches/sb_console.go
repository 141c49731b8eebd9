//go:build shortbread

// Shortbread machine layer: the serial console.
//
// The machine layer cannot use the runtime's print (it takes runtime locks
// and needs an M), so it writes to the first 16550 UART directly. The same
// port carries the runtime's own writes to fds 1 and 2 (sb_syscall.go).

package runtime

import _ "unsafe" // go:linkname

const sbCOM1 = 0x3f8

var (
	sbConsoleLock sbSpin

	// Once a fatal panic began (latched: it ends in power-off), every byte
	// also goes to the screen by sbCrashScreen (machine.SetCrashScreen),
	// which runs here, in trap context: it must not allocate, block or lock.
	sbCrashScreen func(byte)
	sbCrashing    bool
)

//go:linkname sbHookSetCrashScreen shortbread/kernel/machine.SetCrashScreen
func sbHookSetCrashScreen(put func(byte)) { sbCrashScreen = put }

func sbSerialInit() {
	sbOutb(sbCOM1+1, 0x00) // no UART interrupts yet
	sbOutb(sbCOM1+3, 0x80) // DLAB: divisor follows
	sbOutb(sbCOM1+0, 0x01) // 115200 baud
	sbOutb(sbCOM1+1, 0x00)
	sbOutb(sbCOM1+3, 0x03) // 8N1
	sbOutb(sbCOM1+2, 0xC7) // FIFOs on, cleared
	sbOutb(sbCOM1+4, 0x0B) // DTR, RTS, OUT2
}

func sbPutc(c byte) {
	for i := 0; i < 100000 && sbInb(sbCOM1+5)&0x20 == 0; i++ {
		sbPause()
	}
	sbOutb(sbCOM1, c)
	if sbCrashScreen != nil && (sbCrashing || panicking.Load() != 0) {
		sbCrashing = true
		sbCrashScreen(c)
	}
}

// sbPutch writes c, a newline as \r\n for terminals. Callers that print
// several pieces hold sbConsoleLock around them, so lines from different
// CPUs do not interleave.
func sbPutch(c byte) {
	if c == '\n' {
		sbPutc('\r')
	}
	sbPutc(c)
}

func sbPrintStr(s string) {
	for i := 0; i < len(s); i++ {
		sbPutch(s[i])
	}
}

func sbPrintHex(v uint64) {
	sbPrintStr("0x")
	sbPrintNum(v, 16)
}

func sbPrintDec(v int64) {
	if v < 0 {
		sbPutc('-')
		v = -v // the most negative value stays negative: its uint64 is right
	}
	sbPrintNum(uint64(v), 10)
}

// sbPrintNum prints v in base (10 or 16) without a prefix.
func sbPrintNum(v, base uint64) {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = "0123456789abcdef"[v%base]
		if v /= base; v == 0 {
			break
		}
	}
	for ; i < len(buf); i++ {
		sbPutc(buf[i])
	}
}

// sbPrintf prints format with each '%' replaced by the next number of v,
// in decimal; the caller holds sbConsoleLock.
func sbPrintf(format string, v ...int64) {
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && len(v) > 0 {
			sbPrintDec(v[0])
			v = v[1:]
		} else {
			sbPutch(format[i])
		}
	}
}

// sbLog prints one line with the machine-layer prefix: msg as sbPrintf
// prints it.
func sbLog(msg string, v ...int64) {
	sbConsoleLock.lock()
	sbPrintStr("machine: ")
	sbPrintf(msg, v...)
	sbPutch('\n')
	sbConsoleLock.unlock()
}

// sbFatal reports an unrecoverable machine-layer error and powers off with
// a failing status.
func sbFatal(msg string) {
	sbConsoleLock.lock()
	sbPrintStr("machine: fatal: ")
	sbPrintStr(msg)
	sbPrintStr("\n")
	sbConsoleLock.unlock()
	sbPowerOff(0x7f)
}
