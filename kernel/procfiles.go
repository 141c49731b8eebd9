package main

// What /proc says: memory, uptime, CPUs, mounts, the sysctls programs
// read, and Shortbread's own GC statistics (/proc/shortbread/gc).

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/procfs"
	"shortbread/kernel/machine"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/net/unix"
	"shortbread/kernel/proc"
	"shortbread/kernel/prof"
	"shortbread/kernel/vfs"
)

func (k *kernel) mountProc(v *vfs.VFS) error {
	fs := procfs.New(linux.MakeDev(0, 6))
	boot := time.Now()
	gc0 := prof.ReadGC()
	fs.AddFile("meminfo", func() []byte {
		ms := machine.ReadMemStats()
		total, free := ms.TotalFrames*4, ms.FreeFrames*4
		return fmt.Appendf(nil, "MemTotal:       %8d kB\nMemFree:        %8d kB\nMemAvailable:   %8d kB\n"+
			"Buffers:               0 kB\nCached:                0 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n",
			total, free, free)
	}, nil)
	fs.AddFile("uptime", func() []byte {
		up := time.Since(boot).Seconds()
		return fmt.Appendf(nil, "%.2f %.2f\n", up, 0.0)
	}, nil)
	fs.AddFile("loadavg", func() []byte {
		return fmt.Appendf(nil, "0.00 0.00 0.00 1/%d 1\n", machine.Threads())
	}, nil)
	fs.AddFile("cpuinfo", func() []byte {
		var b bytes.Buffer
		for i := 0; i < machine.NumCPU(); i++ {
			fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: Shortbread\nmodel name\t: x86-64 (Go %s)\ncpu MHz\t\t: %d\n\n",
				i, runtime.Version(), machine.TSCHz()/1_000_000)
		}
		return b.Bytes()
	}, nil)
	fs.AddFile("interrupts", procInterrupts, nil)
	fs.AddFile("mounts", func() []byte {
		return []byte("rootfs / rootfs rw 0 0\ndevtmpfs /dev devtmpfs rw 0 0\nproc /proc proc rw 0 0\n")
	}, nil)
	fs.AddFile("sys/vm/overcommit_memory", func() []byte { return []byte("0\n") }, nil)
	fs.AddFile("sys/net/core/somaxconn", func() []byte { return []byte("4096\n") }, nil)
	fs.AddFile("net/unix", unix.ProcNetUnix, nil)
	// The socket buffer sysctls, as the socket layer applies them.
	for name, v := range map[string]int{"wmem_default": socket.DefaultBuf, "rmem_default": socket.DefaultBuf,
		"wmem_max": socket.MaxBuf, "rmem_max": socket.MaxBuf} {
		fs.AddFile("sys/net/core/"+name, func() []byte { return fmt.Appendf(nil, "%d\n", v) }, nil)
	}
	// The collector's figures since boot, one "key value" per line;
	// writing "gc" runs a collection (so a program can see them move).
	fs.AddFile("shortbread/gc", func() []byte {
		var kv bytes.Buffer
		prof.Window(gc0, prof.ReadGC()).KeyValues(&kv)
		m := prof.ParseKeyValues(kv.String())
		keys := make([]string, 0, len(m))
		for key := range m {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		var b bytes.Buffer
		for _, key := range keys {
			fmt.Fprintf(&b, "%s %s\n", key, m[key])
		}
		return b.Bytes()
	}, func(p []byte) error {
		if strings.TrimSpace(string(p)) != "gc" {
			return linux.EINVAL
		}
		runtime.GC()
		return nil
	})
	// Every goroutine's stack, as SysRq-t shows Linux's tasks: what a
	// hung system call is waiting for.
	fs.AddFile("shortbread/goroutines", func() []byte {
		buf := make([]byte, 1<<20)
		return buf[:runtime.Stack(buf, true)]
	}, nil)
	proc.AddProcDirs(fs)
	return v.Mount(&vfs.Ctx{}, nil, "/proc", fs.Root(), "proc", 0)
}

// procInterrupts is /proc/interrupts in Linux's layout: a row per I/O
// APIC pin that has fired, then the local timer, rescheduling and TLB
// shootdown IPIs, one column per CPU.
func procInterrupts() []byte {
	n := machine.NumCPU()
	var b bytes.Buffer
	b.WriteString("    ")
	for cpu := 0; cpu < n; cpu++ {
		fmt.Fprintf(&b, " %10s", fmt.Sprintf("CPU%d", cpu))
	}
	b.WriteString("\n")
	row := func(label string, vec int, what string) {
		fmt.Fprintf(&b, "%4s", label)
		for cpu := 0; cpu < n; cpu++ {
			fmt.Fprintf(&b, " %10d", machine.Interrupts(cpu, vec))
		}
		fmt.Fprintf(&b, "  %s\n", what)
	}
	for irq := 0; irq < 24; irq++ {
		if machine.IRQCount(irq) != 0 {
			row(fmt.Sprintf("%d:", irq), machine.VecIRQBase+irq, fmt.Sprintf("IO-APIC %d-edge", irq))
		}
	}
	row("LOC:", machine.VecTimer, "Local timer interrupts")
	row("RES:", machine.VecResched, "Rescheduling interrupts")
	row("TLB:", machine.VecTLB, "TLB shootdowns")
	return b.Bytes()
}
