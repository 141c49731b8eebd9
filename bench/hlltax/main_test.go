package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/samples"
)

// The command runs on the test binary itself (a Go linux/amd64 ELF with
// symbols), with a log whose samples sit in functions of known classes.
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
	// 6 GC, 3 write barrier, 2 safety, 1 prologue (function rules), 4
	// other (2 in mallocgc, 2 outside the text), 5 idle, 2 user.
	var s []samples.Sample
	add := func(name string, n int, flags uint16) {
		f := m.Func(name)
		if f == nil {
			t.Fatalf("%s not in the test binary", name)
		}
		for i := 0; i < n; i++ {
			s = append(s, samples.Sample{PC: f.Insts[i%len(f.Insts)].Addr, CPU: uint16(i % 2), Flags: flags})
		}
	}
	add("runtime.gcDrain", 6, 0)
	add("runtime.gcWriteBarrier2", 3, 0)
	add("runtime.panicBounds", 2, samples.FlagIRQOff)
	add("runtime.newstack", 1, 0)
	other := 0
	for _, in := range m.Func("runtime.mallocgc").Insts {
		if in.Class == classify.Other && other < 2 {
			s = append(s, samples.Sample{PC: in.Addr, CPU: 1})
			other++
		}
	}
	s = append(s, samples.Sample{PC: m.TextEnd + 16}, samples.Sample{PC: m.TextEnd + 32})
	add("runtime.gcDrain", 5, samples.FlagIdle)
	add("runtime.gcDrain", 2, samples.FlagUser)

	var log bytes.Buffer
	log.WriteString("boot noise\r\n")
	if err := samples.Write(&log, map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "2", "ns": "5000000", "bench": "unit", "gc_cycles": "2"}, s); err != nil {
		t.Fatal(err)
	}
	log.WriteString("poweroff\r\n")
	dir := t.TempDir()
	logPath := filepath.Join(dir, "serial.log")
	if err := os.WriteFile(logPath, log.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	mdPath, pbPath := filepath.Join(dir, "out.md"), filepath.Join(dir, "out.pb.gz")

	var stdout, stderr bytes.Buffer
	if st := run([]string{"-kernel", exe, "-log", logPath, "-md", mdPath, "-pprof", pbPath}, nil, &stdout, &stderr); st != 0 {
		t.Fatalf("status %d: %s", st, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"## hlltax section 1 of 1 (log line 2): unit",
		"| GC | 6 | 37.50% |",
		"| function prologues (stack checks) | 1 | 6.25% |",
		"| write barriers | 3 | 18.75% |",
		"| safety checks (bounds, nil, divide, shift, type) | 2 | 12.50% |",
		"| **high-level-language tax** | 12 | 75.00% |",
		"| other | 4 | 25.00% |",
		"23 samples: 5 idle, 2 user, 16 kernel; of the kernel samples 2 (12.50%) with interrupts off",
		"| gc_cycles | 2 |",
		"2 outside the kernel text",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if md, err := os.ReadFile(mdPath); err != nil || string(md) != out {
		t.Errorf("-md file differs from the output (%v)", err)
	}
	f, err := os.Open(pbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, x := range p.Sample {
		total += x.Value[0]
	}
	if total != 16 || p.Mapping[0].File != exe {
		t.Errorf("profile: %d samples, mapping %q", total, p.Mapping[0].File)
	}

	// -static and -disasm.
	stdout.Reset()
	if st := run([]string{"-kernel", exe, "-static", "-disasm", `^runtime\.panicBounds$`}, nil, &stdout, &stderr); st != 0 {
		t.Fatalf("-static: status %d: %s", st, stderr.String())
	}
	for _, want := range []string{"class ", "GC ", "Prologue ", "WriteBarrier ", "Safety ", "Other ", "total ",
		"stack checks", "TEXT runtime.panicBounds", "(name rule: Safety)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-static output lacks %q:\n%s", want, stdout.String())
		}
	}

	// Errors: no section, bad section number, no mode.
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, []byte("nothing\n"), 0o644)
	for _, args := range [][]string{
		{"-kernel", exe, "-log", empty},
		{"-kernel", exe, "-log", logPath, "-section", "2"},
		{"-kernel", exe},
		{"-kernel", filepath.Join(dir, "missing.elf"), "-static"},
	} {
		if st := run(args, nil, &stdout, &stderr); st == 0 {
			t.Errorf("%q: status 0", args)
		}
	}
}
