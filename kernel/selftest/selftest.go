// Package selftest is the in-kernel test suite: it checks, inside the
// booted kernel, that the unmodified Go runtime works on the machine layer
// (scheduler on every CPU, channels, locks, timers, preemption, GC and
// memory return, finalizers, panics and hardware faults, interrupts). The
// kernel runs it when booted with the `test` option; tools/boottest.sh
// boots it under QEMU with 1 and 4 CPUs and reads the result line.
package selftest

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// A Test is one self-test; it returns nil on success.
type Test struct {
	Name string
	Run  func() error
}

// Tests is the suite, in the order it runs.
var Tests = []Test{
	{"goroutines-on-every-cpu", testEveryCPU},
	{"apic-mode-follows-cpuid", testAPICMode},
	{"channels-and-select", testChannels},
	{"mutex-contended-from-all-cpus", testMutex},
	{"maps-defer", testMapsDefer},
	{"time-sleep", testSleep},
	{"time-after", testAfter},
	{"preempt-tight-loop", testPreempt},
	{"gc-heap-returns-to-baseline", testGCHeap},
	{"finalizers", testFinalizers},
	{"weak-pointers-and-cleanups", testWeakCleanups},
	{"panic-recover", testPanicRecover},
	{"nil-fault-recover", testNilFault},
	{"divide-fault-recover", testDivideFault},
	{"scavenger-returns-frames", testScavenger},
	{"device-interrupt-wakes-goroutine", testInterrupt},
	{"profiler-samples-every-cpu", testProfilerEveryCPU},
	{"gc-counters-advance", testGCCounters},
	{"user-hello", testUserHello},
	{"user-segfault-kills-process", testUserSegfault},
	{"user-bad-pointers-efault", testUserEFAULT},
	{"user-broken-elf-enoexec", testUserENOEXEC},
	{"user-many-processes", testUserMany},
	{"user-fork-exec-wait-signals-threads", testUserProcs},
	{"user-proc-gc-statistics", testUserProcGC},
	{"user-syscall-fuzz", testUserFuzz},
}

// Run runs the tests whose name contains filter, or one of its
// comma-separated parts ("all" or "" runs every test), reports each on w
// and returns the number passed and failed.
func Run(w io.Writer, filter string) (passed, failed int) {
	for _, t := range Tests {
		if filter != "" && filter != "all" && !matches(t.Name, filter) {
			continue
		}
		start := time.Now()
		err := runOne(t)
		d := time.Since(start).Round(time.Millisecond)
		if err != nil {
			failed++
			fmt.Fprintf(w, "FAIL %s (%v): %v\n", t.Name, d, err)
			continue
		}
		passed++
		fmt.Fprintf(w, "PASS %s (%v)\n", t.Name, d)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return passed, failed
}

func matches(name, filter string) bool {
	for _, f := range strings.Split(filter, ",") {
		if f != "" && strings.Contains(name, f) {
			return true
		}
	}
	return false
}

// runOne turns a panic escaping a test into a failure, and a test that
// does not finish in a minute into a failure rather than a hung suite.
func runOne(t Test) (err error) {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		done <- t.Run()
	}()
	select {
	case err = <-done:
		return err
	case <-time.After(time.Minute):
		return fmt.Errorf("did not finish within a minute")
	}
}
