package main

// The -latency mode: where a queue-depth-1 read's time goes, measured
// from outside the guest. QEMU's own trace events (virtio_blk_handle_read
// when the guest submits a request, virtio_blk_rw_complete when the
// backing file answered, apic_deliver_irq when the completion interrupt
// reaches a local APIC) are timestamped by the host, so each round trip
// splits into the device's time, the interrupt's delivery and the
// guest's turnaround (from the interrupt to its next request: waking the
// waiting thread, returning to user mode, the next system call). The
// host clock is the same for both kernels, so their turnarounds compare
// directly; it also counts the time a vCPU thread waits for a host CPU,
// which is what a loaded host adds.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Phases is one boot's split of the round trips, in microseconds.
type Phases struct {
	Kernel     string  `json:"kernel"`
	CPUs       int     `json:"cpus"`
	N          int     `json:"n"`
	DeviceP50  float64 `json:"device_p50_us"`
	DeliverP50 float64 `json:"deliver_p50_us"`
	TurnP50    float64 `json:"turnaround_p50_us"`
	TurnP90    float64 `json:"turnaround_p90_us"`
	TurnMean   float64 `json:"turnaround_mean_us"`
}

var traceLine = regexp.MustCompile(`^\d+@(\d+)\.(\d+):(\w+)`)

// phases parses a QEMU trace log; the first skip round trips (the
// program starting) are left out.
func phases(log string, skip int) (dev, deliver, turn []float64, err error) {
	f, err := os.Open(log)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	var submit, complete, irq float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		sec, _ := strconv.ParseFloat(m[1], 64)
		usec, _ := strconv.ParseFloat(m[2], 64)
		t := sec*1e6 + usec
		switch m[3] {
		case "virtio_blk_handle_read":
			if irq != 0 {
				turn = append(turn, t-irq)
			}
			submit, complete, irq = t, 0, 0
		case "virtio_blk_rw_complete":
			if submit != 0 {
				dev = append(dev, t-submit)
				complete = t
			}
		case "apic_deliver_irq":
			if complete != 0 && irq == 0 {
				deliver = append(deliver, t-complete)
				irq = t
			}
		}
	}
	trim := func(v []float64) []float64 {
		if len(v) > skip {
			return v[skip:]
		}
		return nil
	}
	return trim(dev), trim(deliver), trim(turn), sc.Err()
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var t float64
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// latencyRun boots kernel with a traced virtio-blk disk and reads ops
// 4 KiB blocks one at a time with O_DIRECT.
func latencyRun(kernel string, cpus, ops int) (Phases, error) {
	dir, err := os.MkdirTemp("", "blklat")
	if err != nil {
		return Phases{}, err
	}
	defer os.RemoveAll(dir)
	img, log := filepath.Join(dir, "disk.img"), filepath.Join(dir, "trace.log")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		return Phases{}, err
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		return Phases{}, err
	}
	cmd := fmt.Sprintf(guest, "/dev/vda", 0, 0)
	cmd = cmd[:strings.LastIndex(cmd, "\n")+1] + fmt.Sprintf("dd if=/dev/vda of=/dev/null bs=4096 count=%d iflag=direct", ops)
	c := exec.Command("tools/run-cmd.sh", "-", cmd)
	c.Env = append(os.Environ(), "CPUS="+strconv.Itoa(cpus), "TIMEOUT=420", "DISK="+img,
		"QEMU_EXTRA=-msg timestamp=on -trace virtio_blk_handle_read -trace virtio_blk_rw_complete -trace apic_deliver_irq -D "+log)
	if kernel == "linux" {
		c.Env = append(c.Env, "LINUX=1")
	}
	if out, err := c.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		return Phases{}, err
	}
	dev, del, turn, err := phases(log, 50)
	if err != nil {
		return Phases{}, err
	}
	if len(turn) < ops/2 {
		return Phases{}, fmt.Errorf("%d round trips in the trace of %d reads", len(turn), ops)
	}
	return Phases{Kernel: kernel, CPUs: cpus, N: len(turn), DeviceP50: quantile(dev, 0.5),
		DeliverP50: quantile(del, 0.5), TurnP50: quantile(turn, 0.5), TurnP90: quantile(turn, 0.9),
		TurnMean: mean(turn)}, nil
}

// latency runs the latency mode: each kernel at each CPU count, rounds
// times, interleaved, and records the table.
func latency(cpus []int, ops, rounds int, out string) error {
	var all []Phases
	for r := 0; r < rounds; r++ {
		for _, n := range cpus {
			for _, k := range []string{"shortbread", "linux"} {
				fmt.Fprintf(os.Stderr, "blkbench: latency, %s, %d CPU(s), round %d\n", k, n, r+1)
				p, err := latencyRun(k, n, ops)
				if err != nil {
					return fmt.Errorf("%s with %d CPUs: %v", k, n, err)
				}
				all = append(all, p)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Where a QD1 virtio-blk read's time goes (%s, commit %s)\n\n", time.Now().UTC().Format("2006-01-02"), gitCommit())
	fmt.Fprintf(&b, "QEMU: %s, virtio-blk on a 64 MiB raw file; `dd bs=4096 count=%d iflag=direct` in the guest; host-clock timestamps of QEMU's trace events; first 50 round trips left out. Device: submission to completion in QEMU. Delivery: completion to the interrupt at the local APIC. Turnaround: interrupt to the guest's next submission. Host load average at the start: %s.\n\n", qemuFlags, ops, loadavg())
	b.WriteString("| kernel | CPUs | round trips | device p50 µs | delivery p50 µs | turnaround p50 µs | p90 µs | mean µs |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range all {
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", p.Kernel, p.CPUs, p.N, p.DeviceP50, p.DeliverP50, p.TurnP50, p.TurnP90, p.TurnMean)
	}
	fmt.Print(b.String())
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(out, "blklat-"+time.Now().UTC().Format("2006-01-02"))
	return os.WriteFile(base+".md", []byte(b.String()), 0o644)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
