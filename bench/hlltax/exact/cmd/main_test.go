package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/exact"
	"shortbread/bench/hlltax/samples"
)

// The command runs on the test binary itself (a Go linux/amd64 ELF), with
// counts and a serial log in functions of known classes.
func TestCommand(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the test binary is the kernel stand-in: needs linux/amd64")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := classify.Load(exe)
	if err != nil {
		t.Fatal(err)
	}
	// An instruction of class cl in function name.
	at := func(name string, cl classify.Class) uint64 {
		f := m.Func(name)
		if f == nil {
			t.Fatalf("%s not in the test binary", name)
		}
		for _, in := range f.Insts {
			if c, _ := m.Class(in.Addr); c == cl {
				return in.Addr
			}
		}
		t.Fatalf("%s has no %v instruction", name, cl)
		return 0
	}
	gc, wb, other := at("runtime.gcDrain", classify.GC), at("runtime.gcWriteBarrier2", classify.WriteBarrier), at("runtime.main", classify.Other)
	dir := t.TempDir()
	write := func(name string, c []exact.Count) string {
		var b bytes.Buffer
		if err := exact.Write(&b, c); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	window := write("counts.window", []exact.Count{{PC: gc, N: 250}, {PC: wb, N: 50}, {PC: other, N: 700}})
	whole := write("counts", []exact.Count{{PC: gc, N: 500}, {PC: wb, N: 50}, {PC: other, N: 9450}})
	empty := write("empty", nil)

	// 20 samples (10 draws, each twice): 4 GC, 0 write barrier, 16 other.
	var s []samples.Sample
	for i := 0; i < 10; i++ {
		pc := other
		if i < 2 {
			pc = gc
		}
		s = append(s, samples.Sample{PC: pc}, samples.Sample{PC: pc})
	}
	var log bytes.Buffer
	log.WriteString("boot noise\r\n")
	if err := samples.Write(&log, map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "1", "ns": "1000"}, s); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serial.log")
	if err := os.WriteFile(logPath, log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "out.md")

	var stdout, stderr bytes.Buffer
	if st := run([]string{"-kernel", exe, "-counts", window, "-whole", whole, "-log", logPath, "-md", md, "-top", "2"}, &stdout, &stderr); st != 0 {
		t.Fatalf("status %d: %s", st, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"## Exact high-level-language tax (QEMU TCG instruction counts)",
		"| GC | 250 | 25.00% | 20.00% |",
		"| write barriers | 50 | 5.00% | 0.00% |",
		"| **high-level-language tax** | 300 | 30.00% | 20.00% |",
		"±95% (widened ×1.41)",
		"**10 of the 20 kernel samples (50.0%) repeat",
		"| 5.00% |\n", // whole-run GC share
		"| `runtime.main` | Other | 700 | 70.00% | 80.00% |",
		"the counts hold 1000 instruction executions (100.000% of it)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(md); err != nil || string(b) != out {
		t.Errorf("-md file differs from the output (%v)", err)
	}

	stdout.Reset()
	if st := run([]string{"-kernel", exe, "-plugin-args", "-on", "runtime.main", "-off", "runtime.gcDrain"}, &stdout, &stderr); st != 0 {
		t.Fatalf("-plugin-args: status %d: %s", st, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); !strings.HasPrefix(got, "start=0x") || !strings.Contains(got, ",on=0x") || !strings.Contains(got, ",off=0x") {
		t.Errorf("-plugin-args printed %q", got)
	}
	stdout.Reset()
	if st := run([]string{"-kernel", exe, "-plugin-args", "-on", ""}, &stdout, &stderr); st != 0 || strings.Contains(stdout.String(), "on=") {
		t.Errorf("-plugin-args -on '': status %d, %q", st, stdout.String())
	}

	for _, args := range [][]string{
		{"-kernel", exe},                         // nothing to do
		{"-kernel", exe, "-counts", window, "x"}, // stray argument
	} {
		if st := run(args, &stdout, &stderr); st != 2 {
			t.Errorf("%v: status %d, want 2", args, st)
		}
	}
	for _, args := range [][]string{
		{"-kernel", exe, "-counts", empty},
		{"-kernel", exe, "-counts", filepath.Join(dir, "missing")},
		{"-kernel", exe, "-counts", window, "-log", logPath, "-section", "2"},
		{"-kernel", exe, "-plugin-args"}, // the default markers are kernel functions
	} {
		if st := run(args, &stdout, &stderr); st != 1 {
			t.Errorf("%v: status %d, want 1", args, st)
		}
	}
}
