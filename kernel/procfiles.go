package main

// What /proc says: memory, uptime, CPUs, mounts, the sysctls programs
// read, and Shortbread's own GC statistics (/proc/shortbread/gc).

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/arch"
	"shortbread/kernel/cpuinfo"
	"shortbread/kernel/fs/procfs"
	"shortbread/kernel/ipc/mqueue"
	"shortbread/kernel/ipc/sysv"
	"shortbread/kernel/kmem"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/net/inet"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/net/unix"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/proc"
	"shortbread/kernel/prof"
	"shortbread/kernel/vfs"
)

// newProc makes a procfs instance: the one at /proc, and any mount(2)
// makes.
func (k *kernel) newProc(v *vfs.VFS) *procfs.FS {
	fs := procfs.New(linux.MakeDev(0, 6))
	gc0 := prof.ReadGC()
	fs.AddFile("meminfo", k.procMeminfo, nil)
	fs.AddFile("uptime", proc.ProcUptime, nil)
	fs.AddFile("loadavg", proc.ProcLoadavg, nil)
	cpu := cpuinfo.Read(arch.CPUID)
	fs.AddFile("cpuinfo", func() []byte {
		return cpuinfo.Format(cpu, machine.NumCPU(), machine.TSCHz()/1_000_000)
	}, nil)
	fs.AddFile("interrupts", procInterrupts, nil)
	if k.pci != nil {
		fs.AddFile("bus/pci/devices", k.pci.ProcDevices, nil)
	}
	if k.blocks != nil {
		fs.AddFile("partitions", k.blocks.ProcPartitions, nil)
		fs.AddFile("diskstats", k.blocks.ProcDiskstats, nil)
	}
	fs.AddFile("vmstat", k.procVmstat, nil)
	fs.AddFile("stat", func() []byte { return proc.ProcStat() }, nil)
	fs.AddFile("mounts", func() []byte { return v.Mounts() }, nil)
	fs.AddFile("sys/vm/overcommit_memory", func() []byte { return []byte("0\n") }, nil)
	// Linux drops clean caches when 1, 2 or 3 is written here: 1 and 3
	// drop the page cache's clean pages and the file systems' clean
	// metadata blocks (dirty ones stay, as on Linux), and every value
	// collects the Go heap's garbage and gives its free spans back to
	// the frame allocator (what a program measuring MemFree wants). It collects twice: the buffer pools (sync.Pool: iobuf's
	// read and write buffers, up to 1 MiB each) keep what one collection
	// finds idle for one more, so after a single one a program that just
	// wrote in 1 MiB blocks read MemFree 1 MiB short, and the same
	// program 1 MiB higher a moment later. Linux's "2" drops its slab
	// caches' free objects the same way.
	fs.AddFile("sys/vm/drop_caches", func() []byte { return []byte("0\n") }, func(p []byte) error {
		switch val := strings.TrimSpace(string(p)); val {
		case "1", "2", "3":
			if val != "2" {
				if k.cache != nil {
					k.cache.DropClean()
				}
				v.DropCaches()
			}
			runtime.GC()
			debug.FreeOSMemory()
			return nil
		}
		return linux.EINVAL
	})
	fs.AddFile("sys/fs/lease-break-time", func() []byte { return fmt.Appendf(nil, "%d\n", vfs.LeaseBreakTime()) },
		func(p []byte) error {
			n, err := strconv.ParseInt(strings.TrimSpace(string(p)), 10, 32)
			if err != nil {
				return linux.EINVAL
			}
			vfs.SetLeaseBreakTime(n)
			return nil
		})
	for _, f := range []struct {
		name   string
		lo, hi int
		get    func(*mqueue.Limits) *int
	}{
		{"queues_max", 0, 1<<31 - 1, func(l *mqueue.Limits) *int { return &l.QueuesMax }},
		{"msg_max", 1, 65536, func(l *mqueue.Limits) *int { return &l.MsgMax }},
		{"msgsize_max", 128, 16 << 20, func(l *mqueue.Limits) *int { return &l.MsgsizeMax }},
		{"msg_default", 1, 65536, func(l *mqueue.Limits) *int { return &l.MsgDefault }},
		{"msgsize_default", 128, 16 << 20, func(l *mqueue.Limits) *int { return &l.MsgsizeDefault }},
	} {
		fs.AddFile("sys/fs/mqueue/"+f.name, func() []byte {
			l := mqueue.GetLimits()
			return fmt.Appendf(nil, "%d\n", *f.get(&l))
		}, func(p []byte) error {
			n, err := strconv.Atoi(strings.TrimSpace(string(p)))
			if err != nil || n < f.lo || n > f.hi {
				return linux.EINVAL
			}
			l := mqueue.GetLimits()
			*f.get(&l) = n
			mqueue.SetLimits(l)
			return nil
		})
	}
	fs.AddFile("sysvipc/shm", proc.SysvShm().ProcSysvipc, nil)
	for _, f := range []struct {
		name string
		get  func(*sysv.ShmLimits) *uint64
	}{
		{"shmmax", func(l *sysv.ShmLimits) *uint64 { return &l.Max }},
		{"shmall", func(l *sysv.ShmLimits) *uint64 { return &l.All }},
	} {
		fs.AddFile("sys/kernel/"+f.name, func() []byte {
			l := proc.SysvShm().Limits()
			return fmt.Appendf(nil, "%d\n", *f.get(&l))
		}, func(p []byte) error {
			n, err := strconv.ParseUint(strings.TrimSpace(string(p)), 10, 64)
			if err != nil {
				return linux.EINVAL
			}
			l := proc.SysvShm().Limits()
			*f.get(&l) = n
			proc.SysvShm().SetLimits(l)
			return nil
		})
	}
	fs.AddFile("sys/kernel/shmmni", func() []byte { return fmt.Appendf(nil, "%d\n", proc.SysvShm().Limits().MNI) },
		func(p []byte) error {
			n, err := strconv.Atoi(strings.TrimSpace(string(p)))
			if err != nil || n < 0 || n > 1<<15 {
				return linux.EINVAL
			}
			l := proc.SysvShm().Limits()
			l.MNI = n
			proc.SysvShm().SetLimits(l)
			return nil
		})
	for _, f := range []struct {
		name string
		get  func(*sysv.MsgLimits) *int
	}{
		{"msgmax", func(l *sysv.MsgLimits) *int { return &l.Max }},
		{"msgmnb", func(l *sysv.MsgLimits) *int { return &l.MNB }},
		{"msgmni", func(l *sysv.MsgLimits) *int { return &l.MNI }},
	} {
		fs.AddFile("sys/kernel/"+f.name, func() []byte {
			l := proc.SysvMsg().Limits()
			return fmt.Appendf(nil, "%d\n", *f.get(&l))
		}, func(p []byte) error {
			n, err := strconv.Atoi(strings.TrimSpace(string(p)))
			if err != nil || n < 0 || n > 1<<30 {
				return linux.EINVAL
			}
			l := proc.SysvMsg().Limits()
			*f.get(&l) = n
			proc.SysvMsg().SetLimits(l)
			return nil
		})
	}
	fs.AddFile("sys/kernel/randomize_va_space", func() []byte { return fmt.Appendf(nil, "%d\n", proc.RandomizeVASpace()) },
		func(p []byte) error {
			n, err := strconv.ParseInt(strings.TrimSpace(string(p)), 10, 32)
			if err != nil {
				return linux.EINVAL
			}
			proc.SetRandomizeVASpace(int32(n))
			return nil
		})
	fs.AddFile("sys/kernel/sem", func() []byte {
		l := proc.SysvSem().Limits()
		return fmt.Appendf(nil, "%d\t%d\t%d\t%d\n", l.MSL, l.MNS, l.OPM, l.MNI)
	}, func(p []byte) error {
		var l sysv.SemLimits
		if n, err := fmt.Sscan(string(p), &l.MSL, &l.MNS, &l.OPM, &l.MNI); n != 4 || err != nil ||
			l.MSL < 1 || l.MNS < 1 || l.OPM < 1 || l.MNI < 0 || l.MNI > 1<<15 {
			return linux.EINVAL
		}
		proc.SysvSem().SetLimits(l)
		return nil
	})
	for _, f := range []struct {
		name string
		get  func(*vfs.InotifyLimits) *int
	}{
		{"max_queued_events", func(l *vfs.InotifyLimits) *int { return &l.MaxQueuedEvents }},
		{"max_user_instances", func(l *vfs.InotifyLimits) *int { return &l.MaxUserInstances }},
		{"max_user_watches", func(l *vfs.InotifyLimits) *int { return &l.MaxUserWatches }},
	} {
		fs.AddFile("sys/fs/inotify/"+f.name, func() []byte {
			l := vfs.GetInotifyLimits()
			return fmt.Appendf(nil, "%d\n", *f.get(&l))
		}, func(p []byte) error {
			n, err := strconv.Atoi(strings.TrimSpace(string(p)))
			if err != nil || n < 0 {
				return linux.EINVAL
			}
			l := vfs.GetInotifyLimits()
			*f.get(&l) = n
			vfs.SetInotifyLimits(l)
			return nil
		})
	}
	fs.AddFile("sys/net/core/somaxconn", func() []byte { return []byte("4096\n") }, nil)
	fs.AddFile("net/unix", unix.ProcNetUnix, nil)
	fs.AddFile("net/dev", inet.ProcNetDev, nil)
	fs.AddFile("net/route", inet.ProcNetRoute, nil)
	fs.AddFile("net/snmp", inet.ProcNetSnmp, nil)
	if k.opts["ip"] != "" {
		fs.AddFile("net/pnp", inet.ProcNetPnp, nil) // only when ip= configured, as on Linux
	}
	fs.AddFile("net/tcp", inet.ProcNetTCP, nil)
	fs.AddFile("net/tcp6", inet.ProcNetTCP6, nil)
	fs.AddFile("net/udp", inet.ProcNetUDP, nil)
	fs.AddFile("net/udp6", inet.ProcNetUDP6, nil)
	fs.AddFile("sys/net/ipv4/ip_local_port_range", inet.ProcPortRange, nil)
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
	fs.AddFile("shortbread/kmem", procKmem, nil)
	// Lock contention and blocking waits by call stack (lockprof=N on the
	// command line turns the recording on), and the kernel heap's live
	// objects by the stack that allocated them (always sampled, one in
	// 512 KiB): the text form of Go's pprof profiles, and .pb.gz files go
	// tool pprof reads as they are.
	for _, name := range []string{"mutex", "block", "heap"} {
		fs.AddFile("shortbread/"+name, func() []byte {
			var b bytes.Buffer
			pprof.Lookup(name).WriteTo(&b, 1)
			return b.Bytes()
		}, nil)
		fs.AddFile("shortbread/"+name+".pb.gz", func() []byte {
			var b bytes.Buffer
			pprof.Lookup(name).WriteTo(&b, 0)
			return b.Bytes()
		}, nil)
	}
	// Contended acquisitions of directory locks, those won by spinning
	// included, which the mutex profile above does not see; writing 0
	// resets the counts.
	fs.AddFile("shortbread/dirlocks", func() []byte {
		spun, spunTime, slept, waited := vfs.DirLockContention()
		return fmt.Appendf(nil, "spun %d\nspun_us %d\nslept %d\nslept_waited_us %d\n",
			spun, spunTime.Microseconds(), slept, waited.Microseconds())
	}, func(p []byte) error {
		if strings.TrimSpace(string(p)) != "0" {
			return linux.EINVAL
		}
		vfs.ResetDirLockContention()
		return nil
	})
	// The Go execution trace of the kernel: writing "start" begins one,
	// "stop" ends it, and a read returns the last one finished, for `go
	// tool trace`. Root only (the file is 0644, root-owned).
	fs.AddFile("shortbread/trace", func() []byte {
		b, truncated := kernelTrace.Bytes()
		if truncated {
			k.log.Warnf("trace: longer than %d MiB, its end was dropped", prof.TraceLimit>>20)
		}
		return b
	}, func(p []byte) error {
		var err error
		switch strings.TrimSpace(string(p)) {
		case "start":
			err = kernelTrace.Start()
		case "stop":
			err = kernelTrace.Stop()
		default:
			return linux.EINVAL
		}
		if err != nil {
			return linux.EBUSY
		}
		return nil
	})
	// Heap allocations per system call number (allocstat).
	fs.AddFile("shortbread/allocs", proc.ProcAllocs, func([]byte) error {
		proc.ResetAllocs()
		return nil
	})
	// Calls, successes and errors per system call number (sysstat): the
	// fuzzer's coverage.
	fs.AddFile("shortbread/syscalls", proc.ProcSyscalls, func([]byte) error {
		proc.ResetSyscalls()
		return nil
	})
	fs.AddFile("shortbread/goroutines", func() []byte {
		buf := make([]byte, 1<<20)
		return buf[:runtime.Stack(buf, true)]
	}, nil)
	k.addDebugHooks(fs)
	proc.AddProcDirs(fs)
	return fs
}

var kernelTrace prof.Tracer

// goMemory are the runtime's figures /proc/meminfo shows, read without
// stopping the world (runtime.ReadMemStats would).
var goMemory = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"}, // live and not yet swept objects
	{Name: "/memory/classes/heap/unused:bytes"},  // room in the heap's spans between objects
	{Name: "/memory/classes/heap/free:bytes"},    // free spans still backed by frames
	{Name: "/memory/classes/heap/stacks:bytes"},  // goroutine stacks
	{Name: "/memory/classes/os-stacks:bytes"},    // the Ms' system stacks
	// The runtime's own records, which it keeps at their high-water
	// mark: span structures, per-P caches, heap arena and GC metadata.
	{Name: "/memory/classes/metadata/mspan/inuse:bytes"},
	{Name: "/memory/classes/metadata/mspan/free:bytes"},
	{Name: "/memory/classes/metadata/mcache/inuse:bytes"},
	{Name: "/memory/classes/metadata/mcache/free:bytes"},
	{Name: "/memory/classes/metadata/other:bytes"},
	// Profiling buckets and everything else the runtime maps.
	{Name: "/memory/classes/profiling/buckets:bytes"},
	{Name: "/memory/classes/other:bytes"},
}

var goMemoryMu sync.Mutex

// procMeminfo is /proc/meminfo: every figure is a count kept as memory
// changes hands, none an estimate. Buffers and swap are zero (no block
// cache, no swap); Cached is the tmpfs and shared memory pages (Shmem), as
// Linux counts shmem in the page cache; Mapped counts every page of an
// object something maps. The kernel's own memory is the Go heap: Slab is
// its objects (with the gaps between them in their spans), KernelStack
// the goroutine and thread stacks, and GoHeapInuse and GoHeapFree show
// the heap's objects and its free spans, which the runtime can give back
// and MemAvailable counts with MemFree. GoMetadata is the runtime's own
// records (span structures, per-P caches, arena and GC metadata) and
// GoOther its profiling buckets and the rest it maps: neither is ever
// given back, so they stay at the high-water mark of the heap's size.
func (k *kernel) procMeminfo() []byte {
	ms := machine.ReadMemStats()
	st := mm.ReadStats()
	var pc pagecache.Stats
	if k.cache != nil {
		pc = k.cache.ReadStats()
	}
	goMemoryMu.Lock()
	metrics.Read(goMemory)
	var g [12]uint64
	for i, s := range goMemory {
		if s.Value.Kind() == metrics.KindUint64 {
			g[i] = s.Value.Uint64() / 1024
		}
	}
	goMemoryMu.Unlock()
	objects, unused, heapFree, stacks := g[0], g[1], g[2], g[3]+g[4]
	metadata, other := g[5]+g[6]+g[7]+g[8]+g[9], g[10]+g[11]
	free := ms.FreeFrames * 4
	var b bytes.Buffer
	line := func(key string, kb uint64) { fmt.Fprintf(&b, "%-15s %8d kB\n", key+":", kb) }
	line("MemTotal", ms.TotalFrames*4)
	line("MemFree", free)
	// The page cache: a block device's pages are Buffers, files' pages
	// Cached (as on Linux); the clean ones can go, so they count as
	// available.
	line("MemAvailable", free+heapFree+uint64(pc.Block+pc.File-pc.Dirty-pc.Writeback)*4)
	line("Buffers", uint64(pc.Block)*4)
	line("Cached", uint64(st.Shm+pc.File)*4)
	line("SwapCached", 0)
	line("SwapTotal", 0)
	line("SwapFree", 0)
	line("Dirty", uint64(pc.Dirty)*4)
	line("Writeback", uint64(pc.Writeback)*4)
	line("AnonPages", uint64(st.Anon)*4)
	line("Mapped", uint64(st.Mapped)*4)
	line("Shmem", uint64(st.Shm)*4)
	line("Slab", objects+unused)
	line("SReclaimable", 0)
	line("SUnreclaim", objects+unused)
	line("KernelStack", stacks)
	line("PageTables", uint64(st.Tables)*4)
	line("GoHeapInuse", objects)
	line("GoHeapFree", heapFree)
	line("GoMetadata", metadata)
	line("GoOther", other)
	return b.Bytes()
}

// procVmstat is /proc/vmstat: the counts Linux prints there that
// Shortbread keeps, by Linux's names and in its units (pages, but
// nr_kernel_stack in KiB and pgpgin/pgpgout in KiB moved to and from
// disks). What Shortbread does not have is 0: swap, major faults (no
// file is paged in from a disk).
func (k *kernel) procVmstat() []byte {
	ms := machine.ReadMemStats()
	st := mm.ReadStats()
	var pc pagecache.Stats
	if k.cache != nil {
		pc = k.cache.ReadStats()
	}
	goMemoryMu.Lock()
	metrics.Read(goMemory)
	var stacks uint64
	for _, s := range goMemory[3:5] {
		if s.Value.Kind() == metrics.KindUint64 {
			stacks += s.Value.Uint64()
		}
	}
	goMemoryMu.Unlock()
	var in, out uint64
	if k.blocks != nil {
		in, out = k.blocks.Sectors()
	}
	var b bytes.Buffer
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"nr_free_pages", ms.FreeFrames},
		{"nr_anon_pages", uint64(st.Anon)},
		{"nr_mapped", uint64(st.Mapped)},
		{"nr_file_pages", uint64(st.Shm + pc.Block + pc.File)}, // shmem is in the page cache's count on Linux
		{"nr_dirty", uint64(pc.Dirty)},
		{"nr_writeback", uint64(pc.Writeback)},
		{"nr_shmem", uint64(st.Shm)},
		{"nr_kernel_stack", stacks / 1024},
		{"nr_page_table_pages", uint64(st.Tables)},
		{"pgpgin", in / 2},
		{"pgpgout", out / 2},
		{"pswpin", 0},
		{"pswpout", 0},
		{"pgfault", uint64(proc.PageFaults())},
		{"pgmajfault", 0},
		{"oom_kill", uint64(proc.OOMKills())},
	} {
		fmt.Fprintf(&b, "%s %d\n", f.name, f.v)
	}
	return b.Bytes()
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
			what := fmt.Sprintf("IO-APIC %d-edge", irq)
			switch _, fl := machine.InterruptFlags(irq); {
			case fl&machine.IRQMessage != 0:
				what = fmt.Sprintf("PCI-MSI %d-edge", irq)
			case fl&machine.IRQLevel != 0:
				what = fmt.Sprintf("IO-APIC %d-fasteoi", irq)
			}
			row(fmt.Sprintf("%d:", irq), machine.VecIRQBase+irq, what)
		}
	}
	row("LOC:", machine.VecTimer, "Local timer interrupts")
	row("RES:", machine.VecResched, "Rescheduling interrupts")
	row("TLB:", machine.VecTLB, "TLB shootdowns")
	return b.Bytes()
}

// kmemMemory are the runtime's memory classes /proc/shortbread/kmem
// breaks the kernel's memory into.
var kmemMemory = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/memory/classes/heap/stacks:bytes"},
	{Name: "/memory/classes/os-stacks:bytes"},
	{Name: "/memory/classes/metadata/other:bytes"},
	{Name: "/memory/classes/other:bytes"},
	{Name: "/memory/classes/total:bytes"},
	{Name: "/gc/heap/objects:objects"},
	// Cumulative heap allocations: t_allocs counts what a run of system
	// calls allocates.
	{Name: "/gc/heap/allocs:objects"},
	{Name: "/gc/heap/allocs:bytes"},
	{Name: "/sched/goroutines:goroutines"},
	// Machine threads (Ms): each user thread in user mode holds one, and
	// the runtime keeps every M it made, with its g0 and signal stacks.
	{Name: "/sched/threads/total:threads"},
}

// procKmem is /proc/shortbread/kmem: the kernel's own memory by runtime
// class, and the kernel objects programs make, counted as they come and
// go (cheap counts only), so that what holds the kernel heap after a
// spike can be seen without a profiler.
func procKmem() []byte {
	goMemoryMu.Lock()
	metrics.Read(kmemMemory)
	var b bytes.Buffer
	for _, s := range kmemMemory {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(&b, "%-40s %d\n", s.Name, s.Value.Uint64())
		}
	}
	goMemoryMu.Unlock()
	ps, vs, ms := proc.ReadStats(), vfs.ReadStats(), mm.ReadStats()
	fmt.Fprintf(&b, "threads_peak %d\n", ps.ThreadsPeak)
	fmt.Fprintf(&b, "processes %d\nthreads %d\nfutex_waiters %d\nopen_files %d\nrecord_locks %d\n",
		ps.Processes, ps.Threads, ps.FutexWaiters, vs.Files, vs.Locks)
	fmt.Fprintf(&b, "user_anon_pages %d\nshared_pages %d\npage_table_pages %d\n", ms.Anon, ms.Shm, ms.Tables)
	m := machine.ReadMemStats()
	fmt.Fprintf(&b, "reserved_frames %d\nrefused_for_memory %d\n", kmem.Reserve(m.TotalFrames), kmem.Refused())
	// Every frame in use, by who took it: the runtime's mappings (its
	// heap, stacks and records), the kernel's own AllocFrame callers
	// (programs' pages and page tables, DMA), and the rest: the machine
	// layer's page tables for the runtime's mappings, which it keeps.
	held := uint64(machine.FramesHeld())
	used := m.TotalFrames - m.FreeFrames
	fmt.Fprintf(&b, "frames_total %d\nframes_free %d\nframes_runtime %d\nframes_kernel %d\nframes_other %d\nruntime_mappings %d\n",
		m.TotalFrames, m.FreeFrames, m.CommittedFrames, held, int64(used)-int64(m.CommittedFrames)-int64(held), m.VMAs)
	return b.Bytes()
}
