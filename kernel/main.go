// Command kernel is the Shortbread kernel: the Go program the machine layer
// starts as its first process. Boot is one ordered list in main.
package main

import (
	"fmt"
	"os"
	"runtime"

	"shortbread/kernel/machine"
)

func main() {
	fmt.Printf("Shortbread: Go %s on %d CPU(s), cmdline %q\n", runtime.Version(), machine.NumCPU(), machine.Cmdline())
	ms := machine.ReadMemStats()
	fmt.Printf("memory: %d MiB total, %d MiB free\n", ms.TotalFrames>>8, ms.FreeFrames>>8)
	os.Exit(0)
}
