// Command apps benchmarks real applications inside a QEMU (TCG) guest:
// redis (redis-benchmark over 127.0.0.1 TCP, with and without pipelining,
// and over a unix socket), nginx (wrk, 1 KiB and 64 KiB static files,
// keep-alive) and mailbench (the qmail-style mail benchmark, spool on
// tmpfs). Server and client run in the same guest over loopback, so the
// kernel under test carries both sides and nothing crosses QEMU's network
// emulation (DESIGN.md §5: slirp stalls under TCG).
//
// Each repetition boots the kernel once per CPU count with
// tools/run-cmd.sh (LINUX=1 for Linux) and the user initramfs plus the
// apps (apps/stage.sh), and runs every selected workload in turn; a
// generated guest script prints each client's output between markers.
// The kernel is the only thing that changes between -kernels; runs
// alternate between kernels and CPU counts within each repetition.
// It is a benchmark, not a test: it reports medians and spread over the
// repetitions in bench/results/apps-KERNELS-DATE.json and .md, and fails
// only when a workload fails (a client error, a missing result).
//
// Usage (from the repository root, after make user apps and
// tools/linux/kernel.sh build/linux):
//
//	go run ./bench/apps [-kernels linux] [-cpus 1,2] [-reps 3] [-mem 512M]
//	    [-workloads redis,nginx,mail] [-redis-requests 30000]
//	    [-wrk-duration 5] [-mail-duration 5] [-out bench/results]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

type params struct {
	RedisRequests int      `json:"redis_requests"`
	RedisClients  int      `json:"redis_clients"`
	RedisPipeline int      `json:"redis_pipeline"`
	WrkThreads    int      `json:"wrk_threads"`
	WrkConns      int      `json:"wrk_connections"`
	WrkSeconds    int      `json:"wrk_seconds"`
	MailClients   int      `json:"mail_clients"`
	MailSeconds   int      `json:"mail_seconds"`
	MailSize      int      `json:"mail_size"`
	MailSpawn     string   `json:"mail_spawn"`
	MailDisk      bool     `json:"mail_disk"`
	MailDevices   []string `json:"mail_devices,omitempty"` // controllers of the mail disk: virtio, sata, nvme
	DiskMiB       int      `json:"disk_mib"`
	Mem           string   `json:"memory"`
	Mode          string   `json:"mode"`                   // loopback or wire
	NIC           string   `json:"nic,omitempty"`          // the server's card in the wire mode
	BulkMiB       int      `json:"bulk_mib,omitempty"`     // the wire mode's bulk file
	BulkSeconds   int      `json:"bulk_seconds,omitempty"` // the least time of a bulk measurement
}

// sample is one number from one run.
type sample struct {
	Kernel   string
	CPUs     int
	Workload string // redis, nginx, mail, bulk
	Case     string // e.g. "tcp P16 SET"
	Metric   string // e.g. "requests/s"
	Value    float64
	Rep      int // the repetition (boot) it came from
}

// result aggregates one (kernel, CPUs, workload, case, metric) over runs.
type result struct {
	Kernel    string    `json:"kernel"`
	CPUs      int       `json:"cpus"`
	Workload  string    `json:"workload"`
	Case      string    `json:"case"`
	Metric    string    `json:"metric"`
	Values    []float64 `json:"values"`
	Reps      []int     `json:"reps,omitempty"` // the repetition of each value
	Median    float64   `json:"median"`
	Min       float64   `json:"min"`
	Max       float64   `json:"max"`
	SpreadPct float64   `json:"spread_pct"` // (max-min)/median
}

type boot struct {
	Kernel        string   `json:"kernel"`
	CPUs          int      `json:"cpus"`
	Rep           int      `json:"rep"`
	WallSeconds   float64  `json:"wall_seconds"`
	KernelVersion string   `json:"kernel_version"`
	HostLoad      string   `json:"host_load"` // /proc/loadavg after the boot: other work on the host skews TCG
	Errors        []string `json:"errors"`
}

type report struct {
	Date        string   `json:"date"`
	Commit      string   `json:"commit"`
	Dirty       bool     `json:"dirty"`
	QEMU        string   `json:"qemu"`
	QEMUVersion string   `json:"qemu_version"`
	HostCPUs    int      `json:"host_cpus"`
	Kernels     []string `json:"kernels"`
	KernelBuild []string `json:"kernel_builds"`
	Reps        int      `json:"reps"`
	Params      params   `json:"params"`
	Boots       []boot   `json:"boots"`
	Results     []result `json:"results"`
	// Ratios: Shortbread/Linux per repetition, when both kernels ran.
	Ratios []pairedRatio `json:"ratios,omitempty"`
	// UptimeBefore and UptimeAfter: the host's uptime(1) around the runs.
	UptimeBefore string `json:"uptime_before,omitempty"`
	UptimeAfter  string `json:"uptime_after,omitempty"`
}

// guestScript is the shell script each boot runs. Every client's output
// sits between "@@begin NAME" and "@@end NAME STATUS" lines.
func guestScript(p params, workloads []string) string {
	var b strings.Builder
	b.WriteString(`export PATH=/usr/bin:/bin:/usr/sbin:/sbin
# loopback: busybox ip, else ifconfig (whichever the kernel accepts)
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
echo "@@info kernel $(uname -r)"
echo "@@info cpus $(nproc)"
# section NAME CMD...: CMD's output between markers, and the guest's CPU
# time split (the first line of /proc/stat) before and after it
section() {
  n=$1; shift; c0=$(head -n 1 /proc/stat 2>/dev/null)
  echo "@@begin $n"; "$@" 2>&1; s=$?
  c1=$(head -n 1 /proc/stat 2>/dev/null); echo "@@end $n $s"; echo "@@cpu $n $c0 / $c1"
}
# wait_for CMD...: retry for up to 20 s until CMD succeeds
wait_for() { i=0; until "$@" >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 100 ] || return 1; usleep 200000; done; }
`)
	for _, w := range workloads {
		switch w {
		case "redis":
			n, c, pl := p.RedisRequests, p.RedisClients, p.RedisPipeline
			fmt.Fprintf(&b, `redis-server --port 6379 --bind 127.0.0.1 --unixsocket /tmp/redis.sock --save '' --appendonly no --dir /tmp --logfile /tmp/redis.log &
if wait_for redis-cli -h 127.0.0.1 ping; then
section redis/tcp/P1 redis-benchmark -h 127.0.0.1 -p 6379 -n %[1]d -c %[2]d -t set,get,lpush --csv
section redis/tcp/P%[3]d redis-benchmark -h 127.0.0.1 -p 6379 -n %[4]d -c %[2]d -P %[3]d -t set,get,lpush --csv
section redis/unix/P1 redis-benchmark -s /tmp/redis.sock -n %[1]d -c %[2]d -t set,get,lpush --csv
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
else echo "@@begin redis/start"; cat /tmp/redis.log; echo "@@end redis/start 1"; fi
wait
`, n, c, pl, n*pl/4)
		case "nginx":
			fmt.Fprintf(&b, `nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
ngx=$!
if wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html; then
section nginx/1k wrk -t%[1]d -c%[2]d -d%[3]ds --latency http://127.0.0.1:80/1k.bin
section nginx/64k wrk -t%[1]d -c%[2]d -d%[3]ds --latency http://127.0.0.1:80/64k.bin
else echo "@@begin nginx/start"; cat /tmp/nginx.err; echo "@@end nginx/start 1"; fi
kill $ngx; wait
nginx -c /etc/nginx/nginx-workers.conf 2>/tmp/nginx.err &
ngx=$!
if wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html; then
section nginx/workers-1k wrk -t%[1]d -c%[2]d -d%[3]ds --latency http://127.0.0.1:80/1k.bin
section nginx/workers-64k wrk -t%[1]d -c%[2]d -d%[3]ds --latency http://127.0.0.1:80/64k.bin
else echo "@@begin nginx/workers-start"; cat /tmp/nginx.err; echo "@@end nginx/workers-start 1"; fi
kill $ngx; wait
`, p.WrkThreads, p.WrkConns, p.WrkSeconds)
		case "mail":
			fmt.Fprintf(&b, `mkdir -p /mnt/mail && mount -t tmpfs tmpfs /mnt/mail
section mail/tmpfs mailbench -c %d -t %d -s %d -m %s -d /mnt/mail
umount /mnt/mail
`, p.MailClients, p.MailSeconds, p.MailSize, p.MailSpawn)
			if p.MailDisk {
				fmt.Fprintf(&b, `# Linux: virtio-blk and ext4 are modules (no modprobe here); elsewhere
# insmod fails quietly and the mount decides.
if [ -f /lib/modules/load-order ]; then
  for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko 2>/dev/null; done
fi
mkdir -p /mnt/disk
`)
				for _, d := range p.MailDevices {
					m := mailDevices[d]
					// A disk's node can appear a moment after its
					// driver's insmod returns.
					fmt.Fprintf(&b, `i=0; while [ ! -b %[1]s ] && [ $i -lt 100 ]; do usleep 100000; i=$((i+1)); done
if mount -t ext4 %[1]s /mnt/disk; then
section mail/%[2]s mailbench -c %[3]d -t %[4]d -s %[5]d -m %[6]s -d /mnt/disk
umount /mnt/disk
else echo "@@begin mail/%[2]s"; echo "cannot mount %[1]s as ext4"; echo "@@end mail/%[2]s 1"; fi
`, m.node, m.name, p.MailClients, p.MailSeconds, p.MailSize, p.MailSpawn)
				}
			}
		}
	}
	return b.String()
}

var (
	redisCSV   = regexp.MustCompile(`^"([A-Z_]+)[^"]*","([0-9.]+)","([0-9.]+)","([0-9.]+)","([0-9.]+)","([0-9.]+)","([0-9.]+)","([0-9.]+)"`)
	wrkRPS     = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkXfer    = regexp.MustCompile(`(?m)^Transfer/sec:\s+([0-9.]+)([KMG]?B)`)
	wrkPct     = regexp.MustCompile(`(?m)^\s+(50|75|90|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkTotal   = regexp.MustCompile(`(?m)^\s+(\d+) requests in`)
	mailLine   = regexp.MustCompile(`(?m)^MAILBENCH (.*)$`)
	wrkVerify  = regexp.MustCompile(`(?m)^wrk-verify good=(\d+) bad=(\d+)$`)
	bulkWant   = regexp.MustCompile(`(?m)^BULK want (\d+) ([0-9a-f]{64})$`)
	bulkGot    = regexp.MustCompile(`(?m)^BULK fetched (\d+) ([0-9.]+) ([0-9a-f]{64}) (\d+)$`)
	sectionEnd = regexp.MustCompile(`^@@end (\S+) (\d+)$`)
)

// parse turns one boot's console output into samples; errors name what
// failed or could not be read.
// redisTests is how many redis-benchmark tests each redis section runs.
func parse(out string, kernel string, cpus, redisTests int) (samples []sample, version string, errs []string) {
	add := func(w, c, m string, v float64) {
		samples = append(samples, sample{Kernel: kernel, CPUs: cpus, Workload: w, Case: c, Metric: m, Value: v})
	}
	sections := map[string]string{}
	var order []string // section names as they appeared
	var name string
	var body strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		switch {
		case strings.HasPrefix(line, "@@info kernel "):
			version = strings.TrimPrefix(line, "@@info kernel ")
		case strings.HasPrefix(line, "@@info cpus "):
			if n, _ := strconv.Atoi(strings.TrimPrefix(line, "@@info cpus ")); n != cpus {
				errs = append(errs, fmt.Sprintf("guest sees %d CPUs, want %d", n, cpus))
			}
		case strings.HasPrefix(line, "@@cpu "):
			cpuSplit(line, add, redisTests)
		case strings.HasPrefix(line, "@@begin "):
			name = strings.TrimPrefix(line, "@@begin ")
			body.Reset()
		case sectionEnd.MatchString(line):
			m := sectionEnd.FindStringSubmatch(line)
			if m[2] != "0" {
				errs = append(errs, fmt.Sprintf("%s exited %s:\n%s", m[1], m[2], lastLines(body.String(), 15)))
			}
			sections[m[1]] = body.String()
			order = append(order, m[1])
			name = ""
		case name != "":
			body.WriteString(line + "\n")
		}
	}
	for _, sec := range order {
		s := sections[sec]
		parts := strings.SplitN(sec, "/", 2)
		if len(parts) != 2 {
			continue
		}
		switch parts[0] {
		case "redis":
			n := 0
			for _, line := range strings.Split(s, "\n") {
				m := redisCSV.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				c := strings.ReplaceAll(parts[1], "/", " ") + " " + m[1]
				add("redis", c, "requests/s", atof(m[2]))
				add("redis", c, "p50 ms", atof(m[5]))
				add("redis", c, "p99 ms", atof(m[7]))
				n++
			}
			if n != redisTests {
				errs = append(errs, fmt.Sprintf("%s: %d results, want %d:\n%s", sec, n, redisTests, lastLines(s, 15)))
			}
		case "nginx":
			rps, total := wrkRPS.FindStringSubmatch(s), wrkTotal.FindStringSubmatch(s)
			if rps == nil || total == nil || atof(total[1]) == 0 || strings.Contains(s, "Non-2xx") || strings.Contains(s, "Socket errors") {
				errs = append(errs, fmt.Sprintf("%s: wrk failed or saw errors:\n%s", sec, lastLines(s, 15)))
				continue
			}
			// With apps/wrk-verify.lua every body was compared with the file.
			if v := wrkVerify.FindStringSubmatch(s); strings.Contains(s, "wrk-verify") && (v == nil || v[1] == "0" || v[2] != "0") {
				errs = append(errs, fmt.Sprintf("%s: bodies differ from the file or none arrived:\n%s", sec, lastLines(s, 15)))
				continue
			}
			add("nginx", parts[1], "requests/s", atof(rps[1]))
			if x := wrkXfer.FindStringSubmatch(s); x != nil {
				scale := map[string]float64{"B": 1.0 / (1 << 20), "KB": 1.0 / (1 << 10), "MB": 1, "GB": 1 << 10}[x[2]]
				add("nginx", parts[1], "MiB/s", atof(x[1])*scale)
			}
			for _, m := range wrkPct.FindAllStringSubmatch(s, -1) {
				v := atof(m[2])
				switch m[3] {
				case "us":
					v /= 1000
				case "s":
					v *= 1000
				}
				add("nginx", parts[1], "p"+m[1]+" ms", v)
			}
		case "bulk":
			if v, err := parseBulk(s); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v:\n%s", sec, err, lastLines(s, 15)))
			} else {
				add("bulk", parts[1], "MiB/s", v)
			}
		case "mail":
			m := mailLine.FindStringSubmatch(s)
			if m == nil {
				errs = append(errs, fmt.Sprintf("%s: no MAILBENCH line:\n%s", sec, lastLines(s, 15)))
				continue
			}
			kv := map[string]string{}
			for _, f := range strings.Fields(m[1]) {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			if kv["accepted"] != kv["delivered"] || kv["bad"] != "0" {
				errs = append(errs, sec+": not every message delivered intact: "+m[1])
			}
			add("mail", parts[1], "messages/s", atof(kv["msgs_per_s"]))
		}
	}
	return samples, version, errs
}

// parseBulk reads a bulk section (wireClientScript): the file's size and
// SHA-256 as made, then what the timed fetches got. Every fetch must have
// brought the whole file, and the checking fetch the same bytes.
func parseBulk(s string) (mibPerSec float64, err error) {
	w, g := bulkWant.FindStringSubmatch(s), bulkGot.FindStringSubmatch(s)
	if w == nil || g == nil {
		return 0, errors.New("no BULK lines")
	}
	size := atof(w[1]) * (1 << 20)
	bytes, secs, n := atof(g[1]), atof(g[2]), atof(g[4])
	switch {
	case g[3] != w[2]:
		return 0, fmt.Errorf("the file arrived changed: SHA-256 %s, made %s", g[3], w[2])
	case n < 1 || bytes != n*size:
		return 0, fmt.Errorf("%.0f fetches brought %.0f bytes, not %.0f each", n, bytes, size)
	case !(secs > 0):
		return 0, fmt.Errorf("fetches took %v seconds", g[2])
	}
	return bytes / (1 << 20) / secs, nil
}

// cpuSplit turns "@@cpu NAME cpu U N S I W IRQ SIRQ STEAL... / cpu ..."
// (the aggregate /proc/stat line before and after a section) into the
// share of the guest's CPU time spent in user mode, in the kernel
// (system, irq, softirq) and idle (idle, iowait) during that section. A
// kernel without /proc/stat gives none.
func cpuSplit(line string, add func(w, c, m string, v float64), redisTests int) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return
	}
	parts := strings.SplitN(f[1], "/", 2)
	if len(parts) != 2 {
		return
	}
	var before, after []float64
	cur := &before
	for _, x := range f[2:] {
		switch x {
		case "cpu":
		case "/":
			cur = &after
		default:
			*cur = append(*cur, atof(x))
		}
	}
	if len(before) < 8 || len(after) < 8 {
		return
	}
	d := make([]float64, 8)
	total := 0.0
	for i := range d {
		d[i] = after[i] - before[i]
		total += d[i]
	}
	if total <= 0 {
		return
	}
	c := strings.ReplaceAll(parts[1], "/", " ")
	if parts[0] == "redis" {
		c += fmt.Sprintf(" (%d tests)", redisTests)
	}
	add(parts[0], c, "guest user %", 100*(d[0]+d[1])/total)
	add(parts[0], c, "guest kernel %", 100*(d[2]+d[5]+d[6])/total)
	add(parts[0], c, "guest idle %", 100*(d[3]+d[4])/total)
}

func expectedSections(workloads []string, p params) []string {
	var s []string
	for _, w := range workloads {
		switch w {
		case "redis":
			s = append(s, "redis/tcp/P1", fmt.Sprintf("redis/tcp/P%d", p.RedisPipeline))
			if p.Mode != "wire" { // the wire has no unix socket
				s = append(s, "redis/unix/P1")
			}
		case "nginx":
			s = append(s, "nginx/1k", "nginx/64k")
			if p.Mode != "wire" { // the wire's server runs one process
				s = append(s, "nginx/workers-1k", "nginx/workers-64k")
			}
		case "bulk":
			s = append(s, "bulk/send", "bulk/recv")
		case "mail":
			s = append(s, "mail/tmpfs")
			if p.MailDisk {
				for _, d := range p.MailDevices {
					s = append(s, "mail/"+mailDevices[d].name)
				}
			}
		}
	}
	return s
}

func atof(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// mailDevice is one controller the mail benchmark's ext4 disk can sit on:
// its QEMU arguments for a raw image, the guest's device node (the same
// on both kernels) and the case name in the results. cache=unsafe: the
// guest still sends its flushes, but the host does not wait for its own
// disk, whose speed is not what is measured.
type mailDevice struct {
	args, node, name string
}

var mailDevices = map[string]mailDevice{
	"virtio": {"-drive file=%s,if=virtio,format=raw,cache=unsafe", "/dev/vda", "ext4"},
	// Port 0 of q35's AHCI controller (Shortbread's -cdrom is on port 2).
	"sata": {"-drive file=%s,if=none,id=mailsata,format=raw,cache=unsafe -device ide-hd,drive=mailsata,bus=ide.0", "/dev/sda", "ext4-sata"},
	"nvme": {"-drive file=%s,if=none,id=mailnvme,format=raw,cache=unsafe -device nvme,drive=mailnvme,serial=sbmail", "/dev/nvme0n1", "ext4-nvme"},
}

// diskArgs are the QEMU arguments for p's mail disks, image i in dir
// named after its controller.
func diskArgs(p params, dir string) string {
	var a []string
	for _, d := range p.MailDevices {
		a = append(a, fmt.Sprintf(mailDevices[d].args, filepath.Join(dir, "mail-"+d+".img")))
	}
	return strings.Join(a, " ")
}

// newDisk makes a fresh ext4 image, so every boot starts from the same
// file system. Inode tables and journal are written now, not by a lazy
// initialisation thread in the guest during the measurement.
func newDisk(path string, mib int) error {
	os.Remove(path)
	if err := exec.Command("truncate", "-s", strconv.Itoa(mib)+"M", path).Run(); err != nil {
		return fmt.Errorf("truncate %s: %v", path, err)
	}
	out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %v\n%s", path, err, out)
	}
	return nil
}

// run boots kernel with CPUs and returns the console output.
// diskDir, if not empty, receives a fresh image for each mail disk.
func run(kernel string, cpus int, stage, script, diskDir string, p params, timeout int) (string, time.Duration, error) {
	cmd := exec.Command("tools/run-cmd.sh", stage, script)
	cmd.Env = append(os.Environ(), "CPUS="+strconv.Itoa(cpus), "MEM="+p.Mem, "TIMEOUT="+strconv.Itoa(timeout))
	if diskDir != "" {
		for _, d := range p.MailDevices {
			if err := newDisk(filepath.Join(diskDir, "mail-"+d+".img"), p.DiskMiB); err != nil {
				return "", 0, err
			}
		}
		cmd.Env = append(cmd.Env, "QEMU_EXTRA="+diskArgs(p, diskDir))
	}
	if kernel == "linux" {
		cmd.Env = append(cmd.Env, "LINUX=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	return out.String(), time.Since(start), err
}

func aggregate(samples []sample) []result {
	type key struct {
		k       string
		c       int
		w, x, m string
	}
	groups := map[key][]float64{}
	reps := map[key][]int{}
	var order []key
	for _, s := range samples {
		k := key{s.Kernel, s.CPUs, s.Workload, s.Case, s.Metric}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s.Value)
		reps[k] = append(reps[k], s.Rep)
	}
	var rs []result
	for _, k := range order {
		v := groups[k]
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		med := s[len(s)/2]
		if len(s)%2 == 0 {
			med = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		spread := 0.0
		if med != 0 {
			spread = 100 * (s[len(s)-1] - s[0]) / med
		}
		rs = append(rs, result{k.k, k.c, k.w, k.x, k.m, v, reps[k], med, s[0], s[len(s)-1], spread})
	}
	return rs
}

// table renders the results as Markdown: one row per workload, case and
// metric, one column per kernel and CPU count.
func table(rep report) string {
	var cpus []int
	for _, b := range rep.Boots {
		if !slices.Contains(cpus, b.CPUs) {
			cpus = append(cpus, b.CPUs)
		}
	}
	sort.Ints(cpus)
	var b strings.Builder
	type col struct {
		k string
		c int
	}
	var cols []col
	for _, k := range rep.Kernels {
		for _, c := range cpus {
			cols = append(cols, col{k, c})
		}
	}
	b.WriteString("| workload | case | metric |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s %d CPU |", c.k, c.c)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	type row struct{ w, x, m string }
	var rows []row
	seen := map[row]bool{}
	cell := map[row]map[col]result{}
	for _, r := range rep.Results {
		rw := row{r.Workload, r.Case, r.Metric}
		if !seen[rw] {
			seen[rw] = true
			rows = append(rows, rw)
			cell[rw] = map[col]result{}
		}
		cell[rw][col{r.Kernel, r.CPUs}] = r
	}
	// throughput and latency first, the guest CPU split after them
	sort.SliceStable(rows, func(i, j int) bool {
		return !strings.HasPrefix(rows[i].m, "guest ") && strings.HasPrefix(rows[j].m, "guest ")
	})
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |", rw.w, rw.x, rw.m)
		for _, c := range cols {
			r, ok := cell[rw][c]
			if !ok {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " %s (±%.0f%%) |", num(r.Median), r.SpreadPct/2)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func num(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// markdown renders a report: settings, then the table.
func markdown(rep report) []byte {
	p := rep.Params
	var md bytes.Buffer
	title := "Applications in QEMU"
	if p.Mode == "wire" {
		title = "Applications over the wire (two QEMUs)"
	}
	fmt.Fprintf(&md, "# %s, %s, commit %s", title, rep.Date[:10], rep.Commit)
	if rep.Dirty {
		md.WriteString(" (with uncommitted changes)")
	}
	md.WriteString("\n\n")
	fmt.Fprintf(&md, "Kernels: %s. QEMU: %s; `%s`.\n", strings.Join(rep.KernelBuild, "; "), rep.QEMUVersion, rep.QEMU)
	versions := map[string]bool{}
	for _, b := range rep.Boots {
		versions[b.Kernel+" "+b.KernelVersion] = true
	}
	var vs []string
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	fmt.Fprintf(&md, "Guest kernel versions (uname -r): %s. Host: %d CPUs, no KVM.\n\n", strings.Join(vs, ", "), rep.HostCPUs)
	if p.Mode == "wire" {
		link := "QEMU's socket netdev (which offers virtio-net no checksum or segmentation offload)"
		if strings.Contains(rep.QEMU, "WIRE=tap") {
			link = "taps with virtio headers on one bridge in a network namespace of their own (WIRE=tap, so both guests' virtio-net cards are offered checksum offload and TSO)"
		}
		fmt.Fprintf(&md, "Servers in one guest (the kernel named in the column, card %s), clients in a second guest that is always Linux on virtio-net-pci with the same CPU count and memory; the two QEMUs are joined by %s (tools/wirepair.sh), so only the server's kernel differs between columns. Runs alternate kernels within each repetition and CPU count. Median of %d pairs of boots per column (fewer where a run failed: see the boots below); ± is half the range (max−min) as a percentage of the median. The guest CPU split is the client guest's (/proc/stat around each client run): a client near 0%% idle limits both columns alike.\n\n", p.NIC, link, rep.Reps)
		fmt.Fprintf(&md, "- redis: `redis-benchmark -h 10.0.3.2 -c %d -t %s`, %d requests per test (P1), %d with `-P %d`; `redis-server --save '' --appendonly no`.\n",
			p.RedisClients, wireRedisTests, p.RedisRequests, p.RedisRequests*p.RedisPipeline/4, p.RedisPipeline)
		fmt.Fprintf(&md, "- nginx: apps/nginx/nginx.conf (one process, sendfile, keep-alive); `wrk -t%d -c%d -d%ds --timeout 30s --latency -s apps/wrk-verify.lua`, 1 KiB and 64 KiB files, every body compared with the file.\n", p.WrkThreads, p.WrkConns, p.WrkSeconds)
		if p.BulkMiB > 0 {
			fmt.Fprintf(&md, "- bulk: a file of %d MiB of random bytes fetched over HTTP with busybox wget, again and again for at least %d s, timed by /proc/uptime on the receiving side; `send`: the server's kernel sends (its nginx, sendfile) and the Linux client receives; `recv`: the server's kernel receives, fetching from nginx on the Linux client. A first fetch, not timed, is checked by SHA-256, and every timed one must bring the whole file.\n", p.BulkMiB, p.BulkSeconds)
		}
		md.WriteString("- mail: not run: mailbench's clients enqueue by fork and exec on the server's machine, there is no network side to it.\n\n")
	} else {
		fmt.Fprintf(&md, "Server and client in the same guest over loopback. Median of %d boots per column; ± is half the range (max−min) as a percentage of the median. The guest CPU split comes from /proc/stat around each client run.\n\n", rep.Reps)
		fmt.Fprintf(&md, "- redis: `redis-benchmark -c %d -t set,get,lpush`, %d requests per test (P1), %d with `-P %d`; TCP 127.0.0.1 and unix socket; `redis-server --save '' --appendonly no`.\n",
			p.RedisClients, p.RedisRequests, p.RedisRequests*p.RedisPipeline/4, p.RedisPipeline)
		fmt.Fprintf(&md, "- nginx: apps/nginx/nginx.conf (one process, sendfile, keep-alive; `workers-*`: the same with nginx's usual master process and one worker per CPU); `wrk -t%d -c%d -d%ds --latency`, 1 KiB and 64 KiB files.\n", p.WrkThreads, p.WrkConns, p.WrkSeconds)
		fmt.Fprintf(&md, "- mail: `mailbench -c %d -t %d -s %d -m %s`, spool and maildirs on tmpfs (tmpfs) and on a fresh %d MiB ext4 (if run) over virtio-blk (ext4), AHCI SATA (ext4-sata) or NVMe (ext4-nvme); messages/s from start to last delivery, every message verified.\n\n", p.MailClients, p.MailSeconds, p.MailSize, p.MailSpawn, p.DiskMiB)
	}
	if rep.UptimeBefore != "" {
		fmt.Fprintf(&md, "Host before: `%s`; after: `%s`.\n\n", rep.UptimeBefore, rep.UptimeAfter)
	}
	md.WriteString(table(rep))
	if len(rep.Ratios) > 0 {
		md.WriteString("\nShortbread/Linux, the two kernels' runs of each repetition paired (next to each other in time): the median of the per-repetition ratios and their range. Above 1 is better for Shortbread in throughput (requests/s, MiB/s) and worse in latency (p50, p99 ms).\n\n")
		md.WriteString(ratioTable(rep.Ratios))
	}
	md.WriteString("\nBoots (wall time; host load average after it, other work on the host slows TCG):")
	for i, b := range rep.Boots {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&md, "%s %s %d CPU #%d %.0f s (%s)", sep, b.Kernel, b.CPUs, b.Rep, b.WallSeconds, strings.Fields(b.HostLoad + " ?")[0])
	}
	md.WriteString(".\n")
	nerr := 0
	for _, b := range rep.Boots {
		nerr += len(b.Errors)
	}
	if nerr > 0 {
		fmt.Fprintf(&md, "\n**%d errors** (see the JSON file's boots[].errors).\n", nerr)
	}
	return md.Bytes()
}

func intList(s string) ([]int, error) {
	var r []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		r = append(r, n)
	}
	return r, nil
}

// scratch lists the temporary directories to remove on every exit
// (os.Exit skips deferred calls).
var scratch []string

// writePlot draws the Shortbread/Linux ratios when both kernels ran.
func writePlot(path string, rep report) {
	png, err := ratioPlot(rep)
	if err != nil {
		return // one kernel only: nothing to compare
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		fail("%v", err)
	}
	fmt.Println("wrote", path)
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench/apps: "+format+"\n", a...)
	for _, d := range scratch {
		os.RemoveAll(d)
	}
	os.Exit(1)
}

func main() {
	var p params
	kernelsFlag := flag.String("kernels", "linux", "comma-separated kernels: linux, shortbread")
	cpusFlag := flag.String("cpus", "1,2", "comma-separated CPU counts")
	reps := flag.Int("reps", 3, "repetitions (boots) per kernel and CPU count")
	workloadsFlag := flag.String("workloads", "", "comma-separated: redis, nginx, mail (default all); the wire mode: redis, nginx, bulk (a large file each way; default all three)")
	flag.StringVar(&p.Mode, "mode", "loopback", "loopback: server and clients in one guest; wire: servers in a guest of each kernel, clients in a Linux guest on the other end of a QEMU socket netdev")
	flag.StringVar(&p.NIC, "nic", "virtio-net-pci", "the wire mode's server card (QEMU -device: virtio-net-pci, e1000, e1000e or igb)")
	flag.StringVar(&p.Mem, "mem", "512M", "guest memory")
	flag.IntVar(&p.RedisRequests, "redis-requests", 30000, "redis-benchmark requests per test without pipelining (pipelined: ×P/4; the wire mode's default: 5000)")
	flag.IntVar(&p.BulkMiB, "bulk-mib", 32, "the wire mode's bulk file, MiB")
	flag.IntVar(&p.BulkSeconds, "bulk-duration", 5, "the wire mode's bulk fetches: at least this many seconds each way")
	flag.IntVar(&p.RedisClients, "redis-clients", 50, "redis-benchmark connections")
	flag.IntVar(&p.RedisPipeline, "redis-pipeline", 16, "redis-benchmark -P for the pipelined run")
	flag.IntVar(&p.WrkThreads, "wrk-threads", 1, "wrk threads")
	flag.IntVar(&p.WrkConns, "wrk-connections", 8, "wrk keep-alive connections")
	flag.IntVar(&p.WrkSeconds, "wrk-duration", 5, "wrk seconds per file")
	flag.IntVar(&p.MailClients, "mail-clients", 2, "mailbench clients")
	flag.IntVar(&p.MailSeconds, "mail-duration", 5, "mailbench seconds")
	flag.IntVar(&p.MailSize, "mail-size", 1024, "mailbench message bytes")
	flag.StringVar(&p.MailSpawn, "mail-spawn", "fork", "how mailbench clients start mail-enqueue: fork or spawn")
	flag.BoolVar(&p.MailDisk, "mail-disk", true, "also run mailbench on ext4 over virtio-blk")
	flag.IntVar(&p.DiskMiB, "disk-mib", 256, "size of the ext4 image for -mail-disk")
	mailDevs := flag.String("mail-devices", "virtio,sata,nvme", "the controllers -mail-disk runs mailbench on ext4 over, each on a fresh image: virtio, sata (q35's AHCI), nvme")
	apps := flag.String("apps", "build/apps", "directory of the app binaries (make apps)")
	outDir := flag.String("out", "bench/results", "directory for the results files")
	name := flag.String("name", "", "results file name without extension (default apps-KERNELS-DATE)")
	timeout := flag.Int("timeout", 600, "seconds per boot before QEMU is killed (a full Linux boot takes about 1 minute)")
	render := flag.String("render", "", "only rewrite FILE.md from a results FILE.json")
	flag.Parse()

	if *render != "" {
		js, err := os.ReadFile(*render)
		if err != nil {
			fail("%v", err)
		}
		var rep report
		if err := json.Unmarshal(js, &rep); err != nil {
			fail("%s: %v", *render, err)
		}
		md := strings.TrimSuffix(*render, ".json") + ".md"
		if err := os.WriteFile(md, markdown(rep), 0o644); err != nil {
			fail("%v", err)
		}
		fmt.Println("wrote", md)
		writePlot(strings.TrimSuffix(*render, ".json")+".png", rep)
		return
	}

	kernels := strings.Split(*kernelsFlag, ",")
	for _, k := range kernels {
		if k != "linux" && k != "shortbread" {
			fail("unknown kernel %q", k)
		}
	}
	cpus, err := intList(*cpusFlag)
	if err != nil {
		fail("-cpus: %v", err)
	}
	wire := p.Mode == "wire"
	switch {
	case p.Mode != "loopback" && !wire:
		fail("unknown -mode %q (loopback or wire)", p.Mode)
	case *workloadsFlag == "" && wire:
		*workloadsFlag = "redis,nginx,bulk"
	case *workloadsFlag == "":
		*workloadsFlag = "redis,nginx,mail"
	}
	if !wire || !strings.Contains(","+*workloadsFlag+",", ",bulk,") {
		p.BulkMiB, p.BulkSeconds = 0, 0
	}
	if !wire {
		p.NIC = ""
	}
	// Under TCG a request over the wire costs several times one over
	// loopback: fewer redis requests keep a pair of boots to minutes.
	redisSet := false
	flag.Visit(func(f *flag.Flag) { redisSet = redisSet || f.Name == "redis-requests" })
	if wire && !redisSet {
		p.RedisRequests = 5000
	}
	workloads := strings.Split(*workloadsFlag, ",")
	for _, w := range workloads {
		if w != "redis" && w != "nginx" && w != "mail" && w != "bulk" {
			fail("unknown workload %q", w)
		}
		if !wire && w == "bulk" {
			fail("bulk is a workload of the wire mode (-mode wire)")
		}
		if wire && w == "mail" {
			fail("the wire mode has no mail workload: mailbench's clients run on the server's machine")
		}
	}
	if *reps < 1 {
		fail("-reps must be at least 1")
	}
	if p.MailDisk {
		for _, d := range strings.Split(*mailDevs, ",") {
			if _, ok := mailDevices[d]; !ok {
				fail("-mail-devices: unknown controller %q (virtio, sata, nvme)", d)
			}
			p.MailDevices = append(p.MailDevices, d)
		}
	}

	stage, err := os.MkdirTemp("", "sb-bench-apps.")
	if err != nil {
		fail("%v", err)
	}
	scratch = append(scratch, stage)
	defer os.RemoveAll(stage)
	st := exec.Command("apps/stage.sh", *apps, stage)
	st.Stdout, st.Stderr = os.Stderr, os.Stderr
	if err := st.Run(); err != nil {
		fail("apps/stage.sh: %v", err)
	}
	redisTests := 3
	if wire {
		redisTests = strings.Count(wireRedisTests, ",") + 1
		if err := exec.Command("cp", "apps/wrk-verify.lua", filepath.Join(stage, "etc", "wrk-verify.lua")).Run(); err != nil {
			fail("copying apps/wrk-verify.lua: %v", err)
		}
	}
	disk := ""
	if p.MailDisk && strings.Contains(","+*workloadsFlag+",", ",mail,") {
		// The disk mode's host tools, and Linux's driver and file system
		// modules, staged for every kernel so the initramfs stays the same.
		mods := exec.Command("tools/linux/modules.sh", "build/linux")
		mods.Stdout, mods.Stderr = os.Stderr, os.Stderr
		deps := exec.Command("tools/deps.sh", "e2fsprogs", "coreutils")
		deps.Stdout, deps.Stderr = os.Stderr, os.Stderr
		if err := deps.Run(); err != nil {
			fail("tools/deps.sh: %v", err)
		}
		if err := mods.Run(); err != nil {
			fail("tools/linux/modules.sh: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(stage, "lib"), 0o755); err != nil {
			fail("%v", err)
		}
		if err := exec.Command("cp", "-r", "build/linux/modules", filepath.Join(stage, "lib", "modules")).Run(); err != nil {
			fail("copying the modules: %v", err)
		}
		disk = stage + ".disk"
		if err := os.MkdirAll(disk, 0o755); err != nil {
			fail("%v", err)
		}
		scratch = append(scratch, disk)
		defer os.RemoveAll(disk)
	}
	script := guestScript(p, workloads)
	if wire {
		script = wireClientScript(p, workloads)
	}
	if err := os.MkdirAll(filepath.Join(stage, "etc"), 0o755); err != nil {
		fail("%v", err)
	}
	if err := os.WriteFile(filepath.Join(stage, "etc", "bench-apps.sh"), []byte(script), 0o755); err != nil {
		fail("%v", err)
	}

	now := time.Now().UTC()
	rep := report{Date: now.Format(time.RFC3339), HostCPUs: runtime.NumCPU(), Kernels: kernels, Reps: *reps, Params: p}
	commit, _ := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	rep.Commit = strings.TrimSpace(string(commit))
	if st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(st) > 0 {
		rep.Dirty = true
	}
	rep.QEMU = "qemu-system-x86_64 -machine q35 -cpu max -m " + p.Mem + " -smp N -display none -serial stdio -monitor none -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 (TCG; Linux: -kernel/-initrd via tools/linux/run.sh, Shortbread: -cdrom via tools/qemu.sh)"
	if disk != "" {
		rep.QEMU += "; mail disks: `" + diskArgs(p, "DIR") + "`"
	}
	if wire && os.Getenv("WIRE") == "tap" {
		rep.QEMU += "; WIRE=tap (tools/wirepair.sh): server: -netdev tap,id=w0,ifname=wtapA,script=no,downscript=no,vnet_hdr=on -device " + p.NIC + ",netdev=w0 (e1000: -machine pc); client (Linux): the same on wtapB with -device virtio-net-pci; both taps on one bridge in a network namespace of their own, so virtio-net is offered checksum offload and TSO"
	} else if wire {
		rep.QEMU += "; server: -netdev socket,id=w0,listen=127.0.0.1:PORT -device " + p.NIC + ",netdev=w0 (e1000: -machine pc); client (Linux): -netdev socket,id=w0,connect=127.0.0.1:PORT -device virtio-net-pci,netdev=w0"
	}
	if v, err := exec.Command("qemu-system-x86_64", "--version").Output(); err == nil {
		rep.QEMUVersion = strings.SplitN(string(v), "\n", 2)[0]
	}
	for _, k := range kernels {
		switch k {
		case "linux":
			v, _ := os.ReadFile("build/linux/vmlinuz.version")
			rep.KernelBuild = append(rep.KernelBuild, "linux: "+strings.TrimSpace(string(v)))
		case "shortbread":
			rep.KernelBuild = append(rep.KernelBuild, "shortbread: build/kernel.elf at "+rep.Commit)
		}
	}

	var samples []sample
	var allErrs []string
	rep.UptimeBefore = uptime()
	fmt.Fprintln(os.Stderr, "bench/apps: host:", rep.UptimeBefore)
	for r := 1; r <= *reps; r++ {
		for _, c := range cpus {
			for _, k := range kernels {
				fmt.Fprintf(os.Stderr, "bench/apps: %s, %d CPU, run %d/%d ...", k, c, r, *reps)
				var out, server string
				var wall time.Duration
				var err error
				if wire {
					out, server, wall, err = runWire(k, p.NIC, c, stage, p, *timeout)
				} else {
					out, wall, err = run(k, c, stage, "sh /etc/bench-apps.sh", disk, p, *timeout)
				}
				s, version, errs := parse(out, k, c, redisTests)
				for i := range s {
					s[i].Rep = r
				}
				if err != nil {
					errs = append(errs, fmt.Sprintf("run: %v\n%s", err, lastLines(out, 20)))
					if server != "" {
						errs = append(errs, "the server's console:\n"+lastLines(server, 20))
					}
				}
				for _, sec := range expectedSections(workloads, p) {
					if !strings.Contains(out, "@@end "+sec+" ") {
						errs = append(errs, sec+": no result (the guest stopped before it?)")
					}
				}
				load, _ := os.ReadFile("/proc/loadavg")
				fmt.Fprintf(os.Stderr, " %.0f s, %d numbers, %d errors (host load %s)\n", wall.Seconds(), len(s), len(errs), strings.Fields(string(load) + " ?")[0])
				for _, e := range errs {
					fmt.Fprintf(os.Stderr, "  %s: %d CPU run %d: %s\n", k, c, r, e)
				}
				samples = append(samples, s...)
				allErrs = append(allErrs, errs...)
				rep.Boots = append(rep.Boots, boot{k, c, r, wall.Seconds(), version, strings.TrimSpace(string(load)), errs})
			}
		}
	}
	rep.Results = aggregate(samples)
	rep.Ratios = pairRatios(rep)
	rep.UptimeAfter = uptime()
	fmt.Fprintln(os.Stderr, "bench/apps: host:", rep.UptimeAfter)

	base := *name
	switch {
	case base != "":
	case wire && p.NIC == "virtio-net-pci":
		base = "wire-" + now.Format("2006-01-02")
	case wire:
		base = "wire-" + p.NIC + "-" + now.Format("2006-01-02")
	default:
		base = "apps-" + strings.Join(kernels, "-") + "-" + now.Format("2006-01-02")
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fail("%v", err)
	}
	md := markdown(rep)
	os.Stdout.Write(md)
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fail("%v", err)
	}
	for ext, data := range map[string][]byte{".json": append(js, '\n'), ".md": md} {
		if err := os.WriteFile(filepath.Join(*outDir, base+ext), data, 0o644); err != nil {
			fail("%v", err)
		}
	}
	fmt.Println("recorded in", filepath.Join(*outDir, base)+".{json,md}")
	writePlot(filepath.Join(*outDir, base)+".png", rep)
	if len(allErrs) > 0 {
		fail("%d errors", len(allErrs))
	}
}
