package cmdline

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Kind is the type of value an option takes.
type Kind int

const (
	// String accepts any value, including an empty one.
	String Kind = iota
	// Bool accepts 1/0, true/false, yes/no, on/off (any case), and a
	// bare key meaning true. Values are normalised to "true"/"false".
	Bool
	// Int accepts a signed integer in Go syntax (decimal, 0x, 0o, 0b),
	// normalised to decimal.
	Int
	// Enum accepts one of Spec.Enum, case-insensitively, normalised to
	// the spelling in Spec.Enum.
	Enum
)

func (k Kind) String() string {
	switch k {
	case String:
		return "string"
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Enum:
		return "enum"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Spec describes one known option.
type Spec struct {
	Name string
	Kind Kind
	// Enum lists the accepted values of an Enum option.
	Enum []string
	// Indexed lets an Enum option also be given as a decimal index into
	// Enum, so "loglevel=2" and "loglevel=info" mean the same thing.
	Indexed bool
	// Bare, if non-empty, lets a non-Bool option appear without a value
	// and gives the value it then takes.
	Bare string
	// Repeated options may be given more than once without a warning
	// (console=); Apply keeps the last value and Cmdline.Values has all.
	Repeated bool
	Help     string
}

// Default is the schema of options the kernel understands. Subsystems
// that grow new options append to it during initialisation, before the
// command line is applied.
var Default = []Spec{
	{
		Name: "loglevel", Kind: Enum, Indexed: true,
		// Same order as klog's levels, so an index means the same in both.
		Enum: []string{"error", "warn", "info", "debug"},
		Help: "console verbosity: error, warn, info, debug, or 0-3",
	},
	{
		Name: "test", Kind: String, Bare: "all",
		Help: `run the in-kernel self tests instead of init; "test" runs all, "test=NAME" runs one`,
	},
	{
		Name: "strace", Kind: Bool,
		Help: "log every system call of user programs (debugging)",
	},
	{
		Name: "norandmaps", Kind: Bool,
		Help: "lay out every program at fixed addresses (randomize_va_space 0, as Linux's norandmaps)",
	},
	{
		Name: "hung_task_timeout_secs", Kind: Int,
		Help: "report a thread in one system call this long without sleeping, with every goroutine's stack (default 120; 0: off)",
	},
	{
		Name: "hung_task_panic", Kind: Bool,
		Help: "panic after a hung-task report",
	},
	{
		Name: "watchdog_thresh", Kind: Int,
		Help: "report a CPU that runs a thread and takes no timer interrupt for this many seconds, with every busy CPU's stack (default 10; 0: off; needs 2 CPUs)",
	},
	{
		Name: "watchdog_panic", Kind: Bool,
		Help: "power off with a failing status after a hard-lockup report",
	},
	{
		Name: "debug_hooks", Kind: Bool,
		Help: "offer /proc/shortbread/debug (root): irqoff N spins a CPU with interrupts off, hang N blocks the writer uninterruptibly, for N seconds (for checking the watchdogs)",
	},
	{
		Name: "ip", Kind: String,
		Help: "IPv4 configuration of a network card, Linux's forms: static ADDR::GW:MASK:HOST:IFACE:off, or dhcp (also :::::IFACE:dhcp)",
	},
	{
		Name: "poweroff", Kind: Bool,
		Help: "power off as soon as the kernel is ready (boot benchmarks)",
	},
	{
		Name: "bench", Kind: Enum, Enum: []string{"hlltax", "gcheadroom", "gcscale"},
		Help: "run a kernel-resident benchmark, print its results and power off",
	},
	{Name: "bench.files", Kind: Int, Help: "vnodes the benchmark keeps live"},
	{Name: "bench.ops", Kind: Int, Help: "operations per measurement"},
	{Name: "bench.hz", Kind: Int, Help: "profiler samples per second per CPU"},
	{
		Name: "prof", Kind: Int, Bare: "997",
		Help: "sample every CPU this many times a second while init runs and dump the samples when it exits (read them with bench/hlltax)",
	},
	{
		Name: "lockprof", Kind: Int, Bare: "1",
		Help: "record one in N contended kernel lock acquisitions (Go's mutex profile) and one blocking wait per N ns (its block profile), read from /proc/shortbread/{mutex,block}; 0: off (the default)",
	},
	{
		Name: "kmode", Kind: Bool,
		Help: "run the kernel-mode experiment's echo and HTTP servers (kernel/kmode/servers) as kernel goroutines on netstack, on ports 7100 and 8100 (bench/kmode; a benchmark mode, never for untrusted use)",
	},
	{
		Name: "allocstat", Kind: Bool,
		Help: "count the kernel heap objects and bytes each system call number allocates, read from /proc/shortbread/allocs (exact with one CPU, for calls that do not sleep)",
	},
	{
		Name: "sysstat", Kind: Bool,
		Help: "count the calls, successes and error numbers of each system call number, read from /proc/shortbread/syscalls (the fuzzer's coverage; writing to the file resets the counts)",
	},
	{
		Name: "gogc", Kind: Int,
		Help: "the kernel's GC target: a collection starts when the heap has grown this many percent over the live heap (Go's GOGC; default 100, -1: never); for measuring GC costs against headroom",
	},
	{
		Name: "memprofilerate", Kind: Int,
		Help: "sample one kernel heap allocation per N bytes for /proc/shortbread/heap (Go's MemProfileRate; default 524288, 1: every allocation)",
	},
	{
		Name: "wake_delay", Kind: Int,
		Help: "microseconds a busy CPU that woke a thread waits for its own thread to block, and run the woken one itself, before it sends an IPI to a halted CPU (default 150; 0: at once)",
	},
	{
		Name: "nvme_irqs", Kind: Enum, Enum: []string{"percpu", "boot"},
		Help: "where NVMe I/O queues' MSI-X interrupts are delivered: percpu (default), each at the CPU that submits to its queue; boot, all at the boot CPU (an A/B switch for bench/results/blk-2026-11-29-msix.md)",
	},
	{
		Name: "virtio_irqs", Kind: Enum, Enum: []string{"percpu", "boot"},
		Help: "where virtio-blk request queues' MSI-X interrupts are delivered: boot (default), all at the boot CPU; percpu, each at the CPU that submits to its queue, which measured slower here (bench/results/blk-2026-11-30-virtio-mq.md)",
	},
	{
		Name: "gomaxprocs", Kind: Int,
		Help: "run the kernel's Go code on at most this many processors (default: one per CPU); experiments on the Go scheduler's share of a cost",
	},
	{Name: "bench.headroom", Kind: String, Help: "comma-separated heap headrooms (multiples of the live heap) for gcheadroom"},
	{
		Name: "crash", Kind: Enum, Enum: []string{"nil", "panic"},
		Help: "crash on purpose after boot, to check the crash report: a nil dereference or a panic",
	},
	{
		Name: "console", Kind: String, Repeated: true,
		Help: "a console: ttyS0 (the first serial port; ,115200n8 and the like are accepted and ignored) or tty0 (the screen and the PS/2 keyboard); may be repeated, output goes to all and input comes from all; default: every console found",
	},
	{
		Name: "init", Kind: String,
		Help: "path of the first user program (default: the first of /sbin/init, /etc/init, /bin/init, /bin/sh that exists); arguments after -- are passed to it",
	},
	{
		Name: "root", Kind: String,
		Help: "the block device to mount as the root file system instead of the initramfs: /dev/NAME (vda1, sda2, nvme0n1p1, a whole disk) or MAJOR:MINOR",
	},
	{
		Name: "rootfstype", Kind: Enum, Enum: []string{"ext4", "ext3", "ext2"},
		Help: "the root file system's type (default ext4, which mounts ext2 and ext3 file systems too)",
	},
	{
		Name: "rootflags", Kind: String,
		Help: "the root file system's mount options, as mount -o gives them (errors=remount-ro, commit=N, discard)",
	},
	{
		Name: "ro", Kind: Bool,
		Help: "mount the root file system read-only (the default, as on Linux; init remounts it)",
	},
	{
		Name: "rw", Kind: Bool,
		Help: "mount the root file system read-write",
	},
}

// Apply validates the options against specs and returns the accepted
// values, keyed by option name and normalised per Kind. Unknown
// options, malformed values and duplicates produce warnings rather than
// errors, so that a bad command line degrades to defaults instead of an
// unbootable machine. For duplicates the last valid occurrence wins, as
// in Linux; an invalid later occurrence does not discard an earlier
// valid one. Parse-time warnings are included first.
func (c Cmdline) Apply(specs []Spec) (values map[string]string, warnings []string) {
	values = make(map[string]string)
	warnings = append(warnings, c.Warnings...)

	byName := make(map[string]*Spec, len(specs))
	for i := range specs {
		// The first spec of a name wins, so appending to Default can
		// never silently change an existing option's meaning.
		if _, dup := byName[specs[i].Name]; !dup {
			byName[specs[i].Name] = &specs[i]
		}
	}

	seen := make(map[string]bool)
	for _, o := range c.Opts {
		sp, ok := byName[o.Key]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("unknown option %q", o.Key))
			continue
		}
		if seen[o.Key] && !sp.Repeated {
			warnings = append(warnings, fmt.Sprintf("duplicate option %q; the last valid value wins", o.Key))
		}
		seen[o.Key] = true
		v, err := sp.normalize(o)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("option %s: %v; ignored", o, err))
			continue
		}
		values[o.Key] = v
	}
	return values, warnings
}

func (sp *Spec) normalize(o Option) (string, error) {
	if !o.HasValue {
		switch {
		case sp.Kind == Bool:
			return "true", nil
		case sp.Bare != "":
			return sp.Bare, nil
		}
		return "", fmt.Errorf("requires a value (%s)", sp.describe())
	}
	v := o.Value
	switch sp.Kind {
	case String:
		return v, nil
	case Bool:
		switch strings.ToLower(v) {
		case "1", "true", "yes", "on":
			return "true", nil
		case "0", "false", "no", "off":
			return "false", nil
		}
	case Int:
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return strconv.FormatInt(n, 10), nil
		}
	case Enum:
		for _, e := range sp.Enum {
			if strings.EqualFold(v, e) {
				return e, nil
			}
		}
		if sp.Indexed {
			// Decimal only: "0x1" or "+1" would be surprising spellings of an index.
			if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(sp.Enum) && strconv.Itoa(i) == v {
				return sp.Enum[i], nil
			}
		}
	default:
		return "", fmt.Errorf("option has unsupported kind %v", sp.Kind)
	}
	return "", fmt.Errorf("invalid value (want %s)", sp.describe())
}

// describe says what values a spec accepts, for warnings and Usage.
func (sp *Spec) describe() string {
	switch sp.Kind {
	case Bool:
		return "bool: 1/0, true/false, yes/no, on/off"
	case Int:
		return "integer"
	case Enum:
		s := "one of " + strings.Join(sp.Enum, ", ")
		if sp.Indexed && len(sp.Enum) > 0 {
			s += fmt.Sprintf(", or 0-%d", len(sp.Enum)-1)
		}
		return s
	}
	return sp.Kind.String()
}

// Usage renders one line per spec, sorted by name, for a "help" option
// or a boot-time diagnostic.
func Usage(specs []Spec) string {
	sorted := append([]Spec(nil), specs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var b strings.Builder
	for i := range sorted {
		sp := &sorted[i]
		form := sp.Name + "=<" + sp.describe() + ">"
		if sp.Kind == Bool || sp.Bare != "" {
			form = sp.Name + "[=<" + sp.describe() + ">]"
		}
		fmt.Fprintf(&b, "%s\n\t%s\n", form, sp.Help)
	}
	return b.String()
}
