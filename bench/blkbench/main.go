// Command blkbench runs the block-device benchmark (user/bench/blkbench:
// sequential and random 4 KiB reads and writes at queue depth 1 and 32,
// and write+fsync latency, all with O_DIRECT; then sequential reads
// through the page cache, cold and cached) on Shortbread and on Linux
// with the same QEMU disk — an NVMe controller (NVME=IMAGE), a
// virtio-blk disk (DISK=IMAGE) and/or a SATA disk on q35's AHCI
// controller (SATA=IMAGE) — one boot per kernel, device and CPU
// count, each on a fresh zeroed image, and reports every result with
// Shortbread's speed relative to Linux.
//
// It is a benchmark, not a test: it records numbers in bench/results/
// (Markdown and JSON, with date, commit and QEMU flags) and judges
// nothing. QEMU runs in TCG on a shared machine here: absolute numbers
// mean little and vary from run to run; the ratios between two kernels
// in one run are the figure of merit.
//
// Usage (from the repository root, after make user, make kernel and
// tools/linux/kernel.sh build/linux, or through make bench-blk):
//
//	go run ./bench/blkbench [-devices nvme,virtio,sata] [-cpus 1,2] [-mib 16] [-ops 2000]
//	go run ./bench/blkbench -latency [-cpus 1,2] [-ops 2000] [-rounds 2]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

const qemuFlags = "-machine q35 -cpu max -m 512M (TCG, no KVM)"

// devices: how each is attached and what the guest calls it.
var devices = map[string]struct{ env, node string }{
	"nvme":   {"NVME", "/dev/nvme0n1"},
	"virtio": {"DISK", "/dev/vda"},
	"sata":   {"SATA", "/dev/sda"},
}

// guest is the command run in the guest: Linux's drivers are modules
// (tools/linux/run.sh adds them; Shortbread has no load-order file), and
// Linux probes NVMe asynchronously, so the node is waited for.
const guest = `if [ -f /lib/modules/load-order ]; then for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko; done; fi
i=0; while [ ! -b %[1]s ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
/bench/blkbench %[1]s %[2]d %[3]d`

// Result is one measurement.
type Result struct {
	Name   string  `json:"name"`
	Device string  `json:"device"`
	CPUs   int     `json:"cpus"`
	Kernel string  `json:"kernel"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

// Report is what is recorded.
type Report struct {
	Date    string   `json:"date"`
	Commit  string   `json:"commit"`
	QEMU    string   `json:"qemu"`
	Linux   string   `json:"linux"`
	MiB     int      `json:"mib"`
	Ops     int      `json:"ops"`
	Results []Result `json:"results"`
	Notes   []string `json:"notes,omitempty"` // runs that failed or hung
}

func main() {
	devList := flag.String("devices", "nvme,virtio", "controllers to measure")
	cpuList := flag.String("cpus", "1,2", "CPU counts")
	mib := flag.Int("mib", 16, "MiB covered by the sequential passes and the random offsets")
	ops := flag.Int("ops", 2000, "requests per random pass")
	out := flag.String("out", "bench/results", "where to write the report")
	lat := flag.Bool("latency", false, "split QD1 virtio-blk reads into device, delivery and guest turnaround from QEMU's trace events (latency.go)")
	rounds := flag.Int("rounds", 2, "boots per kernel and CPU count in -latency mode")
	flag.Parse()
	var cpus []int
	for _, f := range strings.Split(*cpuList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("bad -cpus %q", *cpuList)
		}
		cpus = append(cpus, n)
	}
	if *lat {
		if err := latency(cpus, *ops, *rounds, *out); err != nil {
			fail("%v", err)
		}
		return
	}
	extra, err := stage()
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(extra)
	rep := Report{Date: time.Now().UTC().Format("2006-01-02"), Commit: gitCommit(), QEMU: qemuFlags,
		Linux: linuxVersion(), MiB: *mib, Ops: *ops}
	for _, dev := range strings.Split(*devList, ",") {
		d, ok := devices[dev]
		if !ok {
			fail("unknown device %q (nvme, virtio, sata)", dev)
		}
		for _, n := range cpus {
			for _, kernel := range []string{"shortbread", "linux"} {
				fmt.Fprintf(os.Stderr, "blkbench: %s on %s, %d CPU(s)\n", kernel, dev, n)
				rs, err := run(kernel, n, extra, d.env, fmt.Sprintf(guest, d.node, *mib, *ops))
				if err != nil {
					// What finished before a guest hung or failed is kept,
					// and the failure recorded.
					note := fmt.Sprintf("%s on %s with %d CPUs: %v after %d results", kernel, dev, n, err, len(rs))
					fmt.Fprintf(os.Stderr, "blkbench: %s\n", note)
					rep.Notes = append(rep.Notes, note)
				}
				for i := range rs {
					rs[i].Device = dev
				}
				rep.Results = append(rep.Results, rs...)
			}
		}
	}
	table := render(rep)
	fmt.Print(table)
	if err := save(*out, rep, table); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "blkbench: "+format+"\n", args...)
	os.Exit(1)
}

// stage makes the directory merged into the initramfs: /bench/blkbench.
func stage() (string, error) {
	dir, err := os.MkdirTemp("", "blkbench")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("build/user/bench/blkbench")
	if err != nil {
		return "", fmt.Errorf("%v (run make user first)", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bench"), 0o755); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "bench", "blkbench"), b, 0o755)
}

// run boots one kernel with a fresh 64 MiB image attached through env
// and collects the result lines.
func run(kernel string, cpus int, extra, env, cmd string) ([]Result, error) {
	dir, err := os.MkdirTemp("", "blkbench-disk") // not in extra: that goes into the initramfs
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		return nil, err
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		return nil, err
	}
	c := exec.Command("tools/run-cmd.sh", extra, cmd)
	c.Env = append(os.Environ(), "CPUS="+strconv.Itoa(cpus), "TIMEOUT=420", env+"="+img)
	if kernel == "linux" {
		c.Env = append(c.Env, "LINUX=1")
	}
	var stdout bytes.Buffer
	c.Stdout = &stdout
	c.Stderr = os.Stderr
	runErr := c.Run()
	if runErr != nil {
		os.Stderr.Write(stdout.Bytes())
	}
	var rs []Result
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(strings.TrimSpace(sc.Text()))
		if len(f) != 4 || f[0] != "result" {
			continue
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			continue
		}
		rs = append(rs, Result{Name: f[1], CPUs: cpus, Kernel: kernel, Value: v, Unit: f[3]})
	}
	if runErr != nil {
		return rs, runErr
	}
	if len(rs) == 0 {
		os.Stderr.Write(stdout.Bytes())
		return nil, fmt.Errorf("no results in the output")
	}
	return rs, nil
}

func gitCommit() string {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(b))
	if d, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(d) > 0 {
		s += "-dirty"
	}
	return s
}

func linuxVersion() string {
	b, err := os.ReadFile("build/linux/vmlinuz.version")
	if err != nil {
		return "Debian linux-image-amd64"
	}
	return strings.TrimSpace(string(b))
}

// speed is Shortbread's speed relative to Linux: above 1, Shortbread is
// faster (throughput divided, latency inverted).
func speed(s, l Result) float64 {
	if s.Value <= 0 || l.Value <= 0 {
		return 0
	}
	if s.Unit == "us" {
		return l.Value / s.Value
	}
	return s.Value / l.Value
}

// render prints one row per device, CPU count and benchmark.
func render(rep Report) string {
	type key struct {
		dev  string
		cpus int
		name string
	}
	vals := map[key]map[string]Result{}
	var keys []key
	for _, r := range rep.Results {
		k := key{r.Device, r.CPUs, r.Name}
		if vals[k] == nil {
			vals[k] = map[string]Result{}
			keys = append(keys, k)
		}
		vals[k][r.Kernel] = r
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Block devices, Shortbread vs Linux (%s, commit %s)\n\n", rep.Date, rep.Commit)
	fmt.Fprintf(&b, "QEMU: %s; Linux: %s. O_DIRECT 4 KiB requests over %d MiB, %d per random pass; median of 3 in-guest repetitions. "+
		"Speed is Shortbread relative to Linux (above 1: Shortbread faster; for fsync, latency inverted).\n\n", rep.QEMU, rep.Linux, rep.MiB, rep.Ops)
	fmt.Fprintf(&b, "| device | CPUs | benchmark | Shortbread | Linux | speed |\n|---|---|---|---|---|---|\n")
	cell := func(r Result, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.1f %s", r.Value, r.Unit)
	}
	for _, k := range keys {
		s, sok := vals[k]["shortbread"]
		l, lok := vals[k]["linux"]
		ratio := "-"
		if sok && lok {
			ratio = fmt.Sprintf("%.2f", speed(s, l))
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", k.dev, k.cpus, k.name, cell(s, sok), cell(l, lok), ratio)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintf(&b, "\nRuns that did not finish (their rows show what they measured before):\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func save(dir string, rep Report, table string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, "blk-"+rep.Date)
	j, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", append(j, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(table), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "blkbench: wrote %s.md and .json\n", base)
	return nil
}
