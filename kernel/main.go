// Command kernel is the Shortbread kernel: the Go program the machine
// layer (runtime-patches/) starts as its first and only process. By the
// time main runs, the runtime is up on the boot CPU; main brings up the
// rest of the machine in one ordered list and then either runs the
// self-tests (`test` on the command line) or the kernel console.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/acpi"
	"shortbread/kernel/arch"
	"shortbread/kernel/blk"
	"shortbread/kernel/cmdline"
	"shortbread/kernel/console"
	"shortbread/kernel/cpuinfo"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/rtc"
	"shortbread/kernel/fs/devpts"
	"shortbread/kernel/initramfs"
	"shortbread/kernel/klog"
	"shortbread/kernel/kmem"
	"shortbread/kernel/kmode"
	"shortbread/kernel/machine"
	"shortbread/kernel/multiboot"
	"shortbread/kernel/net/inet"
	"shortbread/kernel/numa"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/power"
	"shortbread/kernel/proc"
	"shortbread/kernel/selftest"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// kernel is what boot found and the console needs.
type kernel struct {
	log       *klog.Logger
	boot      multiboot.Info // from the boot loader
	bootSize  uint64         // of the boot information, which stays at machine.BootInfo()
	tables    *acpi.Tables
	madt      *acpi.MADT
	opts      map[string]string
	initArgs  []string
	netCards  *netCards // the network cards and what ip= asked of them
	initEnv   []string
	initramfs *initramfs.FS
	rootRO    bool // mount the root= disk read-only (ro, the default; rw clears it)
	vfs       *vfs.VFS
	console   *tty.TTY // the console terminal (/dev/console) on the chosen consoles
	cons      consoles // the serial port and the screen, and which are chosen
	pts       *devpts.FS
	rtc       *rtc.CMOS // the CMOS clock (/dev/rtc0)
	pci       *pci.Bus
	blocks    *blk.Disks // the disks the drivers found, with their partitions
	cache     *pagecache.Cache
	cpuAPIC   []uint32       // each CPU's local APIC ID, by CPU number
	nodes     *numa.Topology // the NUMA nodes (one without an SRAT)
}

func main() {
	mainTSC := machine.Rdtsc()
	k := &kernel{}
	k.log = klog.New(&k.cons.kernel, klog.Info)
	k.readBootInfo()
	clockErr := proc.InitClocks() // before anything reads the clocks
	k.parseCmdline()
	if clockErr != nil {
		k.log.Warnf("vdso: %v", clockErr)
	}
	proc.Log = k.log
	proc.Trace = k.opts["strace"] == "true"
	proc.AllocStat = k.opts["allocstat"] == "true"
	proc.SysStat = k.opts["sysstat"] == "true"
	if v, ok := k.opts["hung_task_timeout_secs"]; ok {
		n, _ := strconv.Atoi(v) // validated as an Int by the command-line schema
		proc.HungTimeout = time.Duration(n) * time.Second
	}
	proc.HungPanic = k.opts["hung_task_panic"] == "true"
	if k.opts["norandmaps"] == "true" {
		proc.SetRandomizeVASpace(0)
	}
	if v, ok := k.opts["gogc"]; ok {
		n, _ := strconv.Atoi(v) // validated as an Int by the command-line schema
		debug.SetGCPercent(n)
	}
	if v, ok := k.opts["memprofilerate"]; ok {
		// Objects allocated before this line are not in the profile.
		runtime.MemProfileRate, _ = strconv.Atoi(v) // validated as an Int by the schema
	}
	if v, ok := k.opts["lockprof"]; ok {
		n, _ := strconv.Atoi(v) // validated as an Int by the command-line schema
		// Where kernel goroutines wait on each other: contended
		// sync.Mutex/RWMutex unlocks (one in n) and blocking channel and
		// lock waits (one per n ns), by call stack.
		runtime.SetMutexProfileFraction(n)
		runtime.SetBlockProfileRate(n)
	}
	proc.StartHungTaskDetector()
	proc.StartLoadAverage()
	kmem.SetProbe(kernelMemoryLow())
	k.startPageCache()
	proc.PowerOff = func() { k.powerOff(0) }
	proc.Restart = func() {
		k.leaveDisksClean()
		power.Reset(k.tables, k.log.Infof)
	}
	k.log.Infof("cpu: %s", cpuinfo.Summary(cpuinfo.Read(arch.CPUID)))
	k.findACPI()
	k.rtc = k.newRTC()
	k.setWalltime()
	k.setIOAPIC()
	k.setWakeDelay()
	k.startCPUs()
	k.setNUMA()
	runtime.GOMAXPROCS(k.maxProcs())
	vfs.SetCPUs(k.maxProcs())
	k.startWatchdog()
	// The network stack with its loopback interface, now that netstack
	// can size its TCP processors (one per GOMAXPROCS) to the CPUs.
	inet.Stack()
	k.startPCI()
	k.mountFileSystems()
	k.netAutoconf()
	if k.opts["kmode"] == "true" {
		// The kernel-mode experiment's servers (bench/kmode).
		if err := kmode.Start(inet.Stack(), k.log.Warnf); err != nil {
			k.log.Errorf("%v", err)
		} else {
			k.log.Warnf("kmode: kernel echo server on port %d, HTTP server on port %d (a benchmark mode)", kmode.EchoPort, kmode.HTTPPort)
		}
	}
	readyTSC := machine.Rdtsc()

	ms := machine.ReadMemStats()
	apic := "xAPIC"
	if machine.X2APIC() {
		apic = "x2APIC"
	}
	k.log.Infof("kernel ready: %d CPU(s) (%s), %d MiB RAM, %d MiB free, %s",
		machine.NumCPU(), apic, ms.TotalFrames>>8, ms.FreeFrames>>8, runtime.Version())
	// One machine-readable line for bench/boottime.
	fmt.Printf("boot-times: main_ns=%d ready_ns=%d\n", sinceStart(mainTSC), sinceStart(readyTSC))

	switch k.opts["bench"] {
	case "hlltax":
		k.benchHLLTax()
		power.Off(k.tables, 0)
	case "gcheadroom":
		k.benchGCHeadroom()
		power.Off(k.tables, 0)
	case "gcscale":
		k.benchGCScale()
		power.Off(k.tables, 0)
	}
	if k.opts["poweroff"] == "true" {
		power.Off(k.tables, 0)
	}
	if how, ok := k.opts["crash"]; ok {
		crash(how)
	}
	if name, ok := k.opts["test"]; ok {
		selftest.HPET = k.hpetAddr()
		if k.initramfs != nil {
			selftest.Initramfs = k.initramfs
		}
		_, failed := selftest.Run(&k.cons.kernel, name)
		status := uint8(0)
		if failed > 0 {
			status = 1
		}
		power.Off(k.tables, status)
	}
	if k.runInit() {
		return
	}
	k.runConsole()
}

// runInit runs the first user program (init= on the command line, else
// the first of Linux's choices that exists in the root file system) on
// the console terminal, and powers off with its exit status when it
// ends. It reports false if there is no init to run.
func (k *kernel) runInit() bool {
	if k.vfs == nil {
		return false
	}
	path := k.opts["init"]
	if path == "" {
		for _, p := range []string{"/sbin/init", "/etc/init", "/bin/init", "/bin/sh"} {
			if _, err := k.vfs.Stat(&vfs.Ctx{}, nil, p, 0); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return false
		}
	}
	term := k.console
	for _, in := range k.consoleInputs() {
		go func() {
			buf := make([]byte, 256)
			for {
				n, err := in.Read(buf)
				if err != nil {
					return
				}
				term.Input(buf[:n])
			}
		}()
	}
	argv := append([]string{path}, k.initArgs...)
	envp := append([]string{"HOME=/", "PATH=/sbin:/bin:/usr/sbin:/usr/bin", "TERM=vt100", "SHELL=/bin/sh"}, k.initEnv...)
	// Without /dev/console (a disk root with no /dev) init starts with
	// no open files, as on Linux.
	var files []*vfs.OpenFile
	if cons, err := k.vfs.Open(&vfs.Ctx{}, nil, "/dev/console", linux.O_RDWR, 0); err != nil {
		k.log.Warnf("init: unable to open an initial console: /dev/console: %v", err)
	} else {
		files = []*vfs.OpenFile{cons, cons, cons}
	}
	p, err := proc.Start(proc.Options{Files: files, CTTY: term}, path, argv, envp)
	if files != nil {
		files[0].DecRef()
	}
	if err != nil {
		k.log.Errorf("init %s: %v", path, err)
		k.powerOff(127)
	}
	stopProf := k.profileInit()
	status := p.Wait()
	stopProf()
	code := proc.ExitCode(status)
	k.log.Infof("init %s exited: status %d", path, code)
	k.powerOff(uint8(code))
	return true
}

var crashTarget *struct{ x [16]int }

// crash fails the kernel on purpose (crash= on the command line) so the
// crash report can be tested: the runtime prints the panic, every
// goroutine and the registers, and the machine powers off failing.
func crash(how string) {
	switch how {
	case "nil":
		fmt.Println(crashTarget.x[3])
	default:
		panic("crash requested on the kernel command line")
	}
}

// sinceStart converts a TSC reading to nanoseconds since the boot stub's
// first instruction.
func sinceStart(tsc uint64) uint64 {
	return (tsc - machine.StartTSC()) * 1000 / (machine.TSCHz() / 1_000_000)
}

func (k *kernel) parseCmdline() {
	cl := cmdline.Parse(k.boot.Cmdline)
	// As on Linux, KEY=value options the kernel does not know (upper-case
	// names) go to init's environment.
	var kernelOpts []cmdline.Option
	for _, o := range cl.Opts {
		if o.HasValue && o.Key != strings.ToLower(o.Key) {
			k.initEnv = append(k.initEnv, o.Key+"="+o.Value)
			continue
		}
		kernelOpts = append(kernelOpts, o)
	}
	cl.Opts = kernelOpts
	opts, warnings := cl.Apply(cmdline.Default)
	k.opts = opts
	// The root disk is mounted read-only unless rw is given, and the
	// last of ro and rw counts, as on Linux.
	k.rootRO = true
	for _, o := range cl.Opts {
		switch {
		case o.Key == "ro" && opts["ro"] == "true":
			k.rootRO = true
		case o.Key == "rw" && opts["rw"] == "true":
			k.rootRO = false
		}
	}
	k.initArgs = cl.InitArgs
	if lv, ok := opts["loglevel"]; ok {
		if l, err := klog.ParseLevel(lv); err == nil {
			k.log.SetLevel(l)
		}
	}
	warnings = append(warnings, k.chooseConsoles(cl.Values("console"))...)
	for _, w := range warnings {
		k.log.Warnf("command line: %s", w)
	}
	k.log.Debugf("command line: %q", k.boot.Cmdline)
}

// setWakeDelay passes wake_delay= (microseconds) on to the machine layer.
func (k *kernel) setWakeDelay() {
	if v, ok := k.opts["wake_delay"]; ok {
		us, _ := strconv.Atoi(v) // validated as an Int by the command-line schema
		if us < 0 || us > 10_000 {
			k.log.Warnf("wake_delay=%d: out of range 0-10000, ignored", us)
			return
		}
		machine.SetWakeDelay(time.Duration(us) * time.Microsecond)
	}
}

// maxProcs is the kernel's GOMAXPROCS: one per CPU, or fewer with
// gomaxprocs=N.
func (k *kernel) maxProcs() int {
	n := machine.NumCPU()
	if v, ok := k.opts["gomaxprocs"]; ok {
		if m, err := strconv.Atoi(v); err == nil && m > 0 && m < n {
			n = m
		}
	}
	return n
}

// physMem reads firmware tables through the machine layer's direct map.
type physMem struct{}

func (physMem) ReadAt(p []byte, pa uint64) error { return machine.ReadPhys(p, pa) }

func (k *kernel) findACPI() {
	rsdp := k.boot.RSDPv2
	if len(rsdp) == 0 {
		rsdp = k.boot.RSDPv1
	}
	if len(rsdp) == 0 {
		var err error
		if rsdp, _, err = acpi.ScanRSDP(physMem{}); err != nil {
			k.log.Warnf("acpi: no RSDP from the boot loader or the BIOS area: %v", err)
			return
		}
	}
	t, err := acpi.FindTables(physMem{}, rsdp)
	if err != nil {
		k.log.Warnf("acpi: %v", err)
		return
	}
	for _, w := range t.Warnings {
		k.log.Warnf("acpi: %v", w)
	}
	k.tables = t
	if k.madt, err = t.MADT(); err != nil {
		k.log.Warnf("acpi: MADT: %v; running on the boot CPU only", err)
	}
}

// readBootInfo reads the boot loader's multiboot2 information: the
// command line, ACPI's RSDP, the modules.
func (k *kernel) readBootInfo() {
	var hdr [8]byte
	err := machine.ReadPhys(hdr[:], uint64(machine.BootInfo()))
	if err == nil {
		k.bootSize = uint64(binary.LittleEndian.Uint32(hdr[:]))
		raw := make([]byte, k.bootSize)
		if err = machine.ReadPhys(raw, uint64(machine.BootInfo())); err == nil {
			k.boot, err = multiboot.Parse(raw)
		}
	}
	if err != nil {
		k.log.Errorf("boot information: %v", err)
	}
}

// checksum is crc32.ChecksumIEEE in 64 KiB calls: one call over tens of
// MiB is assembly no goroutine can be preempted in (see machine.ReadPhys),
// and a garbage collection would wait for it.
func checksum(data []byte) uint32 {
	var c uint32
	for off := 0; off < len(data); off += 64 << 10 {
		c = crc32.Update(c, crc32.IEEETable, data[off:min(off+64<<10, len(data))])
	}
	return c
}

// setIOAPIC gives the machine layer the MADT's first I/O APIC (the one
// with the ISA interrupts, GSI base 0).
func (k *kernel) setIOAPIC() {
	if k.madt == nil {
		return
	}
	for _, io := range k.madt.IOAPICs {
		if io.GSIBase == 0 {
			if err := machine.SetIOAPIC(uint64(io.Addr)); err != nil {
				k.log.Warnf("ioapic at %#x: %v", io.Addr, err)
			}
			return
		}
	}
}

// startCPUs starts every enabled CPU the MADT lists, numbering them
// (k.cpuAPIC) in the order they start, as the machine layer does.
func (k *kernel) startCPUs() {
	k.cpuAPIC = []uint32{machine.BootAPICID()}
	if k.madt == nil {
		return
	}
	cpus, skipped := k.madt.Startable(machine.X2APIC())
	if skipped > 0 {
		k.log.Warnf("cpu: %d CPU(s) with APIC IDs above 254 need x2APIC mode, which this CPU lacks", skipped)
	}
	info := uint64(machine.BootInfo())
	page, ok := k.boot.LowPage(info, info+k.bootSize)
	if !ok && len(cpus) > 1 {
		k.log.Warnf("cpu: no free page below 640 KiB for the start-up code; running on the boot CPU only")
		return
	}
	for _, c := range cpus {
		err := machine.StartCPU(c.APICID, uintptr(page))
		switch {
		case err == nil:
			k.cpuAPIC = append(k.cpuAPIC, c.APICID)
			k.log.Debugf("cpu: started APIC %d", c.APICID)
		case errors.Is(err, syscall.EEXIST): // the boot CPU
		default:
			k.log.Warnf("cpu: APIC %d did not start: %v", c.APICID, err)
		}
	}
}

func (k *kernel) runConsole() {
	in := k.consoleInputs()
	if len(in) == 0 {
		k.log.Errorf("console: no input")
		select {}
	}
	out := &k.cons.kernel
	fmt.Fprintln(out, "Shortbread kernel console; type help.")
	console.Run(mergeInputs(in), out, k.commands())
	select {}
}

func (k *kernel) commands() map[string]console.Command {
	return map[string]console.Command{
		"mem": {Help: "physical memory and Go heap", Run: func(w io.Writer, _ []string) error {
			ms := machine.ReadMemStats()
			var rs runtime.MemStats
			runtime.ReadMemStats(&rs)
			fmt.Fprintf(w, "frames: %d total, %d free, %d backing the Go heap (%d mappings)\n",
				ms.TotalFrames, ms.FreeFrames, ms.CommittedFrames, ms.VMAs)
			fmt.Fprintf(w, "heap: %d KiB in use, %d KiB from the machine, %d GCs\n",
				rs.HeapAlloc>>10, rs.Sys>>10, rs.NumGC)
			return nil
		}},
		"cpus": {Help: "CPUs and threads", Run: func(w io.Writer, _ []string) error {
			fmt.Fprintf(w, "%d CPU(s), GOMAXPROCS %d, %d threads, %d goroutines, TSC %d MHz\n",
				machine.NumCPU(), runtime.GOMAXPROCS(0), machine.Threads(), runtime.NumGoroutine(),
				machine.TSCHz()/1_000_000)
			return nil
		}},
		"gc": {Help: "run the garbage collector and return free memory", Run: func(w io.Writer, _ []string) error {
			start := time.Now()
			debug.FreeOSMemory()
			fmt.Fprintf(w, "GC and scavenge took %v\n", time.Since(start))
			return nil
		}},
		"uptime": {Help: "time since boot", Run: func(w io.Writer, _ []string) error {
			fmt.Fprintf(w, "up %v\n", time.Duration(sinceStart(machine.Rdtsc())).Round(time.Millisecond))
			return nil
		}},
		"test": {Help: "run self-tests [filter]", Run: func(w io.Writer, args []string) error {
			filter := "all"
			if len(args) > 0 {
				filter = args[0]
			}
			selftest.HPET = k.hpetAddr()
			selftest.Run(w, filter)
			return nil
		}},
		"poweroff": {Help: "power off [status]", Run: func(w io.Writer, args []string) error {
			status := 0
			if len(args) > 0 {
				var err error
				if status, err = strconv.Atoi(args[0]); err != nil || status < 0 || status > 255 {
					return fmt.Errorf("bad status %q", args[0])
				}
			}
			k.powerOff(uint8(status))
			return nil
		}},
		"reboot": {Help: "reset the machine", Run: func(w io.Writer, _ []string) error {
			k.leaveDisksClean()
			power.Reset(k.tables, k.log.Infof)
			return nil
		}},
	}
}

// kernelMemoryLow is kmem's probe: the kernel is short of memory once the
// free frames are down to one and a half times the reserve the machine
// layer keeps from user memory. Kernel objects are refused above the
// reserve, so that programs' page faults do not start failing first:
// memory taken by pipe buffers and the like is charged to no process,
// and an OOM kill for it would take an innocent one. The page cache's
// pages and the Go heap's free spans are given back first (at most
// every 250 ms: it scans the heap);
// requests for new kernel objects then fail while it stays low.
func kernelMemoryLow() func() bool {
	var last atomic.Int64
	return func() bool {
		ms := machine.ReadMemStats()
		r := kmem.Reserve(ms.TotalFrames)
		low := r + r/2
		if ms.FreeFrames > low {
			return false
		}
		now := time.Now().UnixNano()
		if prev := last.Load(); now-prev > int64(250*time.Millisecond) && last.CompareAndSwap(prev, now) {
			// The page cache first: its clean pages are the cheapest
			// memory to give (what Linux reclaims first too).
			kmem.Reclaim(int(low - min(low, ms.FreeFrames) + r/4))
			debug.FreeOSMemory()
		}
		return machine.ReadMemStats().FreeFrames <= low
	}
}
