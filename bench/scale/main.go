// Command scale runs the issue-21 scaling matrix: the workloads of
// user/bench/scale.c (system call, page faults, malloc, file churn, path
// look-up, fork+exec, pipe, futex, epoll and socket ping-pong) with one
// worker and with one worker per CPU, on Shortbread and on Linux in the
// same QEMU configuration, at each CPU count. Boots alternate between the
// kernels (and which goes first) within each repetition.
//
// For each workload it reports throughput (operations per second, the
// total over the workers), the speed-up of N workers over one in the same
// boot (N = CPUs), the throughput against the 1-CPU guest's, and
// Shortbread's throughput as a fraction of Linux's, as medians over the
// repetitions with their range. Results go to bench/results/scale-DATE.md,
// .json (every sample) and .png (speed-up per workload, both kernels side
// by side), with date, commit, host load and QEMU flags.
//
// It is a benchmark, not a test: it judges nothing except that every
// workload printed a result. QEMU runs in TCG here and the host is shared,
// so absolute rates mean little; speed-ups and ratios within one run are
// what to read.
//
// Usage (from the repository root; make user, make kernel and
// tools/linux/kernel.sh build/linux first, or let make bench-scale do it):
//
//	go run ./bench/scale [-long] [-cpus 1,2] [-reps 4] [-ms 1000]
//	    [-kernels shortbread,linux] [-workloads getppid,fault,...] [-out bench/results]
//	go run ./bench/scale -render bench/results/scale-DATE.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// qemuFlags is what tools/run-cmd.sh gives QEMU (through tools/qemu.sh for
// Shortbread and tools/linux/run.sh for Linux), for the record.
const qemuFlags = "qemu-system-x86_64 -machine q35 -cpu max -m 512M -smp N (TCG, no KVM; Shortbread: -cdrom via tools/qemu.sh, Linux: -kernel/-initrd via tools/linux/run.sh)"

func main() {
	long := flag.Bool("long", false, "a longer run: 6 repetitions of 3 s per workload, and 4 CPUs if the host has 4 cores")
	cpusFlag := flag.String("cpus", "", "comma-separated guest CPU counts (default 1,2, plus 4 with -long on a host with 4 cores)")
	reps := flag.Int("reps", 0, "boots per kernel and CPU count (default 4, 6 with -long)")
	ms := flag.Int("ms", 0, "milliseconds per workload run (default 1000, 3000 with -long)")
	kernelsFlag := flag.String("kernels", "shortbread,linux", "comma-separated kernels: shortbread, linux")
	workloadsFlag := flag.String("workloads", strings.Join(workloadNames(), ","), "comma-separated workloads")
	outDir := flag.String("out", "bench/results", "directory for the results")
	name := flag.String("name", "", "results file name without extension (default scale-DATE)")
	render := flag.String("render", "", "only rewrite FILE.md and FILE.png from a results FILE.json")
	fs := flag.String("fs", "tmpfs", "where the file workloads work: tmpfs (/tmp) or ext4 (a fresh image over virtio-blk, made for each boot)")
	flag.Parse()

	if *render != "" {
		js, err := os.ReadFile(*render)
		if err != nil {
			fail("%v", err)
		}
		var rep Report
		if err := json.Unmarshal(js, &rep); err != nil {
			fail("%s: %v", *render, err)
		}
		if err := write(strings.TrimSuffix(*render, ".json"), &rep, false); err != nil {
			fail("%v", err)
		}
		return
	}

	rep := Report{Reps: 4, MS: 1000, HostCPUs: runtime.NumCPU(), QEMU: qemuFlags}
	switch *fs {
	case "tmpfs":
	case "ext4":
		rep.FS = "ext4"
		rep.QEMU += "; the file workloads' disk: `" + fmt.Sprintf(ext4Args, "IMG") + "`, a fresh `mkfs.ext4` image of " + strconv.Itoa(ext4MiB) + " MiB for each boot"
	default:
		fail("-fs: tmpfs or ext4, not %q", *fs)
	}
	cpus := "1,2"
	if *long {
		rep.Reps, rep.MS, rep.Long = 6, 3000, true
		if rep.HostCPUs >= 4 {
			cpus = "1,2,4"
		}
	}
	if *cpusFlag != "" {
		cpus = *cpusFlag
	}
	if *reps > 0 {
		rep.Reps = *reps
	}
	if *ms > 0 {
		rep.MS = *ms
	}
	var err error
	if rep.CPUs, err = intList(cpus); err != nil {
		fail("-cpus: %v", err)
	}
	rep.Kernels = strings.Split(*kernelsFlag, ",")
	for _, k := range rep.Kernels {
		if k != "linux" && k != "shortbread" {
			fail("unknown kernel %q", k)
		}
	}
	rep.Workloads = strings.Split(*workloadsFlag, ",")
	for _, w := range rep.Workloads {
		if _, ok := workloadInfo[w]; !ok {
			fail("unknown workload %q (known: %s)", w, strings.Join(workloadNames(), ","))
		}
	}

	stage, err := stageDir(rep.FS)
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(stage)
	defer os.RemoveAll(stage + ".disk")

	now := time.Now().UTC()
	rep.Date = now.Format(time.RFC3339)
	rep.Commit, rep.Dirty = gitCommit()
	rep.UptimeStart = uptime()
	if v, err := exec.Command("qemu-system-x86_64", "--version").Output(); err == nil {
		rep.QEMUVersion = strings.SplitN(string(v), "\n", 2)[0]
	}
	if v, err := os.ReadFile("build/linux/vmlinuz.version"); err == nil {
		rep.LinuxBuild = strings.TrimSpace(string(v))
	}

	nerr := 0
	for r := 1; r <= rep.Reps; r++ {
		for _, c := range rep.CPUs {
			kernels := slices.Clone(rep.Kernels)
			if r%2 == 0 {
				slices.Reverse(kernels) // neither kernel always boots first
			}
			for _, k := range kernels {
				b, samples := bootOnce(k, c, r, stage, rep)
				rep.Boots = append(rep.Boots, b)
				rep.Samples = append(rep.Samples, samples...)
				nerr += len(b.Errors)
			}
		}
	}
	rep.UptimeEnd = uptime()

	base := *name
	if base == "" {
		base = "scale-" + now.Format("2006-01-02")
		if rep.FS != "" {
			base = "scale-" + rep.FS + "-" + now.Format("2006-01-02")
		}
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fail("%v", err)
	}
	err = write(filepath.Join(*outDir, base), &rep, true)
	if md, rerr := os.ReadFile(filepath.Join(*outDir, base) + ".md"); rerr == nil {
		os.Stdout.Write(md)
	}
	os.RemoveAll(stage) // fail exits without running deferred calls
	os.RemoveAll(stage + ".disk")
	if err != nil {
		fail("%v", err)
	}
	if nerr > 0 {
		fail("%d errors (in the report's boots)", nerr)
	}
}

// analysisHeading starts the part of a results file written by hand.
const analysisHeading = "## Analysis"

// write saves base.md and base.png (and base.json when withJSON).
func write(base string, rep *Report, withJSON bool) error {
	md := Markdown(rep, filepath.Base(base)+".png")
	png, err := Plot(rep)
	if err != nil {
		return err
	}
	// A hand-written analysis at the end of an earlier rendering stays.
	if old, err := os.ReadFile(base + ".md"); err == nil {
		if i := bytes.Index(old, []byte("\n"+analysisHeading)); i >= 0 {
			md = append(append(md, '\n'), old[i+1:]...)
		}
	}
	files := map[string][]byte{".md": md, ".png": png}
	if withJSON {
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		files[".json"] = append(js, '\n')
	}
	for ext, data := range files {
		if err := os.WriteFile(base+ext, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "bench/scale: wrote %s.{md,png}\n", base)
	return nil
}

// guestScript runs every workload with one worker and, with more than one
// CPU, with one per CPU.
func guestScript(workloads []string, cpus, ms int, fs string) string {
	var b strings.Builder
	b.WriteString(`export PATH=/usr/bin:/bin:/usr/sbin:/sbin
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
echo "@@info kernel $(uname -r)"
echo "@@info cpus $(nproc)"
cd /tmp
`)
	if fs == "ext4" {
		// Linux: virtio-blk and ext4 are modules (no modprobe in the
		// guest); on Shortbread insmod fails quietly and the mount
		// decides. The workloads make their directories in TMPDIR.
		b.WriteString(`if [ -f /lib/modules/load-order ]; then
  for m in $(cat /lib/modules/load-order); do insmod /lib/modules/$m.ko 2>/dev/null; done
fi
mkdir -p /mnt/disk && mount -t ext4 /dev/vda /mnt/disk || { echo "scale-error cannot mount /dev/vda as ext4"; echo @@done; exit 1; }
export TMPDIR=/mnt/disk
cd /mnt/disk
`)
	}
	for _, w := range workloads {
		fmt.Fprintf(&b, "/bench/scale %s 1 %d\n", w, ms)
		if cpus > 1 {
			fmt.Fprintf(&b, "/bench/scale %s %d %d\n", w, cpus, ms)
		}
	}
	b.WriteString("echo @@done\n")
	return b.String()
}

// bootOnce boots kernel k with c CPUs, runs the workloads and parses what
// they printed.
func bootOnce(k string, c, r int, stage string, rep Report) (Boot, []Sample) {
	fmt.Fprintf(os.Stderr, "bench/scale: %s, %d CPU, run %d/%d ...", k, c, r, rep.Reps)
	b := Boot{Kernel: k, CPUs: c, Rep: r, LoadBefore: loadavg()}
	script := guestScript(rep.Workloads, c, rep.MS, rep.FS)
	// Each run takes ms plus its set-up; a generous bound for TCG on a
	// shared host, plus the boot.
	timeout := 300 + len(rep.Workloads)*2*(rep.MS/1000+20)
	cmd := exec.Command("tools/run-cmd.sh", stage, script)
	cmd.Env = append(os.Environ(), "CPUS="+strconv.Itoa(c), "TIMEOUT="+strconv.Itoa(timeout))
	if rep.FS == "ext4" {
		img := filepath.Join(stage+".disk", "scale.img")
		if err := newExt4(img); err != nil {
			b.Errors = []string{err.Error()}
			return b, nil
		}
		cmd.Env = append(cmd.Env, "QEMU_EXTRA="+fmt.Sprintf(ext4Args, img))
	}
	if k == "linux" {
		cmd.Env = append(cmd.Env, "LINUX=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	b.WallSeconds = time.Since(start).Seconds()
	b.LoadAfter = loadavg()
	samples, version, errs := Parse(out.String(), k, c, r)
	b.KernelVersion = version
	if err != nil {
		errs = append(errs, fmt.Sprintf("run-cmd: %v", err))
	}
	errs = append(errs, missing(samples, rep.Workloads, c)...)
	if len(errs) > 0 {
		errs = append(errs, "last output:\n"+lastLines(out.String(), 20))
	}
	b.Errors = errs
	fmt.Fprintf(os.Stderr, " %.0f s, %d results, %d errors (host load %s)\n", b.WallSeconds, len(samples), len(errs), b.LoadAfter)
	for _, e := range errs {
		fmt.Fprintf(os.Stderr, "  %s\n", e)
	}
	return b, samples
}

// missing names the runs a boot should have printed and did not.
func missing(samples []Sample, workloads []string, cpus int) []string {
	var errs []string
	for _, w := range workloads {
		for _, n := range []int{1, cpus} {
			found := slices.ContainsFunc(samples, func(s Sample) bool { return s.Workload == w && s.Workers == n })
			if !found {
				errs = append(errs, fmt.Sprintf("%s with %d workers: no result", w, n))
			}
			if cpus == 1 {
				break
			}
		}
	}
	return errs
}

// stageDir makes the directory merged into the initramfs: /bench/scale.
// ext4Args attach the ext4 image of -fs ext4; cache=unsafe: the guest's
// flushes still happen, the host's disk is not what is measured.
const ext4Args = "-drive file=%s,if=virtio,format=raw,cache=unsafe"

// ext4MiB is the size of that image: the workloads keep a few thousand
// small files at a time.
const ext4MiB = 256

// newExt4 makes a fresh ext4 image at path, its inode tables and journal
// written now rather than by a lazy thread in the guest.
func newExt4(path string) error {
	os.Remove(path)
	if err := exec.Command("truncate", "-s", strconv.Itoa(ext4MiB)+"M", path).Run(); err != nil {
		return fmt.Errorf("truncate %s: %v", path, err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", path).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4 %s: %v\n%s", path, err, out)
	}
	return nil
}

// stageDir makes the directory merged over the initramfs: the workloads'
// program and, for ext4, Linux's disk and file-system modules (the same
// for both kernels, so the initramfs is too) and a directory beside it
// (DIR.disk) for the image.
func stageDir(fs string) (string, error) {
	b, err := os.ReadFile("build/user/bench/scale")
	if err != nil {
		return "", fmt.Errorf("%v (run make user first)", err)
	}
	dir, err := os.MkdirTemp("", "sb-bench-scale.")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "bench"), 0o755); err != nil {
		return "", err
	}
	if fs == "ext4" {
		mods := exec.Command("tools/linux/modules.sh", "build/linux")
		mods.Stdout, mods.Stderr = os.Stderr, os.Stderr
		if err := mods.Run(); err != nil {
			return "", fmt.Errorf("tools/linux/modules.sh: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
			return "", err
		}
		if out, err := exec.Command("cp", "-r", "build/linux/modules", filepath.Join(dir, "lib", "modules")).CombinedOutput(); err != nil {
			return "", fmt.Errorf("copying the modules: %v %s", err, out)
		}
		if err := os.MkdirAll(dir+".disk", 0o755); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "bench", "scale"), b, 0o755)
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

func gitCommit() (string, bool) {
	b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(b)), len(st) > 0
}

func uptime() string {
	b, err := exec.Command("uptime").Output()
	if err != nil {
		return loadavg()
	}
	return strings.TrimSpace(string(b))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench/scale: "+format+"\n", a...)
	os.Exit(1)
}
