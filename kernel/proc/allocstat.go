package proc

import (
	"bytes"
	"fmt"
	"runtime/metrics"
	"sort"
	"sync/atomic"
)

// AllocStat, set from the allocstat boot option, counts the kernel heap
// allocations each system call number makes: the runtime's cumulative
// allocation counters are read before and after every call. The counters
// are global, so the figures are exact only while one CPU runs (boot with
// one) and only for calls that do not sleep, during which other
// goroutines run; they are what issue 14 asks for per call ("bytes and
// objects per system call"), read from /proc/shortbread/allocs.
var AllocStat bool

type allocCount struct {
	calls, objects, bytes atomic.Uint64
}

var allocCounts [nSyscalls]allocCount

// heapAllocs returns the bytes and objects the heap has allocated since
// boot.
func heapAllocs(s *[2]metrics.Sample) (bytes, objects uint64) {
	metrics.Read(s[:])
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

func allocSamples() [2]metrics.Sample {
	return [2]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
}

// countAllocs runs fn, the handler of call no, on the thread's
// arguments, charging what it allocates to no.
func (t *Thread) countAllocs(no uint64, fn func(*Thread, *[6]uint64) (int64, bool)) (int64, bool) {
	s := &t.allocSamples
	if s[0].Name == "" {
		*s = allocSamples()
	}
	b0, o0 := heapAllocs(s)
	ret, exit := fn(t, &t.args)
	b1, o1 := heapAllocs(s)
	if no < nSyscalls {
		c := &allocCounts[no]
		c.calls.Add(1)
		c.objects.Add(o1 - o0)
		c.bytes.Add(b1 - b0)
	}
	return ret, exit
}

// ProcAllocs is /proc/shortbread/allocs: for each system call made since
// boot with allocstat, its calls and the heap objects and bytes they
// allocated, in total and per call, most bytes first. Writing anything
// to it starts the counts again.
func ProcAllocs() []byte {
	type row struct {
		name                  string
		calls, objects, bytes uint64
	}
	var rows []row
	for no := range allocCounts {
		c := &allocCounts[no]
		if n := c.calls.Load(); n > 0 {
			rows = append(rows, row{syscalls[no].Name, n, c.objects.Load(), c.bytes.Load()})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].bytes > rows[j].bytes })
	var b bytes.Buffer
	if !AllocStat {
		b.WriteString("# off: boot with allocstat to count\n")
	}
	fmt.Fprintf(&b, "%-20s %10s %12s %14s %10s %10s\n", "syscall", "calls", "objects", "bytes", "obj/call", "B/call")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-20s %10d %12d %14d %10.2f %10.1f\n", r.name, r.calls, r.objects, r.bytes,
			float64(r.objects)/float64(r.calls), float64(r.bytes)/float64(r.calls))
	}
	return b.Bytes()
}

// ResetAllocs starts the counts again.
func ResetAllocs() {
	for no := range allocCounts {
		c := &allocCounts[no]
		c.calls.Store(0)
		c.objects.Store(0)
		c.bytes.Store(0)
	}
}
