// Command leaksoak runs the mail benchmark and redis (with AOF rewrites)
// on tmpfs inside one Shortbread guest for a set time, round after
// round, and samples after each round the guest's free memory (as it is,
// and after the kernel's heap is handed back with drop_caches), the
// kernel's Go heap and its goroutine count. It writes the samples, a
// verdict on growth and a PNG of memory against time to bench/results
// (make leak-soak; not part of make test).
//
// A round delivers mail to a fresh spool and removes it, and runs
// redis-benchmark against a server that appends to its AOF, rewrites it
// (BGREWRITEAOF) and is flushed: nothing a round makes should outlive
// it, so free memory should come back to the same level each round.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Sample is one round's figures, in KiB (goroutines: a count).
type Sample struct {
	Round      int     `json:"round"`
	Minutes    float64 `json:"minutes"`
	MemFree    int64   `json:"mem_free_kib"`
	MemFreeGC  int64   `json:"mem_free_after_drop_kib"`
	HeapInuse  int64   `json:"go_heap_inuse_kib"`
	Goroutines int64   `json:"goroutines"`
	// AnonPages is the programs' private memory: redis's heap, which
	// lives through every round and may keep what it once used.
	AnonPages int64 `json:"anon_pages_kib,omitempty"`
	// Runtime is the Go runtime's own records (GoMetadata + GoOther in
	// /proc/meminfo), which it keeps at their high-water mark.
	Runtime int64 `json:"go_runtime_records_kib,omitempty"`
	// Fields is every /proc/meminfo figure (KiB) and every count in
	// /proc/shortbread/kmem (bytes, frames or objects, as its names
	// say), read after drop_caches.
	Fields map[string]int64 `json:"fields,omitempty"`
}

// Report is what is recorded.
type Report struct {
	Date    string   `json:"date"`
	Commit  string   `json:"commit"`
	Minutes int      `json:"minutes"`
	CPUs    int      `json:"cpus"`
	Mem     string   `json:"mem"`
	Samples []Sample `json:"samples"`
}

// guestScript is the soak inside the guest: rounds until the time is up.
const guestScript = `export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
mkdir -p /tmp/redis
redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly yes --dir /tmp/redis --logfile /tmp/redis.log &
i=0
until redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 100 ] || { echo "leaksoak: redis does not answer"; exit 1; }; usleep 200000; done
start=$(cut -d. -f1 /proc/uptime)
end=$((start + SECONDS_TOTAL))
round=0
sample() {
	now=$(cut -d' ' -f1 /proc/uptime)
	free=$(awk '/^MemFree:/ {print $2}' /proc/meminfo)
	heap=$(awk '/^GoHeapInuse:/ {print $2}' /proc/meminfo)
	g=$(grep -c '^goroutine ' /proc/shortbread/goroutines)
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
	freegc=$(awk '/^MemFree:/ {print $2}' /proc/meminfo)
	anon=$(awk '/^AnonPages:/ {print $2}' /proc/meminfo)
	rt=$(awk '/^GoMetadata:|^GoOther:/ {s += $2} END {print s + 0}' /proc/meminfo)
	echo "leaksoak-sample $round $now $free $freegc $heap $g $anon $rt"
	# every figure after drop_caches, to put a slow loss in one place
	awk -v r=$round '{sub(":", "", $1); print "leaksoak-field", r, $1, $2}' /proc/meminfo
	awk -v r=$round 'NF == 2 && $2 ~ /^-?[0-9]+$/ {print "leaksoak-field", r, $1, $2}' /proc/shortbread/kmem
}
sample
while [ $(cut -d. -f1 /proc/uptime) -lt $end ]; do
	round=$((round+1))
	mkdir -p /tmp/mail
	mailbench -c 2 -n 200 -s 4000 -d /tmp/mail >/tmp/mail.out 2>&1 || { cat /tmp/mail.out; echo "leaksoak: mailbench failed"; exit 1; }
	rm -rf /tmp/mail
	redis-benchmark -h 127.0.0.1 -n 20000 -c 4 -t set,lpush -q >/tmp/rb.out 2>&1 || { cat /tmp/rb.out; echo "leaksoak: redis-benchmark failed"; exit 1; }
	redis-cli -h 127.0.0.1 bgrewriteaof >/dev/null
	while redis-cli -h 127.0.0.1 info persistence | grep -q 'aof_rewrite_in_progress:1'; do usleep 100000; done
	redis-cli -h 127.0.0.1 flushall >/dev/null
	sample
done
redis-cli -h 127.0.0.1 shutdown nosave >/dev/null 2>&1
echo "leaksoak: done"
`

func main() {
	minutes := flag.Int("minutes", 30, "how long the soak runs")
	cpus := flag.Int("cpus", 2, "guest CPUs")
	mem := flag.String("mem", "512M", "guest memory")
	apps := flag.String("apps", "build/apps", "the built applications (make apps)")
	out := flag.String("out", "bench/results", "where to write the results")
	flag.Parse()

	stage, err := os.MkdirTemp("", "leaksoak")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(stage)
	if b, err := exec.Command("apps/stage.sh", *apps, stage).CombinedOutput(); err != nil {
		fail("apps/stage.sh: %v\n%s", err, b)
	}
	script := strings.ReplaceAll(guestScript, "SECONDS_TOTAL", strconv.Itoa(*minutes*60))
	if err := os.WriteFile(filepath.Join(stage, "etc", "leaksoak.sh"), []byte(script), 0o755); err != nil {
		fail("%v", err)
	}
	c := exec.Command("tools/run-cmd.sh", stage, "sh /etc/leaksoak.sh")
	c.Env = append(os.Environ(), "CPUS="+strconv.Itoa(*cpus), "MEM="+*mem, "TIMEOUT="+strconv.Itoa(*minutes*60+600))
	var stdout bytes.Buffer
	c.Stdout = &stdout
	c.Stderr = os.Stderr
	fmt.Fprintf(os.Stderr, "leaksoak: %d minutes, %d CPUs, %s\n", *minutes, *cpus, *mem)
	runErr := c.Run()
	samples := parse(stdout.Bytes())
	if runErr != nil || len(samples) < 2 {
		os.Stderr.Write(tail(stdout.Bytes(), 40))
		fail("the guest failed (%v) or gave %d samples", runErr, len(samples))
	}
	rep := Report{Date: time.Now().UTC().Format("2006-01-02"), Commit: commit(), Minutes: *minutes, CPUs: *cpus, Mem: *mem, Samples: samples}
	md := render(rep)
	fmt.Print(md)
	if err := save(*out, rep, md); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "leaksoak: "+format+"\n", args...)
	os.Exit(1)
}

func tail(b []byte, lines int) []byte {
	ls := bytes.Split(b, []byte("\n"))
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return bytes.Join(ls, []byte("\n"))
}

// parse reads the "leaksoak-sample ROUND UPTIME FREE FREEGC HEAP GOROUTINES
// [ANON [RUNTIME]]" lines; the first sample's uptime is time zero.
func parse(b []byte) []Sample {
	var out []Sample
	var t0 float64
	fields := map[int]map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(strings.TrimSpace(strings.ReplaceAll(sc.Text(), "\r", "")))
		if len(f) == 4 && f[0] == "leaksoak-field" {
			r, err1 := strconv.Atoi(f[1])
			v, err2 := strconv.ParseInt(f[3], 10, 64)
			if err1 == nil && err2 == nil {
				if fields[r] == nil {
					fields[r] = map[string]int64{}
				}
				fields[r][f[2]] = v
			}
			continue
		}
		if len(f) < 7 || len(f) > 9 || f[0] != "leaksoak-sample" {
			continue
		}
		var v [8]float64
		ok := true
		for i := range len(f) - 1 {
			x, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				ok = false
			}
			v[i] = x
		}
		if !ok {
			continue
		}
		if len(out) == 0 {
			t0 = v[1]
		}
		out = append(out, Sample{Round: int(v[0]), Minutes: (v[1] - t0) / 60,
			MemFree: int64(v[2]), MemFreeGC: int64(v[3]), HeapInuse: int64(v[4]), Goroutines: int64(v[5]),
			AnonPages: int64(v[6]), Runtime: int64(v[7])})
	}
	// A round's fields follow its sample line.
	for i := range out {
		out[i].Fields = fields[out[i].Round]
	}
	return out
}

// growth is the least-squares slope of y against minutes, per minute.
func growth(s []Sample, y func(Sample) float64) float64 {
	n := float64(len(s))
	var sx, sy, sxx, sxy float64
	for _, p := range s {
		sx += p.Minutes
		sy += y(p)
		sxx += p.Minutes * p.Minutes
		sxy += p.Minutes * y(p)
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func render(r Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Leak soak: mail and redis on tmpfs, %s\n\n", r.Date)
	fmt.Fprintf(&b, "Commit %s; Shortbread, %d CPUs, %s of guest memory, %d minutes, %d rounds (`make leak-soak`). ",
		r.Commit, r.CPUs, r.Mem, r.Minutes, len(r.Samples)-1)
	b.WriteString("Each round delivers 400 messages with mailbench to a fresh spool and removes it, runs 20,000 SET and LPUSH against redis with appendonly, rewrites the AOF and flushes the data set. After each round: MemFree as it is, MemFree after `drop_caches` (which hands the kernel heap's free spans back), GoHeapInuse, the kernel's goroutines and AnonPages (the programs' private memory, mostly redis's heap, which lives through every round); the kernel's own figure is MemFree after drop_caches plus AnonPages. GoMetadata and GoOther are the Go runtime's records (spans, per-P caches, arena metadata, profiling buckets), which it never gives back: a drift that they account for is the runtime reaching a new high-water mark, not a leak in the kernel.\n\n")
	// Growth from round 1 on: round 0 is before the programs first ran.
	s := r.Samples
	if len(s) > 2 {
		s = s[1:]
	}
	first, last := s[0], s[len(s)-1]
	fmt.Fprintf(&b, "| figure | round %d | round %d | change | trend per minute |\n|---|---|---|---|---|\n", first.Round, last.Round)
	row := func(name string, y func(Sample) float64, unit string) {
		fmt.Fprintf(&b, "| %s | %.0f %s | %.0f %s | %+.0f %s | %+.1f %s/min |\n", name, y(first), unit, y(last), unit, y(last)-y(first), unit, growth(s, y), unit)
	}
	row("MemFree", func(p Sample) float64 { return float64(p.MemFree) }, "KiB")
	row("MemFree after drop_caches", func(p Sample) float64 { return float64(p.MemFreeGC) }, "KiB")
	row("GoHeapInuse", func(p Sample) float64 { return float64(p.HeapInuse) }, "KiB")
	row("goroutines", func(p Sample) float64 { return float64(p.Goroutines) }, "")
	if last.AnonPages != 0 {
		row("AnonPages", func(p Sample) float64 { return float64(p.AnonPages) }, "KiB")
		row("MemFree after drop_caches + AnonPages", func(p Sample) float64 { return float64(p.MemFreeGC + p.AnonPages) }, "KiB")
	}
	if last.Runtime != 0 {
		row("GoMetadata + GoOther (runtime records)", func(p Sample) float64 { return float64(p.Runtime) }, "KiB")
		row("MemFree after drop_caches + AnonPages + runtime records", func(p Sample) float64 {
			return float64(p.MemFreeGC + p.AnonPages + p.Runtime)
		}, "KiB")
	}
	fieldTable(&b, s)
	b.WriteString("\n![free memory and kernel heap against time](leaksoak-" + r.Date + ".png)\n\n")
	b.WriteString("| round | minutes | MemFree KiB | after drop_caches KiB | GoHeapInuse KiB | goroutines | AnonPages KiB | runtime records KiB |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Samples {
		fmt.Fprintf(&b, "| %d | %.1f | %d | %d | %d | %d | %d | %d |\n", p.Round, p.Minutes, p.MemFree, p.MemFreeGC, p.HeapInuse, p.Goroutines, p.AnonPages, p.Runtime)
	}
	return b.String()
}

func save(dir string, r Report, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, "leaksoak-"+r.Date)
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", j, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".md", []byte(md), 0o644); err != nil {
		return err
	}
	png, err := chart(r)
	if err != nil {
		return err
	}
	return os.WriteFile(base+".png", png, 0o644)
}

func commit() string {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// fieldTable lists every sampled field that changed from the first to
// the last round, by the size of its trend: where a slow loss lives.
func fieldTable(b *strings.Builder, s []Sample) {
	first, last := s[0], s[len(s)-1]
	if first.Fields == nil || last.Fields == nil {
		return
	}
	type row struct {
		name     string
		from, to int64
		slope    float64
	}
	var rows []row
	for name, to := range last.Fields {
		from, ok := first.Fields[name]
		if !ok || from == to {
			continue
		}
		var with []Sample // a round whose fields were cut off counts for none
		for _, p := range s {
			if _, ok := p.Fields[name]; ok {
				with = append(with, p)
			}
		}
		rows = append(rows, row{name, from, to, growth(with, func(p Sample) float64 { return float64(p.Fields[name]) })})
	}
	sort.Slice(rows, func(i, j int) bool {
		if a, b := math.Abs(rows[i].slope), math.Abs(rows[j].slope); a != b {
			return a > b
		}
		return rows[i].name < rows[j].name
	})
	fmt.Fprintf(b, "\nEvery figure of /proc/meminfo (KiB) and /proc/shortbread/kmem (its own units) that changed, after drop_caches:\n\n| field | round %d | round %d | change | trend per minute |\n|---|---|---|---|---|\n", first.Round, last.Round)
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %d | %d | %+d | %+.1f/min |\n", r.name, r.from, r.to, r.to-r.from, r.slope)
	}
}
