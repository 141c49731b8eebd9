package selftest

// Tests of what the machine layer adds beneath the runtime: CPU faults
// turned into recoverable panics, memory given back to the frame
// allocator, and device interrupts waking goroutines.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"shortbread/kernel/arch"
	"shortbread/kernel/machine"
)

func testPanicRecover() (err error) {
	got := func() (v any) {
		defer func() { v = recover() }()
		panic("boom")
	}()
	if got != "boom" {
		return fmt.Errorf("recovered %v, want boom", got)
	}
	// A panic in a goroutine deep in calls unwinds only that goroutine.
	ch := make(chan any)
	go func() {
		defer func() { ch <- recover() }()
		var f func(int)
		f = func(n int) {
			if n == 0 {
				panic(errors.New("deep"))
			}
			f(n - 1)
		}
		f(100)
	}()
	if r := <-ch; fmt.Sprint(r) != "deep" {
		return fmt.Errorf("recovered %v from a deep panic", r)
	}
	return nil
}

type big struct{ x [64]int }

var (
	nilBig  *big
	intSink int
	zero    int
)

// recoverRuntimeError runs f and returns the runtime error it panicked with.
func recoverRuntimeError(f func()) (msg string, err error) {
	defer func() {
		r := recover()
		re, ok := r.(runtime.Error)
		switch {
		case r == nil:
			err = errors.New("no panic")
		case !ok:
			err = fmt.Errorf("panic %v is not a runtime.Error", r)
		default:
			msg = re.Error()
		}
	}()
	f()
	return "", nil
}

func testNilFault() error {
	// The load faults in hardware (page 0 is unmapped); the machine layer
	// delivers SIGSEGV and the runtime turns it into a panic.
	msg, err := recoverRuntimeError(func() { intSink = nilBig.x[10] })
	if err != nil {
		return err
	}
	if !strings.Contains(msg, "nil pointer dereference") {
		return fmt.Errorf("panic %q, want a nil pointer dereference", msg)
	}
	return nil
}

func testDivideFault() error {
	// On amd64 the compiler relies on the #DE exception for this.
	msg, err := recoverRuntimeError(func() { intSink = 1 / zero })
	if err != nil {
		return err
	}
	if !strings.Contains(msg, "divide by zero") {
		return fmt.Errorf("panic %q, want integer divide by zero", msg)
	}
	return nil
}

var scavSink []byte

func testScavenger() error {
	const size = 64 << 20
	const frames = size / 4096
	runtime.GC()
	debug.FreeOSMemory()
	before := machine.ReadMemStats()
	scavSink = make([]byte, size)
	for i := 0; i < size; i += 4096 {
		scavSink[i] = 1
	}
	mid := machine.ReadMemStats()
	if grew := mid.CommittedFrames - before.CommittedFrames; grew < frames*9/10 {
		return fmt.Errorf("touching %d MiB committed only %d frames", size>>20, grew)
	}
	scavSink = nil
	runtime.GC()
	debug.FreeOSMemory() // runs the scavenger to completion
	after := machine.ReadMemStats()
	if returned := mid.CommittedFrames - after.CommittedFrames; returned < frames*3/4 {
		return fmt.Errorf("scavenger returned %d of %d frames", returned, frames)
	}
	if after.FreeFrames < mid.FreeFrames+frames*3/4 {
		return fmt.Errorf("free frames %d -> %d: frames not back in the allocator", mid.FreeFrames, after.FreeFrames)
	}
	return nil
}

// CMOS RTC registers (MC146818 data sheet): periodic interrupts on IRQ 8.
const (
	cmosIndex  = 0x70
	cmosData   = 0x71
	rtcRegA    = 0x0A
	rtcRegB    = 0x0B
	rtcRegC    = 0x0C
	rtcPIE     = 0x40
	rtcRate8Hz = 13 // 32768 >> (13-1) = 8 Hz
	rtcIRQ     = 8
)

func cmosRead(reg uint8) uint8 {
	arch.Outb(cmosIndex, reg)
	return arch.Inb(cmosData)
}

func cmosWrite(reg, v uint8) {
	arch.Outb(cmosIndex, reg)
	arch.Outb(cmosData, v)
}

// testInterrupt runs a tiny RTC driver: a goroutine waits on the
// vector (parked in the runtime's netpoller, no thread held) and
// acknowledges each periodic interrupt by reading register C; a Close
// ends its wait.
func testInterrupt() error {
	intr, err := machine.OpenIRQ(rtcIRQ)
	if err != nil {
		return fmt.Errorf("OpenIRQ: %v", err)
	}
	before := machine.IRQCount(rtcIRQ)
	cmosWrite(rtcRegA, cmosRead(rtcRegA)&0xF0|rtcRate8Hz)
	cmosWrite(rtcRegB, cmosRead(rtcRegB)|rtcPIE)
	cmosRead(rtcRegC)
	defer func() {
		cmosWrite(rtcRegB, cmosRead(rtcRegB)&^rtcPIE)
		cmosRead(rtcRegC)
		intr.Close()
	}()

	woken := make(chan uint64, 1)
	errc := make(chan error, 1)
	go func() {
		wakes := uint64(0)
		for {
			if err := intr.Wait(); err != nil {
				errc <- err
				return
			}
			cmosRead(rtcRegC) // acknowledge, or the RTC stops interrupting
			if wakes++; wakes == 3 {
				woken <- wakes
			}
		}
	}()
	select {
	case n := <-woken:
		// Each wake-up follows at least one interrupt.
		if got := machine.IRQCount(rtcIRQ) - before; got < n {
			return fmt.Errorf("driver woke %d times, machine layer counted %d interrupts", n, got)
		}
	case err := <-errc:
		return fmt.Errorf("waiting on IRQ %d: %v", rtcIRQ, err)
	case <-time.After(20 * time.Second):
		return fmt.Errorf("no wake-up from IRQ %d (%d interrupts taken)", rtcIRQ, machine.IRQCount(rtcIRQ)-before)
	}
	// A Close ends the wait the driver is in (or its next one).
	if err := intr.Close(); err != nil {
		return fmt.Errorf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if err != os.ErrClosed {
			return fmt.Errorf("wait after Close: %v, want %v", err, os.ErrClosed)
		}
	case <-time.After(20 * time.Second):
		return fmt.Errorf("Close did not end the driver's wait")
	}
	if err := intr.Close(); err != os.ErrClosed {
		return fmt.Errorf("second Close: %v, want %v", err, os.ErrClosed)
	}
	return nil
}

// testAPICMode checks that the local APICs run in x2APIC mode exactly
// when the CPU has it (CPUID.1:ECX bit 21), and that device interrupts
// and IPIs work in that mode (the tests before and after this one use
// them).
func testAPICMode() error {
	_, _, ecx, _ := arch.CPUID(1, 0)
	if has := ecx&(1<<21) != 0; machine.X2APIC() != has {
		return fmt.Errorf("x2APIC mode %v, CPUID says x2APIC %v", machine.X2APIC(), has)
	}
	return nil
}
