// Command powercut is the power-cut test of ext4 on a running kernel
// (issue 13): it serves the guest's disk over NBD from a model of a disk
// with a volatile write cache (package wcache), boots Shortbread or Linux
// in QEMU on a fresh `mke2fs -t ext4` image with user/tests/h_durable as
// init, which changes files and reports each change once it is durable;
// at a random moment it kills QEMU (the power cut), lands a random part of
// the writes not yet flushed, and boots again on the crashed image: the
// kernel replays the journal at mount, h_durable reports what it finds,
// and every change reported durable must be there (files byte for byte,
// removals done), with no file holding data never written to it. Then
// the host's e2fsck -fn must find the image clean, and debugfs's copy of
// the files must pass the same checks.
//
// usage: go run ./tools/powercut [-cuts N] [-kernels shortbread,linux]
//
//	[-recover same|other|both] [-sizes 600M,200M] [-max-delay 15s]
//	[-modes lose,keep,prefix,writes,sectors] [-atom 512|4096] [-seed S] [-results FILE] [-linux-opts barrier=0]
//	[-workers N] [-workload files|mail]
//
// The kernels named crash in turn; -recover other has the other kernel
// recover each crash (Linux recovers what Shortbread left and the
// reverse), both (the default) alternates rounds of the two (with one
// kernel, both is same). -linux-opts barrier=0 is the negative control:
// Linux told not to flush loses what it reported durable, and the
// harness must say so. -workload mail makes the durable changes mail
// deliveries (h_durable's PC_WORKLOAD=mail), and every message found
// after a cut must be whole. Exit status 0 iff every cut passed. `make test` runs a
// few cuts per kernel; `make powercut CUTS=N` the long run, with a
// results file in bench/results/. Needs build/kernel.elf, build/stub.elf,
// build/user (make kernel user) and build/linux (tools/linux/kernel.sh).
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"shortbread/tools/powercut/wcache"
)

type config struct {
	root, work string
	size       int64
	atom       int64
	modes      []wcache.Mode
	cpus       int
	maxDelay   time.Duration
	stall      time.Duration
	mail       bool // -workload mail
}

// result is one cut's outcome.
type result struct {
	work, check string
	cut         wcache.Cut
	durables    int // files reported durable (at their last size)
	gones       int // removals reported durable
	verified    int // ledger items checked by the guest and by debugfs
	files       int // files the check boot found
	stats       wcache.Stats
	problems    []string
	atFlush     bool   // the cut came as a FLUSH arrived
	stalled     bool   // a boot printed nothing of h_durable's for the stall period
	seed        string // the workload's
	// boot: from QEMU's start to the workload's; ran: from there to the
	// cut; check: the check boot.
	boot, ran, checked time.Duration
}

func main() {
	cuts := flag.Int("cuts", 4, "power cuts to run")
	kernels := flag.String("kernels", "shortbread,linux", "kernels to crash, in turn")
	recoverBy := flag.String("recover", "both", "which kernel recovers a crash: same, other, or both (alternating in rounds)")
	maxDelay := flag.Duration("max-delay", 15*time.Second, "longest time from the workload's start to the cut")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the cut times and of what survives")
	results := flag.String("results", "", "write a results file here")
	cpus := flag.Int("cpus", 2, "guest CPUs")
	modeList := flag.String("modes", "lose,keep,prefix,writes,sectors", "what a cut may land, chosen at random among these (wcache's modes)")
	atom := flag.Int64("atom", wcache.SectorSize, "bytes a cut that keeps part of a write keeps whole (512; 4096: a disk with 4 KiB physical sectors)")
	linuxOpts := flag.String("linux-opts", "", "mount options of Linux's work boots (barrier=0: the negative control, which must fail)")
	workers := flag.Int("workers", 1, "processes changing files at once in the work boot (h_durable's PC_WORKERS, 1 to 8)")
	workload := flag.String("workload", "files", "the work boot's changes: files (create, append, remove) or mail (deliveries as mailbench's: tmp file, fsync, rename into a mailbox, fsync it; h_durable's PC_WORKLOAD)")
	sizeList := flag.String("sizes", "600M", "image sizes in MiB, used in turn (Debian's mke2fs gives 1 KiB blocks below 512M, 4 KiB from there)")
	flag.Parse()

	root, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	cfg := config{root: root, work: filepath.Join(root, "build/powercut"), cpus: *cpus, atom: *atom,
		maxDelay: *maxDelay, stall: 240 * time.Second}
	for _, m := range strings.Split(*modeList, ",") {
		mode, ok := wcache.ParseMode(m)
		if !ok {
			fatal(fmt.Errorf("-modes: %q is not one of lose, keep, prefix, writes, sectors", m))
		}
		cfg.modes = append(cfg.modes, mode)
	}
	var sizes []int64
	for _, f := range strings.Split(*sizeList, ",") {
		mib, err := strconv.ParseInt(strings.TrimSuffix(f, "M"), 10, 64)
		if err != nil || mib < 16 {
			fatal(fmt.Errorf("-sizes: %q is not a size of at least 16M", f))
		}
		sizes = append(sizes, mib<<20)
	}
	if err := os.MkdirAll(cfg.work, 0o755); err != nil {
		fatal(err)
	}
	names := strings.Split(*kernels, ",")
	if *workers < 1 || *workers > 8 {
		fatal(fmt.Errorf("-workers %d: 1 to 8", *workers))
	}
	if *workload != "files" && *workload != "mail" {
		fatal(fmt.Errorf("-workload %q: files or mail", *workload))
	}
	cfg.mail = *workload == "mail"
	ks, err := prepare(root, cfg.work, names, *linuxOpts, *workers, *workload)
	if err != nil {
		fatal(err)
	}
	if *recoverBy != "same" && *recoverBy != "other" && *recoverBy != "both" {
		fatal(fmt.Errorf("-recover %q: want same, other or both", *recoverBy))
	}
	if len(names) < 2 {
		if *recoverBy == "other" {
			fatal(fmt.Errorf("-recover other needs two kernels"))
		}
		*recoverBy = "same"
	}
	rng := rand.New(rand.NewPCG(*seed, 0x5b))
	fmt.Printf("powercut: %d cuts on %s (recovery: %s), seed %d\n", *cuts, *kernels, map[string]string{
		"same": "by the same kernel", "other": "by the other kernel", "both": "by the same kernel, then by the other, in rounds"}[*recoverBy], *seed)
	start := time.Now()
	var all []result
	failed, stalls := 0, 0
	for i := 0; i < *cuts; i++ {
		// Kernels crash in turn; with both, a round of crashes each
		// kernel recovers itself, the next round the other does.
		wk := ks[names[i%len(names)]]
		ck := wk
		if *recoverBy == "other" || *recoverBy == "both" && i/len(names)%2 == 1 {
			ck = ks[names[(i+1)%len(names)]]
		}
		// Sizes change after every kernel has crashed twice, so that
		// each pairing of kernels meets each size.
		cfg.size = sizes[i/(2*len(names))%len(sizes)]
		r := cfg.cut(i, wk, ck, rng)
		if r.stalled {
			// A guest that hangs before printing anything (seen: Linux
			// under TCG on a loaded host, its timer interrupts lost)
			// says nothing about the file system: count it, keep its
			// logs, and run the cut once more.
			stalls++
			img := filepath.Join(cfg.work, fmt.Sprintf("cut%d.img", i))
			for _, suffix := range []string{"", ".crashed", ".work.log", ".check.log"} {
				os.Rename(img+suffix, img+".stalled"+suffix)
			}
			fmt.Printf("powercut: cut %d (%s, recovered by %s) stalled, logs kept; once more: %s\n", i, r.work, r.check, strings.Join(r.problems, "; "))
			r = cfg.cut(i, wk, ck, rng)
		}
		all = append(all, r)
		verdict := "PASS"
		if len(r.problems) > 0 {
			verdict = "FAIL"
			failed++
		}
		fmt.Printf("powercut: cut %d (%s, recovered by %s, %d MiB%s): %s: %d durable files, %d removals, %d checks passed; %v; %d writes, %d flushes; boot %v, cut after %v, check boot %v\n",
			i, r.work, r.check, cfg.size>>20, at(r.atFlush), verdict, r.durables, r.gones, r.verified, r.cut, r.stats.Writes, r.stats.Flushes,
			r.boot.Round(100*time.Millisecond), r.ran.Round(100*time.Millisecond), r.checked.Round(100*time.Millisecond))
		for _, p := range r.problems {
			fmt.Printf("powercut:   %s\n", p)
		}
	}
	summary := summarize(all, time.Since(start))
	if stalls > 0 {
		summary += fmt.Sprintf("powercut: %d stalled cuts run again (a boot that printed nothing for %v)\n", stalls, cfg.stall)
	}
	fmt.Print(summary)
	if *results != "" {
		hdr := fmt.Sprintf("# powercut %s: seed %d, %d CPUs, images of %s MiB, cuts at up to %v after the workload's start, writes torn in %d-byte units\n",
			time.Now().UTC().Format(time.RFC3339), *seed, *cpus, *sizeList, *maxDelay, *atom)
		if load, err := os.ReadFile("/proc/loadavg"); err == nil {
			hdr += "# host load average at the end: " + string(load)
		}
		if err := os.WriteFile(*results, []byte(hdr+summary), 0o644); err != nil {
			fatal(err)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

func at(flush bool) string {
	if flush {
		return ", at a flush"
	}
	return ""
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "powercut:", err)
	os.Exit(2)
}

func summarize(all []result, took time.Duration) string {
	type tally struct{ cuts, failed, verified, durables, gones, files int }
	per := map[string]*tally{}
	var keys []string
	var sb strings.Builder
	for i, r := range all {
		k := r.work + " -> " + r.check
		if per[k] == nil {
			per[k] = &tally{}
			keys = append(keys, k)
		}
		t := per[k]
		t.cuts++
		t.verified += r.verified
		t.durables += r.durables
		t.gones += r.gones
		t.files += r.files
		v := "pass"
		if len(r.problems) > 0 {
			t.failed++
			v = "FAIL (workload seed " + r.seed + "): " + strings.Join(r.problems, "; ")
		}
		fmt.Fprintf(&sb, "cut %d %s%s: %s; %d durable files, %d removals, %d checks; %v\n", i, k, at(r.atFlush), v, r.durables, r.gones, r.verified, r.cut)
	}
	fmt.Fprintf(&sb, "%-26s %5s %9s %9s %9s %8s\n", "crashed -> recovered by", "cuts", "failures", "durable", "removals", "checks")
	for _, k := range keys {
		t := per[k]
		fmt.Fprintf(&sb, "%-26s %5d %9d %9d %9d %8d\n", k, t.cuts, t.failed, t.durables, t.gones, t.verified)
	}
	fmt.Fprintf(&sb, "powercut: %d cuts in %v\n", len(all), took.Round(time.Second))
	return sb.String()
}

// cut runs one power cut: a fresh image, a work boot on wk killed at a
// random moment, the cut, a check boot on ck, e2fsck and debugfs.
func (c *config) cut(i int, wk, ck kernel, rng *rand.Rand) (r result) {
	r.work, r.check = wk.name, ck.name
	fail := func(format string, a ...any) { r.problems = append(r.problems, fmt.Sprintf(format, a...)) }
	img := filepath.Join(c.work, fmt.Sprintf("cut%d.img", i))
	sock := filepath.Join(os.TempDir(), fmt.Sprintf("powercut-%d.sock", os.Getpid()))
	defer os.Remove(sock)
	os.Remove(img)
	if err := run(c.root, "truncate", "-s", fmt.Sprint(c.size), img); err != nil {
		fail("%v", err)
		return
	}
	if err := run(c.root, "mke2fs", "-q", "-t", "ext4", "-F", img); err != nil {
		fail("%v", err)
		return
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		fail("%v", err)
		return
	}
	defer f.Close()

	// The work boot, cut at a random time after "start".
	disk, err := wcache.New(f, c.size)
	if err != nil {
		fail("%v", err)
		return
	}
	t0 := time.Now()
	b, err := startBoot(c.root, wk, "work", disk, sock, img+".work.log", c.cpus)
	if err != nil {
		fail("%v", err)
		return
	}
	// Half the cuts come at a random moment, half at one of the next
	// few FLUSH requests after it, when the cache holds everything the
	// flush was to cover.
	delay := time.Duration(rng.Int64N(int64(c.maxDelay)))
	atFlush := rng.IntN(2) == 0
	trapRng := rand.New(rand.NewPCG(rng.Uint64(), 1)) // used on the timer's goroutine
	r.atFlush = atFlush
	led := newLedger()
	wb := b
	timeout := time.AfterFunc(c.stall, wb.kill)
	var cutTimer *time.Timer
	for s := range b.lines {
		led.line(s)
		if led.started && cutTimer == nil {
			r.boot = time.Since(t0)
			timeout.Stop()
			cutTimer = time.AfterFunc(delay, func() {
				if !atFlush {
					wb.kill()
					return
				}
				// A commit flushes more than once (Shortbread: before
				// the log, after it, after the commit block, ...): any
				// of the next four.
				wb.trap.Store(int32(1 + trapRng.IntN(4)))
				time.AfterFunc(30*time.Second, wb.kill) // no flush came
			})
		}
		if len(led.errors) > 0 {
			b.kill()
		}
	}
	b.finish()
	if cutTimer != nil {
		cutTimer.Stop()
		r.ran = time.Since(t0) - r.boot
	}
	timeout.Stop()
	r.stats = disk.Stats
	if !led.started {
		r.stalled = true
		fail("the work boot did not start the workload within %v (log %s)", c.stall, img+".work.log")
		return
	}
	r.problems = append(r.problems, led.errors...)
	if led.mail != c.mail {
		fail("the workload's start line says mail %v, -workload mail %v", led.mail, c.mail)
	}
	r.durables, r.gones = led.counts()
	r.seed = led.seed
	if err := disk.SetAtom(c.atom); err != nil {
		fail("%v", err)
		return
	}
	if r.cut, err = disk.CutWith(c.modes[rng.IntN(len(c.modes))], rng); err != nil {
		fail("%v", err)
		return
	}
	crashed := img + ".crashed"
	if err := run(c.root, "cp", "--sparse=always", img, crashed); err != nil {
		fail("%v", err)
		return
	}

	// The check boot on the crashed image.
	disk, err = wcache.New(f, c.size)
	if err != nil {
		fail("%v", err)
		return
	}
	t0 = time.Now()
	b, err = startBoot(c.root, ck, "check", disk, sock, img+".check.log", c.cpus)
	if err != nil {
		fail("%v", err)
		return
	}
	// A boot that printed nothing of h_durable's (not even an error) for
	// a stall period is stopped and reported as stalled.
	var progress atomic.Bool
	cb := b
	timeout = time.AfterFunc(c.stall, func() {
		if !progress.Load() {
			cb.kill()
		}
	})
	var lines []string
	for s := range b.lines {
		lines = append(lines, s)
		if f := strings.Fields(s); len(f) > 0 && (f[0] == "have" || f[0] == "checked" || f[0] == "error" || f[0] == "#") {
			progress.Store(true)
		}
	}
	status := b.finish()
	timeout.Stop()
	r.checked = time.Since(t0)
	if err := disk.Flush(); err != nil { // a clean power-off keeps the cache
		fail("%v", err)
	}
	files, finished, errs := parseCheck(lines)
	r.files = len(files)
	r.problems = append(r.problems, errs...)
	if !progress.Load() {
		r.stalled = true
	}
	if !finished || status != 0 {
		fail("the check boot did not finish (status %d, log %s)", status, img+".check.log")
	}
	problems, verified := led.verify(files)
	r.problems = append(r.problems, problems...)

	// The host's tools: e2fsck must find the image clean, and the files
	// debugfs copies out must pass the same checks.
	if out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		fail("e2fsck -fn: %v: %s", err, lastLines(string(out), 12))
	}
	hostFiles, err := debugfsFiles(img, filepath.Join(c.work, fmt.Sprintf("cut%d.dump", i)))
	if err != nil {
		fail("debugfs: %v", err)
	} else {
		p, v := led.verify(hostFiles)
		for _, s := range p {
			fail("debugfs: %s", s)
		}
		verified += v
	}
	r.verified = verified
	if len(r.problems) == 0 {
		os.Remove(img)
		os.Remove(crashed)
		os.Remove(img + ".work.log")
		os.Remove(img + ".check.log")
	} else {
		fmt.Printf("powercut: cut %d failed; kept %s (as crashed), %s and the logs\n", i, crashed, img)
	}
	return r
}

// debugfsFiles copies /pc out of the image with debugfs and judges each
// file as h_durable's check mode does.
func debugfsFiles(img, dir string) (map[string]found, error) {
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := exec.Command("debugfs", "-R", "rdump /pc "+dir, img).CombinedOutput()
	files := map[string]found{}
	if _, serr := os.Stat(filepath.Join(dir, "pc")); serr != nil {
		// No /pc: the cut came before the workload's directories were
		// durable (then nothing was reported durable either).
		if err == nil && strings.Contains(string(out), "not found") {
			return files, nil
		}
		return nil, fmt.Errorf("rdump made no pc: %s", lastLines(string(out), 3))
	}
	ds, err := os.ReadDir(filepath.Join(dir, "pc"))
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		es, err := os.ReadDir(filepath.Join(dir, "pc", d.Name()))
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			name := d.Name() + "/" + e.Name()
			fh, err := os.Open(filepath.Join(dir, "pc", name))
			if err != nil {
				return nil, err
			}
			data, err := io.ReadAll(fh)
			fh.Close()
			if err != nil {
				return nil, err
			}
			good, bad := judgeContents(name, data)
			files[name] = found{size: uint64(len(data)), good: good, bad: bad}
		}
	}
	return files, nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}
