package proc

// /proc/stat: time per CPU, context switches, forks and runnable
// threads, as top, vmstat, mpstat and iostat read them.
//
// User time per CPU is what the CPU-time accounting (cputime.go) charges
// user threads, added up on the CPU that charged it; idle is the time
// the CPU's idle thread ran (machine.IdleTime); system time is the rest:
// the system calls and faults charged to threads and the kernel's own
// work that no thread is charged for (netstack's TCP processors, the
// garbage collector, drivers), as Linux counts its kernel threads and
// softirqs as system and softirq time. User time of processes with a
// nice value above 0 is nice time instead, as on Linux. iowait, irq,
// softirq, steal and guest time are not measured and stay 0. ctxt
// counts the times a user thread blocked (a voluntary switch, where it
// really waited: cputime.go); preemptions and Go's switches of
// goroutines are not counted.

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/machine"
)

// cpuStat is one CPU's account, padded to its own cache line: every
// return from user mode adds to it.
type cpuStat struct {
	user, nice, sys atomic.Int64 // TSC cycles (cputime.go)
	ctxt            atomic.Int64
	faults          atomic.Int64 // page faults taken by user programs
	_               [24]byte
}

// idleAcct is how /proc/stat derives the kernel's uncharged work per CPU:
// between two readings, the time that passed less the CPU's idle time
// and the time charged to threads on it meanwhile (none if more was
// charged: a thread charges a whole system call when it ends, on the CPU
// it ends on). The sum only grows, so system time never goes back.
type idleAcct struct {
	at, charged, idle, kernel int64
}

var (
	idleMu   sync.Mutex
	idleAccs [256]idleAcct
)

var cpuStats [256]cpuStat

func thisCPUStat() *cpuStat { return &cpuStats[machine.CurrentCPU()%len(cpuStats)] }

// PageFaults is the number of page faults user programs took since boot
// (/proc/vmstat's pgfault).
func PageFaults() int64 {
	var n int64
	for i := range min(machine.NumCPU(), len(cpuStats)) {
		n += cpuStats[i].faults.Load()
	}
	return n
}

// OOMKills is the number of processes killed for want of memory
// (/proc/vmstat's oom_kill).
func OOMKills() int64 { return int64(oomKills.Load()) }

// ProcUptime is /proc/uptime: the time since boot on the clock
// CLOCK_BOOTTIME reads, and the idle time of all CPUs together, as
// Linux prints them.
func ProcUptime() []byte {
	var idle int64
	for i := range min(machine.NumCPU(), len(cpuStats)) {
		idle += machine.IdleTime(i)
	}
	return fmt.Appendf(nil, "%.2f %.2f\n", float64(monotonicNow())/1e9, float64(idle)/1e9)
}

// ProcStat is /proc/stat in Linux's format (USER_HZ ticks).
func ProcStat() []byte {
	now := monotonicNow()
	n := min(machine.NumCPU(), len(cpuStats))
	var b bytes.Buffer
	type row struct{ user, nice, sys, idle int64 }
	rows := make([]row, n)
	var all row
	for i := range rows {
		c := &cpuStats[i]
		r := row{user: cyclesToNs(c.user.Load()), nice: cyclesToNs(c.nice.Load()), sys: cyclesToNs(c.sys.Load()), idle: machine.IdleTime(i)}
		charged := r.user + r.nice + r.sys
		idleMu.Lock()
		a := &idleAccs[i]
		a.kernel += max(now-a.at-(r.idle-a.idle)-(charged-a.charged), 0)
		a.at, a.charged, a.idle = now, charged, r.idle
		r.sys += a.kernel
		idleMu.Unlock()
		rows[i] = r
		all.user += r.user
		all.nice += r.nice
		all.sys += r.sys
		all.idle += r.idle
	}
	line := func(name string, r row) {
		fmt.Fprintf(&b, "%s %d %d %d %d 0 0 0 0 0 0\n", name, ticks(r.user), ticks(r.nice), ticks(r.sys), ticks(r.idle))
	}
	line("cpu ", all)
	for i, r := range rows {
		line(fmt.Sprintf("cpu%d", i), r)
	}
	var irqs [24]uint64
	var total uint64
	for i := range irqs {
		irqs[i] = machine.IRQCount(i)
		total += irqs[i]
	}
	fmt.Fprintf(&b, "intr %d", total)
	for _, v := range irqs {
		fmt.Fprintf(&b, " %d", v)
	}
	var ctxt int64
	for i := range rows {
		ctxt += cpuStats[i].ctxt.Load()
	}
	running, blocked := runnableThreads()
	fmt.Fprintf(&b, "\nctxt %d\nbtime %d\nprocesses %d\nprocs_running %d\nprocs_blocked %d\n",
		ctxt, time.Now().Add(-time.Duration(now)).Unix(), lastPID.Load(), running, blocked)
	b.WriteString("softirq 0 0 0 0 0 0 0 0 0 0 0\n")
	return b.Bytes()
}

// runnableThreads counts the user threads not blocked in a system call.
// None waits for a disk (there is none), so none is "blocked" in
// Linux's sense of uninterruptible I/O.
func runnableThreads() (running, blocked int) {
	tableMu.Lock()
	ps := make([]*Process, 0, len(table))
	for _, p := range table {
		ps = append(ps, p)
	}
	tableMu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		for _, t := range p.threads {
			if !t.sleeping.Load() {
				running++
			}
		}
		p.mu.Unlock()
	}
	return running, 0
}
