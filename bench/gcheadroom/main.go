// Command gcheadroom runs the GC-headroom experiment of the Biscuit paper
// on Shortbread: the kernel keeps N vnode-like objects live and runs a
// fixed kernel-intensive workload with the heap allowed to grow to
// live × (1 + headroom) between collections, for several headrooms. It
// boots the kernel under QEMU with bench=gcheadroom, reads the results
// from the serial console, and writes a Markdown table and a PNG plot
// (with the paper's figures beside ours) to bench/results/.
//
// Usage (from the repository root, after make kernel):
//
//	go run ./bench/gcheadroom            # CI-sized: 100k vnodes (~30 MB live)
//	go run ./bench/gcheadroom -full      # the paper's size: 2M vnodes (~640 MB live)
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Row is one headroom's result.
type Row struct {
	Headroom  float64
	Ops       float64
	OpsPerSec float64
	GCShare   float64 // fraction of busy CPU time
	GCCycles  float64
	MaxPause  time.Duration
	P99Pause  time.Duration
	LiveHeap  float64
	HeapGoal  float64
}

// Run is a parsed experiment.
type Run struct {
	Files, Ops, CPUs int
	LiveBytes        uint64
	Rows             []Row
}

func kv(line string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

func num(m map[string]string, k string) float64 {
	v, _ := strconv.ParseFloat(m[k], 64)
	return v
}

// Parse reads the kernel's gcheadroom lines from a serial log.
func Parse(log []byte) (*Run, error) {
	var r *Run
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.HasPrefix(line, "gcheadroom-begin "):
			m := kv(line)
			r = &Run{Files: int(num(m, "files")), Ops: int(num(m, "ops")), CPUs: int(num(m, "cpus")), LiveBytes: uint64(num(m, "live_bytes"))}
		case strings.HasPrefix(line, "gcheadroom ") && r != nil:
			m := kv(line)
			r.Rows = append(r.Rows, Row{
				Headroom: num(m, "headroom"), Ops: num(m, "ops"), OpsPerSec: num(m, "ops_per_s"),
				GCShare: num(m, "gc_share"), GCCycles: num(m, "gc_cycles"),
				MaxPause: time.Duration(num(m, "gc_max_pause_ns")), P99Pause: time.Duration(num(m, "gc_p99_pause_ns")),
				LiveHeap: num(m, "live_heap"), HeapGoal: num(m, "heap_goal"),
			})
		case line == "gcheadroom-end" && r != nil:
			if len(r.Rows) == 0 {
				return nil, errors.New("gcheadroom: no result lines")
			}
			return r, nil
		}
	}
	return nil, errors.New("gcheadroom: no complete gcheadroom-begin/end section in the log")
}

// Biscuit's published figures (OSDI 2018, §8.6): GC overhead at 0.5× and
// 2× headroom with 640 MB live.
var biscuit = []Row{{Headroom: 0.5, GCShare: 0.34}, {Headroom: 2, GCShare: 0.09}}

func main() {
	full := flag.Bool("full", false, "the paper's size: 2 million vnodes (needs a 4 GiB guest)")
	files := flag.Int("files", 100_000, "vnodes kept live (ignored with -full)")
	ops := flag.Int("ops", 2_000_000, "operations per headroom")
	cpus := flag.Int("cpus", 1, "guest CPUs")
	mem := flag.String("mem", "", "guest memory (default 1G, or 4G with -full)")
	icount := flag.Bool("icount", true, "run QEMU with -icount shift=0,sleep=off for repeatable guest time")
	out := flag.String("out", "bench/results", "results directory")
	logPath := flag.String("log", "", "parse this serial log instead of booting")
	flag.Parse()
	if *full {
		*files = 2_000_000
		*ops = 20_000_000
	}
	if *mem == "" {
		*mem = "1G"
		if *full {
			*mem = "4G"
		}
	}

	var log []byte
	var err error
	args := []string{}
	if *logPath != "" {
		log, err = os.ReadFile(*logPath)
	} else {
		log, args, err = boot(*files, *ops, *cpus, *mem, *icount)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gcheadroom:", err)
		os.Exit(1)
	}
	run, err := Parse(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	md := Markdown(run, args)
	fmt.Print(md)
	stamp := time.Now().UTC().Format("2006-01-02")
	size := "ci"
	if *full {
		size = "full"
	}
	base := filepath.Join(*out, fmt.Sprintf("gcheadroom-%s-%s", size, stamp))
	if err := os.WriteFile(base+".md", []byte(md+fmt.Sprintf("\n![GC overhead vs headroom](%s)\n", filepath.Base(base)+".png")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	png, err := Plot(run, biscuit)
	if err == nil {
		err = os.WriteFile(base+".png", png, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("recorded in", base+".md", "and", base+".png")
}

func boot(files, ops, cpus int, mem string, icount bool) ([]byte, []string, error) {
	iso := "build/gcheadroom.iso"
	cmdline := fmt.Sprintf("bench=gcheadroom bench.files=%d bench.ops=%d loglevel=warn", files, ops)
	mk := exec.Command("tools/mkiso.sh", iso, "build/stub.elf", "build/kernel.elf", cmdline)
	mk.Stderr = os.Stderr
	if err := mk.Run(); err != nil {
		return nil, nil, fmt.Errorf("building the ISO: %v", err)
	}
	args := []string{"-machine", "q35", "-cpu", "max", "-m", mem, "-smp", strconv.Itoa(cpus),
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-cdrom", iso}
	if icount {
		// xAPIC (the last -cpu wins): QEMU 10 stops with "Bad icount
		// read" when an x2APIC register, an MSR, is read under -icount,
		// as bench/boottime and bench/sysbench say.
		args = append(args, "-icount", "shift=0,sleep=off", "-rtc", "base=2026-01-01T00:00:00,clock=vm", "-cpu", "max,-x2apic")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "qemu-system-x86_64", args...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return out, args, fmt.Errorf("qemu: %v", err)
	}
	return out, append([]string{"bench cmdline: " + cmdline}, args...), nil
}

// Markdown renders the run as the results file.
func Markdown(r *Run, qemuArgs []string) string {
	var b strings.Builder
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	fmt.Fprintf(&b, "# GC headroom, %s, commit %s\n\n", time.Now().UTC().Format("2006-01-02"), strings.TrimSpace(string(commit)))
	if len(qemuArgs) > 0 {
		fmt.Fprintf(&b, "QEMU: `%s`\n\n", strings.Join(qemuArgs, " "))
	}
	fmt.Fprintf(&b, "%d vnodes live (%.1f MB live heap), %d operations per headroom, %d CPU(s). ", r.Files, float64(r.LiveBytes)/1e6, r.Ops, r.CPUs)
	b.WriteString("Headroom h means the heap may grow to live × (1 + h) before a collection (GOGC = 100·h). ")
	b.WriteString("GC % is the collector's share of non-idle CPU time (runtime/metrics).\n\n")
	b.WriteString("| headroom | GC % | GCs | longest pause | p99 pause | ops/s (guest) | Biscuit GC % |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		ref := ""
		for _, bi := range biscuit {
			if bi.Headroom == row.Headroom {
				ref = fmt.Sprintf("%.0f%%", bi.GCShare*100)
			}
		}
		fmt.Fprintf(&b, "| %.1f× | %.1f%% | %.0f | %v | %v | %.0f | %s |\n", row.Headroom, row.GCShare*100, row.GCCycles,
			row.MaxPause.Round(time.Microsecond), row.P99Pause.Round(time.Microsecond), row.OpsPerSec, ref)
	}
	return b.String()
}
