package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The wire mode (-mode wire): the servers run in one guest and the
// clients in another, two QEMUs joined by QEMU's socket netdev
// (tools/wirepair.sh, shared with tools/wiretest.sh). The client guest is
// always Debian's Linux on virtio-net, and the server guest is the kernel
// under test on the card -nic, so the only difference between two runs is
// the server's kernel. mailbench has no network side (its clients enqueue
// by fork and exec on the server's machine), so the wire mode runs redis,
// nginx and a bulk transfer each way.

// wireServer is the server guest's address on the wire
// (tools/wirepair.sh).
const wireServer = "10.0.3.2"

// wireClient is the client guest's address, where the bulk workload's
// receive direction fetches from.
const wireClient = "10.0.3.1"

// wireRedisTests are the redis-benchmark tests of the wire mode.
const wireRedisTests = "set,get"

// wireServerCommand is guest A's command: name its kernel, then serve
// until the client pushes onto the hand-over list (tools/wire-guest.sh).
const wireServerCommand = `echo "@@info kernel $(uname -r)"; . /etc/wire-guest.sh; serve server`

// wireClientScript is the client guest's script: the same sections and
// markers as guestScript's, against the peer, every nginx body checked
// (apps/wrk-verify.lua; wrk's limit per request is 30 s, not 2 s: on a
// loaded host a 64 KiB reply over the wire has taken more than 2 s under
// both kernels, and wrk counts that as an error), and the hand-over at the end whatever happened,
// so the server's guest always ends.
func wireClientScript(p params, workloads []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `. /etc/wire-guest.sh
peer=%s
echo "@@info cpus $(nproc)"
section() {
  n=$1; shift; c0=$(head -n 1 /proc/stat 2>/dev/null)
  echo "@@begin $n"; "$@" 2>&1; s=$?
  c1=$(head -n 1 /proc/stat 2>/dev/null); echo "@@end $n $s"; echo "@@cpu $n $c0 / $c1"
}
if wait_for redis-cli -h $peer ping && wait_for wget -q -O /dev/null http://$peer:80/index.html; then
`, wireServer)
	for _, w := range workloads {
		switch w {
		case "redis":
			n, c, pl := p.RedisRequests, p.RedisClients, p.RedisPipeline
			fmt.Fprintf(&b, `section redis/tcp/P1 redis-benchmark -h $peer -p 6379 -n %[1]d -c %[2]d -t %[5]s --csv
section redis/tcp/P%[3]d redis-benchmark -h $peer -p 6379 -n %[4]d -c %[2]d -P %[3]d -t %[5]s --csv
`, n, c, pl, n*pl/4, wireRedisTests)
		case "bulk":
			// send: the server's kernel sends, its nginx with sendfile;
			// recv: it receives, fetching from nginx on this guest.
			fmt.Fprintf(&b, `bulk_send() {
  r=$(redis-cli -h $peer RPUSH handover "mkfile %[1]d" >/dev/null && redis-cli -h $peer BLPOP answer 0 | tail -n 1)
  case "$r" in "ready "*) ;; *) echo "no bulk file on the server: $r"; return 1;; esac
  echo "BULK want %[1]d ${r#ready }"
  echo "BULK $(fetch http://$peer:80/bulk.bin %[2]d)"
}
bulk_recv() {
  s=$(bulkfile %[1]d) || return 1
  nginx -c /etc/nginx/nginx.conf 2>/tmp/nginx.err &
  wait_for wget -q -O /dev/null http://127.0.0.1:80/index.html || { cat /tmp/nginx.err; return 1; }
  echo "BULK want %[1]d $s"
  redis-cli -h $peer RPUSH handover "fetch http://%[3]s:80/bulk.bin %[2]d" >/dev/null
  echo "BULK $(redis-cli -h $peer BLPOP answer 0 | tail -n 1)"
}
section bulk/send bulk_send
section bulk/recv bulk_recv
`, p.BulkMiB, p.BulkSeconds, wireClient)
		case "nginx":
			for _, f := range []string{"1k", "64k"} {
				fmt.Fprintf(&b, "section nginx/%[4]s wrk -t%[1]d -c%[2]d -d%[3]ds --timeout 30s --latency -s /etc/wrk-verify.lua http://$peer:80/%[4]s.bin -- /usr/share/nginx/html/%[4]s.bin\n",
					p.WrkThreads, p.WrkConns, p.WrkSeconds, f)
			}
		}
	}
	b.WriteString(`else echo "@@begin wire/peer"; echo "the server's redis or nginx does not answer"; echo "@@end wire/peer 1"; fi
wait_for redis-cli -h $peer RPUSH handover clients-done
`)
	return b.String()
}

// runWire runs one pair of guests: kernel serves, Linux is the client.
// It returns the client's console, with the server's "@@info kernel" line
// added (the server's version), and the server's console for errors.
func runWire(kernel, nic string, cpus int, stage string, p params, timeout int) (client, server string, wall time.Duration, err error) {
	// WIRE_LOGS=DIR keeps the last pair's consoles as DIR/a.log (the
	// server) and DIR/b.log, as tools/wiretest.sh does: with
	// SB_KARGS=prof the server's holds the profile (bench/hlltax -log).
	logs := os.Getenv("WIRE_LOGS")
	if logs == "" {
		if logs, err = os.MkdirTemp("", "sb-bench-wire."); err != nil {
			return "", "", 0, err
		}
		defer os.RemoveAll(logs)
	} else if err = os.MkdirAll(logs, 0o755); err != nil {
		return "", "", 0, err
	}
	cmd := exec.Command("tools/wirepair.sh", stage, logs, wireServerCommand, "sh /etc/bench-apps.sh")
	cmd.Env = append(os.Environ(), "SERVER="+kernel, "NIC="+nic, "CPUS="+strconv.Itoa(cpus), "MEM="+p.Mem, "TIMEOUT="+strconv.Itoa(timeout))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start)
	a, _ := os.ReadFile(filepath.Join(logs, "a.log"))
	b, _ := os.ReadFile(filepath.Join(logs, "b.log"))
	server = strings.ReplaceAll(string(a), "\r", "")
	for _, line := range strings.Split(server, "\n") {
		if strings.HasPrefix(line, "@@info kernel ") {
			client = line + "\n"
		}
	}
	client += string(b)
	if err != nil {
		err = fmt.Errorf("%v\n%s", err, lastLines(out.String(), 20))
	}
	return client, server, wall, err
}

// pairedRatio gives, per workload, case, metric and CPU count, the
// Shortbread/Linux ratio of each repetition's two runs (run next to each
// other, so they saw similar host load), then their median and range.
// A repetition in which either kernel's run failed is left out.
type pairedRatio struct {
	Workload string    `json:"workload"`
	Case     string    `json:"case"`
	Metric   string    `json:"metric"`
	CPUs     int       `json:"cpus"`
	Ratios   []float64 `json:"ratios"`
	Median   float64   `json:"median"`
	Min      float64   `json:"min"`
	Max      float64   `json:"max"`
}

func pairRatios(rep report) []pairedRatio {
	type key struct {
		w, c, m string
		n       int
	}
	var order []key
	// vals[key][kernel][repetition]
	vals := map[key]map[string]map[int]float64{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Metric, "guest ") || len(r.Reps) != len(r.Values) {
			continue
		}
		k := key{r.Workload, r.Case, r.Metric, r.CPUs}
		if vals[k] == nil {
			vals[k] = map[string]map[int]float64{}
			order = append(order, k)
		}
		vals[k][r.Kernel] = map[int]float64{}
		for i, v := range r.Values {
			vals[k][r.Kernel][r.Reps[i]] = v
		}
	}
	var out []pairedRatio
	for _, k := range order {
		sb, lin := vals[k]["shortbread"], vals[k]["linux"]
		pr := pairedRatio{Workload: k.w, Case: k.c, Metric: k.m, CPUs: k.n}
		for r := 1; r <= rep.Reps; r++ {
			s, ok1 := sb[r]
			l, ok2 := lin[r]
			// A repetition where either run failed pairs nothing.
			if ok1 && ok2 && l > 0 {
				pr.Ratios = append(pr.Ratios, s/l)
			}
		}
		if len(pr.Ratios) == 0 {
			continue
		}
		s := append([]float64(nil), pr.Ratios...)
		sort.Float64s(s)
		pr.Median = s[len(s)/2]
		if len(s)%2 == 0 {
			pr.Median = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		pr.Min, pr.Max = s[0], s[len(s)-1]
		out = append(out, pr)
	}
	return out
}

// ratioTable renders pairRatios as Markdown: one row per case and
// metric, one column per CPU count.
func ratioTable(rs []pairedRatio) string {
	var cpus []int
	type row struct{ w, c, m string }
	var rows []row
	cell := map[row]map[int]pairedRatio{}
	for _, r := range rs {
		if !slices.Contains(cpus, r.CPUs) {
			cpus = append(cpus, r.CPUs)
		}
		rw := row{r.Workload, r.Case, r.Metric}
		if cell[rw] == nil {
			cell[rw] = map[int]pairedRatio{}
			rows = append(rows, rw)
		}
		cell[rw][r.CPUs] = r
	}
	sort.Ints(cpus)
	var b strings.Builder
	b.WriteString("| workload | case | metric |")
	for _, c := range cpus {
		fmt.Fprintf(&b, " %d CPU: median (min–max) |", c)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---:|", len(cpus)) + "\n")
	for _, rw := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |", rw.w, rw.c, rw.m)
		for _, c := range cpus {
			r, ok := cell[rw][c]
			if !ok {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(&b, " **%.2f** (%.2f–%.2f) |", r.Median, r.Min, r.Max)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// uptime is the host's uptime(1) line: its load averages say how busy
// the host was (other sessions' QEMUs slow TCG).
func uptime() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}
