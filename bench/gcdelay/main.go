// Command gcdelay measures the GC delays requests see inside the
// kernel (issue 14's item 3; Biscuit: longest pause 115 µs, worst GC
// delay in one nginx request 600 µs). It reads execution traces of the
// kernel (/proc/shortbread/trace) taken while redis or nginx served
// requests, whose request marks kernel/proc/reqtrace.go writes, and
// prints for each the longest GC pause and the GC time (stop-the-world
// pauses plus the request's own mark assists) inside each request.
// bench/gcdelay/run.sh boots the workloads and takes the traces.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	servers := flag.String("servers", "redis-server,nginx", "thread names whose requests count")
	asJSON := flag.Bool("json", false, "print the figures as JSON")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gcdelay [-servers a,b] [-json] TRACE...")
		os.Exit(2)
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fail(err)
		}
		a, err := analyze(f, strings.Split(*servers, ","))
		f.Close()
		if err != nil {
			fail(fmt.Errorf("%s: %v", name, err))
		}
		s := a.summary()
		if *asJSON {
			b, _ := json.Marshal(s)
			fmt.Printf("%s %s\n", name, b)
		} else {
			fmt.Printf("%s: %v\n", name, s)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gcdelay:", err)
	os.Exit(1)
}
