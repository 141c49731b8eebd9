// Command sysbench runs the issue-3 micro-benchmarks (user/bench/ubench)
// on Shortbread and on Linux in the same QEMU configuration, one boot per
// kernel and CPU count, and reports each result with its Shortbread/Linux
// ratio: null system call (getppid), clock_gettime and getcpu through
// the vDSO and as system calls, pipe ping-pong between two processes (and
// with the partner waiting in epoll_wait among 64 idle pipes),
// the same over an AF_UNIX stream socketpair and its bulk throughput
// (time per MiB), page-fault cost, process lifecycle (fork+exec+exit+wait) as the
// program's initialized data grows (.data) or its zeroed data does
// (.bss), and a multi-threaded mmap/fault-heavy malloc workload on 1, 2
// and 4 CPUs (its time should fall as CPUs are added), and cached
// sequential reads through the page cache of a virtio-blk disk and of a
// 16 MiB file on ext4 on it (4 KiB and 64 KiB reads; the disk is a fresh
// image made by the host's mke2fs for each boot).
//
// It is a benchmark, not a test: it records numbers in bench/results/
// (Markdown and JSON, with date, commit and QEMU flags) and judges
// nothing. QEMU runs in TCG here: absolute times mean little, the ratios
// between two kernels in one run are the figure of merit.
//
// Usage (from the repository root; make user, make kernel and
// tools/linux/kernel.sh build/linux first, or let make bench-sys do it):
//
//	go run ./bench/sysbench [-cpus 1,2,4] [-out bench/results] [-only getcpu,clock -tag getcpu] [-kernels shortbread]
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// qemuFlags is what tools/run-cmd.sh (through tools/qemu.sh and
// tools/linux/run.sh) gives QEMU, for the record.
const qemuFlags = "-machine q35 -cpu max -m 512M (TCG, no KVM)"

// icountFlags make QEMU count instructions instead of running on the
// host's clock: the guest's time advances 1 ns per instruction, so the
// figures do not depend on the host's load (and are not wall-clock
// times: an instruction QEMU emulates in a helper, XSAVE or a CR3 write,
// costs what any other costs). x2APIC off: QEMU 10 stops with "Bad
// icount read" on x2APIC MSR accesses.
const icountFlags = "-icount shift=0,sleep=off -rtc base=2026-01-01T00:00:00,clock=vm -cpu max,-x2apic"

// qemuExtra is what -icount adds to each boot.
var qemuExtra string

// script is the benchmark run inside the guest at 1 CPU; at more CPUs
// the malloc benchmark runs with one thread per CPU, and the
// communication benchmarks again (their two processes may then run on
// different CPUs).
const script = `cd /bench
./ubench getppid 100000
./ubench clock 100000
./ubench getcpu 100000
` + commScript + `./ubench fault 2048
./ubench spawn 40 /bench/ubench touch spawn_hello
./ubench spawn 40 /bench/ubench-data1m touch spawn_data1m
./ubench spawn 20 /bench/ubench-data8m touch spawn_data8m
./ubench spawn 40 /bench/ubench-bss1m touch spawn_bss1m
./ubench spawn 20 /bench/ubench-bss8m touch spawn_bss8m
./ubench malloc 1 2000
` + diskScript

// diskScript is the benchmarks that need the disk: cached reads of the
// block device, then of a file on the ext4 file system it holds.
const diskScript = `./ubench blkread /dev/vda 16
mkdir -p /mnt/d && mount -t ext4 /dev/vda /mnt/d && ./ubench fileread /mnt/d/data
`

// diskPrep goes before diskScript: Linux's virtio and ext4 drivers are
// modules (tools/linux/run.sh adds them and a load-order file), and the
// disk's node is waited for.
const diskPrep = `if [ -f /lib/modules/load-order ]; then for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko; done; fi
i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
`

// diskFile is the size of the file fileread reads.
const diskFile = 16 << 20

// fakeTime is when the disk's files were made, as far as its times say
// (2023-11-14).
const fakeTime = 1700000000

// commScript is the benchmarks of communication between two processes:
// pipes, unix sockets and TCP over loopback.
const commScript = `./ubench pingpong 3000
./ubench epollpingpong 3000
./ubench unixpingpong 3000
./ubench unixbulk 16
./ubench tcppingpong 2000
./ubench tcpbulk 16
`

// Result is one measurement.
type Result struct {
	Name   string  `json:"name"`
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
	Results []Result `json:"results"`
}

func main() {
	cpuList := flag.String("cpus", "1,2,4", "CPU counts (the full set runs at the first; malloc and the communication benchmarks at all)")
	out := flag.String("out", "bench/results", "where to write the report")
	only := flag.String("only", "", "run only these ubench benchmarks, at every CPU count (comma-separated: getcpu,clock,...)")
	tag := flag.String("tag", "", "added to the report's file name (sysbench-DATE-TAG)")
	kernels := flag.String("kernels", "shortbread,linux", "kernels to boot (comma-separated; SB_KERNEL=FILE picks the Shortbread build, as for tools/run-cmd.sh)")
	icount := flag.Bool("icount", false, "run QEMU with -icount shift=0: instruction counts (1 ns each), independent of the host's load")
	flag.Parse()
	qflags := qemuFlags
	if *icount {
		qemuExtra = icountFlags
		qflags += " " + icountFlags + " (1 ns per instruction)"
	}
	var cpus []int
	for _, f := range strings.Split(*cpuList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("bad -cpus %q", *cpuList)
		}
		cpus = append(cpus, n)
	}
	extra, err := stage()
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(extra)
	rep := Report{Date: time.Now().UTC().Format("2006-01-02"), Commit: gitCommit(), QEMU: qflags, Linux: linuxVersion()}
	for i, n := range cpus {
		cmd := script
		if i > 0 {
			cmd = fmt.Sprintf("cd /bench\n./ubench malloc %d 2000\n", n) + commScript
		}
		if *only != "" { // the named benchmarks at every CPU count
			cmd = filter(script+commScript, strings.Split(*only, ","))
		}
		for _, kernel := range strings.Split(*kernels, ",") {
			fmt.Fprintf(os.Stderr, "sysbench: %s, %d CPU(s)\n", kernel, n)
			rs, err := run(kernel, n, extra, cmd)
			if err != nil {
				fail("%s with %d CPUs: %v", kernel, n, err)
			}
			rep.Results = append(rep.Results, rs...)
		}
	}
	table := render(rep)
	fmt.Print(table)
	if err := save(*out, *tag, rep, table); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sysbench: "+format+"\n", args...)
	os.Exit(1)
}

// stage makes the directory merged into the initramfs: /bench with the
// benchmark programs.
func stage() (string, error) {
	dir, err := os.MkdirTemp("", "sysbench")
	if err != nil {
		return "", err
	}
	bench := filepath.Join(dir, "bench")
	if err := os.MkdirAll(bench, 0o755); err != nil {
		return "", err
	}
	src := "build/user/bench"
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", fmt.Errorf("%v (run make user first)", err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(bench, e.Name()), b, 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// filter keeps the lines of script that change directory or run one of
// the named ubench benchmarks.
func filter(script string, names []string) string {
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		f := strings.Fields(line)
		keep := len(f) > 0 && f[0] == "cd"
		for _, n := range names {
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "./ubench" && f[i+1] == n {
					keep = true
				}
			}
		}
		if keep {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// needsDisk reports whether cmd runs a benchmark of diskScript.
func needsDisk(cmd string) bool {
	return strings.Contains(cmd, "ubench blkread") || strings.Contains(cmd, "ubench fileread")
}

// makeDisk makes a 64 MiB ext4 image in dir holding /data, diskFile
// bytes of fixed pseudo-random data, with the host's mke2fs.
func makeDisk(dir string) (string, error) {
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	data := make([]byte, diskFile)
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(data); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(data[i:], x)
	}
	if err := os.WriteFile(filepath.Join(root, "data"), data, 0o644); err != nil {
		return "", err
	}
	// Every time in the image in the past, before the guest's clock
	// (-icount fixes it at 2026-01-01): a file changed after the time a
	// read sees would have its access time written at every read
	// (relatime), which is not what a cached read costs.
	past := time.Unix(fakeTime, 0)
	if err := os.Chtimes(filepath.Join(root, "data"), past, past); err != nil {
		return "", err
	}
	img := filepath.Join(dir, "disk.img")
	mkfs := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-d", root, img, "64M")
	mkfs.Env = append(os.Environ(), "E2FSPROGS_FAKE_TIME="+strconv.Itoa(fakeTime))
	if out, err := mkfs.CombinedOutput(); err != nil {
		return "", fmt.Errorf("mke2fs: %v: %s", err, out)
	}
	// mke2fs takes the change time from the host's file: now.
	set := fmt.Sprintf("set_inode_field /data ctime @%d", fakeTime)
	if out, err := exec.Command("debugfs", "-w", "-R", set, img).CombinedOutput(); err != nil {
		return "", fmt.Errorf("debugfs: %v: %s", err, out)
	}
	return img, nil
}

// run boots one kernel with the benchmarks and collects the result lines.
func run(kernel string, cpus int, extra, cmd string) ([]Result, error) {
	env := []string{"CPUS=" + strconv.Itoa(cpus), "TIMEOUT=1200"}
	if needsDisk(cmd) {
		// A fresh image each boot: mounting changes it.
		dir, err := os.MkdirTemp("", "sysbench-disk") // not in extra: that goes into the initramfs
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		img, err := makeDisk(dir)
		if err != nil {
			return nil, err
		}
		env = append(env, "DISK="+img)
		cmd = diskPrep + cmd
	}
	c := exec.Command("tools/run-cmd.sh", extra, cmd)
	c.Env = append(os.Environ(), env...)
	if qemuExtra != "" {
		c.Env = append(c.Env, "QEMU_EXTRA="+qemuExtra)
	}
	if kernel == "linux" {
		c.Env = append(c.Env, "LINUX=1")
	}
	var stdout bytes.Buffer
	c.Stdout = &stdout
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		os.Stderr.Write(stdout.Bytes())
		return nil, err
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

// render prints one row per benchmark and CPU count: both values and
// the ratio Shortbread/Linux (above 1: Shortbread takes longer).
func render(rep Report) string {
	type key struct {
		name string
		cpus int
	}
	vals := map[key]map[string]Result{}
	var keys []key
	for _, r := range rep.Results {
		k := key{r.Name, r.CPUs}
		if vals[k] == nil {
			vals[k] = map[string]Result{}
			keys = append(keys, k)
		}
		vals[k][r.Kernel] = r
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].cpus != keys[j].cpus {
			return keys[i].cpus < keys[j].cpus
		}
		return false
	})
	var b strings.Builder
	fmt.Fprintf(&b, "# Micro-benchmarks, Shortbread vs Linux (%s, commit %s)\n\n", rep.Date, rep.Commit)
	fmt.Fprintf(&b, "QEMU: %s; Linux: %s. Median of 5 in-guest repetitions; time per operation (lower is better).\n\n", rep.QEMU, rep.Linux)
	fmt.Fprintf(&b, "| benchmark | CPUs | Shortbread | Linux | ratio |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		s, l := vals[k]["shortbread"], vals[k]["linux"]
		ratio := "-"
		if s.Value > 0 && l.Value > 0 {
			ratio = fmt.Sprintf("%.2f", s.Value/l.Value)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f %s | %.1f %s | %s |\n", k.name, k.cpus, s.Value, s.Unit, l.Value, l.Unit, ratio)
	}
	return b.String()
}

func save(dir, tag string, rep Report, table string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, "sysbench-"+rep.Date)
	if tag != "" {
		base += "-" + tag
	}
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
	fmt.Fprintf(os.Stderr, "sysbench: wrote %s.md and .json\n", base)
	return nil
}
