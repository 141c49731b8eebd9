// Command boottime measures how long Shortbread takes to boot under QEMU:
// guest time from the boot stub's first instruction to Go main and to
// "kernel ready" (all CPUs started), for 1 and 4 CPUs, plus the kernel
// image size. It is a benchmark, not a test: it reports numbers and
// records them in bench/results/, it does not judge them.
//
// Each configuration boots -runs times (the median is reported), both in
// plain TCG (guest time follows the host clock) and with
// -icount shift=0,sleep=off and a fixed RTC (guest time follows the
// instruction count, so figures repeat exactly on one CPU).
//
// Usage (from the repository root, after make kernel and the stub):
//
//	go run ./bench/boottime [-runs 3] [-out bench/results]
package main

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

var bootTimes = regexp.MustCompile(`boot-times: main_ns=(\d+) ready_ns=(\d+)`)

type config struct {
	cpus   int
	icount bool
}

func (c config) String() string {
	mode := "tcg"
	if c.icount {
		mode = "tcg+icount"
	}
	return fmt.Sprintf("%d CPU, %s", c.cpus, mode)
}

func (c config) qemuArgs(iso string) []string {
	args := []string{"-machine", "q35", "-cpu", "max", "-m", "512M", "-smp", strconv.Itoa(c.cpus),
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-cdrom", iso}
	if c.icount {
		// xAPIC (the last -cpu wins): QEMU 10 stops with "Bad icount
		// read" when an x2APIC register, an MSR, is accessed under -icount.
		args = append(args, "-icount", "shift=0,sleep=off", "-rtc", "base=2026-01-01T00:00:00,clock=vm",
			"-cpu", "max,-x2apic")
	}
	return args
}

// boot runs one boot and returns the guest times to main and to ready.
func boot(iso string, c config) (main, ready time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "qemu-system-x86_64", c.qemuArgs(iso)...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // status 0 -> QEMU exits 1
		return 0, 0, fmt.Errorf("%v: %v\n%s", c, err, tail(out))
	}
	m := bootTimes.FindSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("%v: no boot-times line\n%s", c, tail(out))
	}
	mn, _ := strconv.ParseInt(string(m[1]), 10, 64)
	rd, _ := strconv.ParseInt(string(m[2]), 10, 64)
	return time.Duration(mn), time.Duration(rd), nil
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// imageSize returns the ELF file size and its loaded text, read-only data
// and writable data+bss sizes.
func imageSize(path string) (file int64, text, rodata, data uint64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		switch {
		case p.Flags&elf.PF_X != 0:
			text += p.Memsz
		case p.Flags&elf.PF_W != 0:
			data += p.Memsz
		default:
			rodata += p.Memsz
		}
	}
	return st.Size(), text, rodata, data, nil
}

func main() {
	runs := flag.Int("runs", 3, "boots per configuration")
	outDir := flag.String("out", "bench/results", "directory for the results file")
	kernel := flag.String("kernel", "build/kernel.elf", "kernel ELF")
	stub := flag.String("stub", "build/stub.elf", "boot stub ELF")
	flag.Parse()

	iso := filepath.Join(filepath.Dir(*kernel), "bench-boot.iso")
	mk := exec.Command("tools/mkiso.sh", iso, *stub, *kernel, "poweroff loglevel=warn")
	mk.Stderr = os.Stderr
	if err := mk.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "boottime: building the ISO:", err)
		os.Exit(1)
	}
	fileSize, text, rodata, data, err := imageSize(*kernel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "boottime:", err)
		os.Exit(1)
	}

	var report bytes.Buffer
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	fmt.Fprintf(&report, "# Boot time, %s, commit %s\n\n", time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(string(commit)))
	fmt.Fprintf(&report, "QEMU: `%s`\n\n", strings.Join(config{cpus: 1}.qemuArgs("ISO"), " "))
	fmt.Fprintf(&report, "Host: %d CPUs, %s/%s, no KVM (TCG). icount runs add `-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm`.\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&report, "Guest time is the TSC from the boot stub's first instruction; median of %d boots.\n\n", *runs)
	fmt.Fprintf(&report, "Kernel image: %d bytes ELF; loaded text %d KiB, rodata %d KiB, data+bss %d KiB.\n\n",
		fileSize, text>>10, rodata>>10, data>>10)
	fmt.Fprintf(&report, "| configuration | to Go main | to kernel ready | wall per boot |\n|---|---|---|---|\n")
	failed := false
	for _, c := range []config{{1, false}, {4, false}, {1, true}, {4, true}} {
		var mains, readies, walls []time.Duration
		for i := 0; i < *runs; i++ {
			start := time.Now()
			m, r, err := boot(iso, c)
			if err != nil {
				fmt.Fprintln(os.Stderr, "boottime:", err)
				failed = true
				break
			}
			mains, readies, walls = append(mains, m), append(readies, r), append(walls, time.Since(start))
		}
		if len(mains) == 0 {
			fmt.Fprintf(&report, "| %v | failed | failed | |\n", c)
			continue
		}
		fmt.Fprintf(&report, "| %v | %.1f ms | %.1f ms | %.1f s |\n", c,
			float64(median(mains))/1e6, float64(median(readies))/1e6, median(walls).Seconds())
	}
	os.Stdout.Write(report.Bytes())
	name := filepath.Join(*outDir, "boot-"+time.Now().UTC().Format("2006-01-02")+".md")
	if err := os.WriteFile(name, report.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "boottime:", err)
		os.Exit(1)
	}
	fmt.Println("recorded in", name)
	if failed {
		os.Exit(1)
	}
}
