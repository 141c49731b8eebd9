package main

import (
	"strings"
	"testing"
)

const goodRedis = `@@begin redis/tcp/P1
"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","8090.62","0.811","0.288","0.719","1.415","2.535","7.047"
"GET","7727.98","0.807","0.328","0.727","1.423","2.119","5.039"
"LPUSH (needed to benchmark LPOP)","8000.00","0.807","0.328","0.700","1.423","2.000","5.039"
@@end redis/tcp/P1 0
`

const goodWrk = "@@begin nginx/1k\r\n" + `Running 2s test @ http://127.0.0.1:80/1k.bin
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     4.46ms    1.00ms   9.00ms   80.00%
    Req/Sec     1.70k   100.00     1.80k    70.00%
  Latency Distribution
     50%  635.00us
     75%    4.70ms
     90%    5.58ms
     99%    1.20s
  3400 requests in 2.00s, 4.10MB read
Requests/sec:   1680.50
Transfer/sec:      2.05MB
@@end nginx/1k 0
`

const goodMail = `@@begin mail/tmpfs
mailbench: 2 clients (fork+exec), 1024-byte messages: 386 accepted in 3.01 s, 386 delivered and checked after 3.01 s: 128.1 messages/s
MAILBENCH clients=2 size=1024 mode=fork accepted=386 delivered=386 bad=0 client_failures=0 enqueue_s=3.009 elapsed_s=3.014 msgs_per_s=128.1
@@end mail/tmpfs 0
@@cpu mail/tmpfs cpu  100 0 200 300 0 0 0 0 0 0 / cpu  120 10 250 310 0 5 5 0 0 0
`

func find(t *testing.T, s []sample, w, c, m string) float64 {
	t.Helper()
	for _, x := range s {
		if x.Workload == w && x.Case == c && x.Metric == m {
			return x.Value
		}
	}
	t.Fatalf("no %s %q %q in %v", w, c, m, s)
	return 0
}

func TestParseGood(t *testing.T) {
	out := "@@info kernel 6.1.0-56-amd64\n@@info cpus 2\n" + goodRedis + goodWrk + goodMail
	s, version, errs := parse(out, "linux", 2, 3)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if version != "6.1.0-56-amd64" {
		t.Errorf("version %q", version)
	}
	checks := []struct {
		w, c, m string
		want    float64
	}{
		{"redis", "tcp P1 SET", "requests/s", 8090.62},
		{"redis", "tcp P1 GET", "p99 ms", 2.119},
		{"redis", "tcp P1 LPUSH", "p50 ms", 0.7},
		{"nginx", "1k", "requests/s", 1680.5},
		{"nginx", "1k", "p50 ms", 0.635},
		{"nginx", "1k", "p99 ms", 1200},
		{"nginx", "1k", "MiB/s", 2.05},
		{"mail", "tmpfs", "messages/s", 128.1},
		{"mail", "tmpfs", "guest user %", 30},
		{"mail", "tmpfs", "guest kernel %", 60},
		{"mail", "tmpfs", "guest idle %", 10},
	}
	for _, c := range checks {
		if got := find(t, s, c.w, c.c, c.m); got != c.want {
			t.Errorf("%s %s %s = %v, want %v", c.w, c.c, c.m, got, c.want)
		}
	}
}

func TestParseFailures(t *testing.T) {
	cases := map[string]struct{ out, want string }{
		"wrong CPU count": {"@@info cpus 1\n" + goodMail, "guest sees 1 CPUs"},
		"client failed":   {strings.Replace(goodMail, "@@end mail/tmpfs 0", "@@end mail/tmpfs 1", 1), "mail/tmpfs exited 1"},
		"lost mail":       {strings.Replace(goodMail, "delivered=386", "delivered=385", 1), "not every message"},
		"no MAILBENCH":    {"@@begin mail/tmpfs\nmailbench: oops\n@@end mail/tmpfs 0\n", "no MAILBENCH line"},
		"redis short":     {strings.Replace(goodRedis, `"GET"`, `"xGET"`, 1), "2 results, want 3"},
		"wrk errors":      {strings.Replace(goodWrk, "Requests/sec", "  Non-2xx or 3xx responses: 5\nRequests/sec", 1), "wrk failed"},
		"wrk no requests": {strings.Replace(goodWrk, "3400 requests", "0 requests", 1), "wrk failed"},
	}
	for name, c := range cases {
		_, _, errs := parse(c.out, "linux", 2, 3)
		if !strings.Contains(strings.Join(errs, "\n"), c.want) {
			t.Errorf("%s: errors %q do not mention %q", name, errs, c.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	var s []sample
	for _, v := range []float64{110, 90, 100} {
		s = append(s, sample{"linux", 1, "mail", "tmpfs", "messages/s", v, 1})
	}
	s = append(s, sample{"linux", 2, "mail", "tmpfs", "messages/s", 7, 1})
	r := aggregate(s)
	if len(r) != 2 {
		t.Fatalf("%d results, want 2", len(r))
	}
	if r[0].Median != 100 || r[0].Min != 90 || r[0].Max != 110 || r[0].SpreadPct != 20 {
		t.Errorf("got %+v", r[0])
	}
	if r[1].CPUs != 2 || r[1].Median != 7 {
		t.Errorf("got %+v", r[1])
	}
}

func TestGuestScriptSections(t *testing.T) {
	p := params{RedisRequests: 100, RedisClients: 2, RedisPipeline: 16, WrkThreads: 1, WrkConns: 2, WrkSeconds: 1,
		MailClients: 1, MailSeconds: 1, MailSize: 100, MailSpawn: "fork", MailDisk: true, MailDevices: []string{"virtio", "sata", "nvme"}}
	sc := guestScript(p, []string{"redis", "nginx", "mail"})
	for _, want := range []string{"mail/ext4-sata", "mount -t ext4 /dev/nvme0n1 /mnt/disk", "mount -t ext4 /dev/sda "} {
		if !strings.Contains(sc, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if a := diskArgs(p, "/d"); !strings.Contains(a, "file=/d/mail-virtio.img,if=virtio") || !strings.Contains(a, "-device nvme,drive=mailnvme") || !strings.Contains(a, "bus=ide.0") {
		t.Errorf("disk arguments %q", a)
	}
	for _, sec := range expectedSections([]string{"redis", "nginx", "mail"}, p) {
		if !strings.Contains(sc, "section "+sec+" ") {
			t.Errorf("script has no section %s", sec)
		}
	}
}

func TestRatios(t *testing.T) {
	rep := report{Date: "2026-11-25T00:00:00Z", Commit: "abc", Results: []result{
		{Kernel: "linux", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "requests/s", Median: 1000},
		{Kernel: "shortbread", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "requests/s", Median: 250},
		{Kernel: "shortbread", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "p50 ms", Median: 3},
		{Kernel: "linux", CPUs: 2, Workload: "mail", Case: "tmpfs", Metric: "messages/s", Median: 100},
		{Kernel: "shortbread", CPUs: 2, Workload: "mail", Case: "tmpfs", Metric: "messages/s", Median: 55},
		{Kernel: "shortbread", CPUs: 2, Workload: "nginx", Case: "1k", Metric: "requests/s", Median: 10}, // no Linux
	}}
	rs := ratios(rep)
	if len(rs) != 2 || rs[0].label != "mail tmpfs" || rs[0].value != 0.55 || rs[1].value != 0.25 || rs[1].cpus != 1 {
		t.Fatalf("ratios %+v", rs)
	}
	if _, err := ratioPlot(rep); err != nil {
		t.Error(err)
	}
	if _, err := ratioPlot(report{Date: "2026-11-25"}); err == nil {
		t.Error("a plot with nothing to compare")
	}
}

func TestWireClientScript(t *testing.T) {
	p := params{RedisRequests: 100, RedisClients: 4, RedisPipeline: 16, WrkThreads: 1, WrkConns: 2, WrkSeconds: 1}
	s := wireClientScript(p, []string{"redis", "nginx"})
	for _, want := range []string{
		"section redis/tcp/P1 redis-benchmark -h $peer",
		"section redis/tcp/P16 redis-benchmark -h $peer -p 6379 -n 400 -c 4 -P 16 -t set,get",
		"-s /etc/wrk-verify.lua http://$peer:80/64k.bin -- /usr/share/nginx/html/64k.bin",
		"RPUSH handover clients-done",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("wire client script lacks %q:\n%s", want, s)
		}
	}
	// The hand-over comes last, after every client.
	if strings.LastIndex(s, "section ") > strings.Index(s, "RPUSH") {
		t.Errorf("hand-over before a client:\n%s", s)
	}
}

func TestWrkVerify(t *testing.T) {
	good := strings.Replace(goodWrk, "Requests/sec:", "wrk-verify good=3400 bad=0\r\nRequests/sec:", 1)
	if _, _, errs := parse(good, "linux", 2, 3); len(errs) != 0 {
		t.Errorf("good bodies: %v", errs)
	}
	for _, v := range []string{"good=3399 bad=1", "good=0 bad=0"} {
		out := strings.Replace(goodWrk, "Requests/sec:", "wrk-verify "+v+"\r\nRequests/sec:", 1)
		if _, _, errs := parse(out, "linux", 2, 3); len(errs) != 1 {
			t.Errorf("%s: errors %v, want one", v, errs)
		}
	}
}

func TestPairRatios(t *testing.T) {
	rep := report{Reps: 4, Results: []result{
		// repetition 3 failed on Shortbread, 2 on Linux: 1 and 4 pair
		{Kernel: "shortbread", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "requests/s", Values: []float64{80, 90, 100}, Reps: []int{1, 2, 4}},
		{Kernel: "linux", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "requests/s", Values: []float64{100, 100, 50}, Reps: []int{1, 3, 4}},
		{Kernel: "linux", CPUs: 1, Workload: "redis", Case: "tcp P1 GET", Metric: "guest idle %", Values: []float64{1, 1, 1}, Reps: []int{1, 2, 3}},
		{Kernel: "shortbread", CPUs: 2, Workload: "nginx", Case: "1k", Metric: "requests/s", Values: []float64{1}, Reps: []int{1}},
	}}
	rs := pairRatios(rep)
	if len(rs) != 1 {
		t.Fatalf("ratios %+v, want one (no CPU split, no unpaired case)", rs)
	}
	r := rs[0]
	if len(r.Ratios) != 2 || r.Median != 1.4 || r.Min != 0.8 || r.Max != 2 {
		t.Errorf("ratio %+v, want 0.8 and 2 (repetitions 1 and 4), median 1.4", r)
	}
	if tab := ratioTable(rs); !strings.Contains(tab, "**1.40** (0.80–2.00)") {
		t.Errorf("table:\n%s", tab)
	}
}

func TestRatiosPaired(t *testing.T) {
	rep := report{Ratios: []pairedRatio{
		{Workload: "redis", Case: "tcp P1 GET", Metric: "requests/s", CPUs: 2, Median: 0.9},
		{Workload: "redis", Case: "tcp P1 GET", Metric: "p50 ms", CPUs: 2, Median: 1.2},
	}}
	if rs := ratios(rep); len(rs) != 1 || rs[0].value != 0.9 {
		t.Errorf("ratios %+v, want the paired throughput ratio only", rs)
	}
}

func TestBulk(t *testing.T) {
	p := params{BulkMiB: 32, BulkSeconds: 5}
	s := wireClientScript(p, []string{"bulk"})
	for _, want := range []string{"section bulk/send bulk_send", "section bulk/recv bulk_recv", `"mkfile 32"`, `"fetch http://10.0.3.1:80/bulk.bin 5"`} {
		if !strings.Contains(s, want) {
			t.Errorf("wire client script lacks %q:\n%s", want, s)
		}
	}
	sum := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	out := func(send, recv string) string {
		return "@@info cpus 1\n@@begin bulk/send\n" + send + "@@end bulk/send 0\n@@begin bulk/recv\n" + recv + "@@end bulk/recv 0\n"
	}
	good := "BULK want 32 " + sum + "\nBULK fetched 100663296 4.00 " + sum + " 3\n"
	samples, _, errs := parse(out(good, good), "shortbread", 1, 2)
	if len(errs) != 0 || len(samples) != 2 {
		t.Fatalf("good bulk runs: %v %v", samples, errs)
	}
	if samples[0].Case != "send" || samples[1].Case != "recv" || samples[0].Value != 24 {
		t.Errorf("samples %+v, want send and recv at 24 MiB/s", samples)
	}
	for name, bad := range map[string]string{
		"changed":   "BULK want 32 " + sum + "\nBULK fetched 100663296 4.00 " + other + " 3\n",
		"short":     "BULK want 32 " + sum + "\nBULK fetched 100663295 4.00 " + sum + " 3\n",
		"no time":   "BULK want 32 " + sum + "\nBULK fetched 100663296 0 " + sum + " 3\n",
		"no answer": "BULK want 32 " + sum + "\nBULK \n",
	} {
		if samples, _, errs := parse(out(good, bad), "linux", 1, 2); len(errs) != 1 || len(samples) != 1 {
			t.Errorf("%s: %d samples, errors %v; want the bad run refused", name, len(samples), errs)
		}
	}
}
