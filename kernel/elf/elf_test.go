package elf

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// staticBinary builds a small static Go program: a real ET_EXEC x86-64
// executable without an interpreter.
func staticBinary(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nfunc main() { println(\"hi\") }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hi\ngo 1.26\n"), 0o644)
	out := filepath.Join(dir, "hi")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseStaticExecutable(t *testing.T) {
	b := staticBinary(t)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Type != etExec || len(f.Segments) < 2 {
		t.Fatalf("type %d, %d segments", f.Type, len(f.Segments))
	}
	inText := false
	for _, s := range f.Segments {
		if f.Entry >= s.Vaddr && f.Entry < s.Vaddr+s.Memsz && s.Prot&4 != 0 {
			inText = true
		}
	}
	if !inText {
		t.Errorf("entry %#x not in an executable segment", f.Entry)
	}
	if lo, hi := f.Span(); lo >= hi || lo != 0x400000 {
		t.Errorf("span %#x-%#x", lo, hi)
	}
	if f.PhdrAddr(0) == 0 {
		t.Error("program headers not found in a loaded segment")
	}
}

func TestRejectsBrokenExecutables(t *testing.T) {
	b := staticBinary(t)
	corrupt := func(mod func(c []byte) []byte) []byte {
		return mod(append([]byte(nil), b...))
	}
	cases := map[string][]byte{
		"empty":        nil,
		"truncated":    b[:40],
		"headers cut":  b[:100],
		"bad magic":    corrupt(func(c []byte) []byte { c[1] = 'X'; return c }),
		"32-bit":       corrupt(func(c []byte) []byte { c[4] = 1; return c }),
		"not x86-64":   corrupt(func(c []byte) []byte { c[18] = 183; return c }),
		"relocatable":  corrupt(func(c []byte) []byte { c[16] = 1; return c }),
		"phnum zero":   corrupt(func(c []byte) []byte { c[56], c[57] = 0, 0; return c }),
		"phoff huge":   corrupt(func(c []byte) []byte { c[39] = 0x7f; return c }),
		"garbage text": []byte("#!/not/elf\n" + string(make([]byte, 100))),
	}
	for name, img := range cases {
		if _, err := Parse(img); !errors.Is(err, ErrNoExec) {
			t.Errorf("%s: %v, want ErrNoExec", name, err)
		}
	}
	// A file cut inside a segment's data must be rejected too.
	f, _ := Parse(b)
	last := f.Segments[len(f.Segments)-1]
	if cut := last.Off + last.Filesz/2; last.Filesz > 0 {
		if _, err := Parse(b[:cut]); !errors.Is(err, ErrNoExec) {
			t.Errorf("cut inside a segment: %v", err)
		}
	}
}

func TestParseDynamicExecutable(t *testing.T) {
	b, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Skip("no /bin/ls")
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("dynamic /bin/ls: %v", err)
	}
	if !f.Dynamic || f.Interp != "/lib64/ld-linux-x86-64.so.2" {
		t.Errorf("/bin/ls: interpreter %q (dynamic %v)", f.Interp, f.Dynamic)
	}
	if f.Align < 4096 || f.Align&(f.Align-1) != 0 {
		t.Errorf("/bin/ls: alignment %#x", f.Align)
	}
	// The PT_INTERP header, patched: too short, too long, not
	// NUL-terminated, outside the file.
	ph := -1
	for i := 0; i < int(f.Phnum); i++ {
		if binary.LittleEndian.Uint32(b[int(f.Phoff)+56*i:]) == ptInterp {
			ph = int(f.Phoff) + 56*i
		}
	}
	if ph < 0 {
		t.Fatal("no PT_INTERP header")
	}
	patch := func(field int, v uint64) []byte {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint64(c[ph+field:], v)
		return c
	}
	off := binary.LittleEndian.Uint64(b[ph+8:])
	n := binary.LittleEndian.Uint64(b[ph+32:])
	for name, img := range map[string][]byte{
		"size 1":          patch(32, 1),
		"size 5000":       patch(32, 5000),
		"no NUL":          patch(32, n-1),
		"outside":         patch(8, uint64(len(b))-n/2),
		"offset overflow": patch(8, ^uint64(0)-1),
	} {
		if _, err := Parse(img); !errors.Is(err, ErrNoExec) {
			t.Errorf("PT_INTERP %s: %v, want ErrNoExec", name, err)
		}
	}
	// An empty path is a program whose loader cannot be found (ENOENT).
	c := append([]byte(nil), b...)
	c[off] = 0
	if f, err := Parse(c); err != nil || !f.Dynamic || f.Interp != "" {
		t.Errorf("empty PT_INTERP: %v", err)
	}
}

func TestParseInterp(t *testing.T) {
	b, err := os.ReadFile("/lib64/ld-linux-x86-64.so.2")
	if err != nil {
		t.Skip("no /lib64/ld-linux-x86-64.so.2")
	}
	f, err := ParseInterp(b)
	if err != nil || f.Type != etDyn || f.Dynamic {
		t.Fatalf("ld.so: %v", err)
	}
	for name, img := range map[string][]byte{
		"script":     []byte("#!/bin/sh\n"),
		"not x86-64": append(append([]byte(nil), b[:18]...), append([]byte{183, 0}, b[20:]...)...),
		"cut":        b[:100],
	} {
		if _, err := ParseInterp(img); !errors.Is(err, ErrBadInterp) {
			t.Errorf("loader %s: %v, want ErrBadInterp", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if file, err := Parse(b); err == nil {
			for _, s := range file.Segments {
				if s.Off+s.Filesz > uint64(len(b)) {
					t.Fatalf("accepted segment outside the file")
				}
			}
		}
	})
}

// TestParseHead checks a parse from the head of a file: the same result
// as from the whole file when the headers are in the head, ErrShortHead
// when they are not, and segments still checked against the file's size.
func TestParseHead(t *testing.T) {
	b, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Skip("no /bin/ls")
	}
	whole, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseHead(b[:4096], uint64(len(b)))
	if err != nil || f.Interp != whole.Interp || len(f.Segments) != len(whole.Segments) || f.Entry != whole.Entry {
		t.Fatalf("head of /bin/ls: %v, %+v", err, f)
	}
	if _, err := ParseHead(b[:100], uint64(len(b))); err != ErrShortHead {
		t.Errorf("program headers past a 100-byte head: %v, want ErrShortHead", err)
	}
	if _, err := ParseInterpHead(b[:100], uint64(len(b))); err != ErrShortHead {
		t.Errorf("a loader's program headers past the head: %v, want ErrShortHead", err)
	}
	// A file cut short of its last segment is refused from its head too.
	last := whole.Segments[len(whole.Segments)-1]
	if _, err := ParseHead(b[:4096], last.Off+last.Filesz-1); !errors.Is(err, ErrNoExec) {
		t.Errorf("segment past the file's size: %v, want ErrNoExec", err)
	}
	if _, err := ParseHead(b[:40], 40); !errors.Is(err, ErrNoExec) {
		t.Errorf("a 40-byte file: %v, want ErrNoExec", err)
	}
}
