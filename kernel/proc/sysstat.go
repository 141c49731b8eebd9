package proc

import (
	"bytes"
	"fmt"
	"sort"
	"sync/atomic"
)

// SysStat, set from the sysstat boot option, counts for each system call
// number how often it ran, how often it succeeded, and which errors it
// returned. It is the coverage the fuzzer reports (issue 15): a call that
// only ever fails with EFAULT or EINVAL never got past its argument
// checks, and each (call, outcome) pair seen is a path that ran. Off by
// default: it costs three atomic operations on every system call.
var SysStat bool

// maxCountedErrno bounds the errors recorded per call: Linux's largest is
// EHWPOISON, 133.
const maxCountedErrno = 192

type sysCount struct {
	calls, ok atomic.Uint64
	errnos    [maxCountedErrno / 64]atomic.Uint64 // bit e: -e was returned
}

var sysCounts [nSyscalls]sysCount

// countResult records that call no returned ret.
func countResult(no uint64, ret int64) {
	if no >= nSyscalls {
		return
	}
	c := &sysCounts[no]
	c.calls.Add(1)
	switch {
	case ret >= 0:
		c.ok.Add(1)
	case -ret < maxCountedErrno:
		e := uint64(-ret)
		w := &c.errnos[e/64]
		if bit := uint64(1) << (e % 64); w.Load()&bit == 0 {
			w.Or(bit)
		}
	}
}

// ProcSyscalls is /proc/shortbread/syscalls: one line per system call
// number that ran since boot (or since the last write) with sysstat on:
// its name, calls, successes and the error numbers it returned, sorted by
// name. The last line sums the distinct outcomes: each success count
// above zero and each error number is one.
func ProcSyscalls() []byte {
	type row struct {
		name      string
		calls, ok uint64
		errnos    []int
	}
	var rows []row
	outcomes := 0
	for no := range sysCounts {
		c := &sysCounts[no]
		n := c.calls.Load()
		if n == 0 {
			continue
		}
		r := row{name: syscalls[no].Name, calls: n, ok: c.ok.Load()}
		if r.name == "" {
			r.name = fmt.Sprintf("nosys_%d", no)
		}
		for e := 1; e < maxCountedErrno; e++ {
			if c.errnos[e/64].Load()&(1<<(e%64)) != 0 {
				r.errnos = append(r.errnos, e)
			}
		}
		if r.ok > 0 {
			outcomes++
		}
		outcomes += len(r.errnos)
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	var b bytes.Buffer
	if !SysStat {
		b.WriteString("# off: boot with sysstat to count\n")
	}
	fmt.Fprintf(&b, "%-22s %10s %10s %s\n", "syscall", "calls", "ok", "errnos")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s %10d %10d", r.name, r.calls, r.ok)
		for i, e := range r.errnos {
			if i == 0 {
				b.WriteByte(' ')
			} else {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d", e)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "# %d calls ran, %d distinct outcomes\n", len(rows), outcomes)
	return b.Bytes()
}

// ResetSyscalls starts the counts again.
func ResetSyscalls() {
	for no := range sysCounts {
		c := &sysCounts[no]
		c.calls.Store(0)
		c.ok.Store(0)
		for i := range c.errnos {
			c.errnos[i].Store(0)
		}
	}
}
