package main

import (
	"os"
	"strings"
	"testing"
)

// TestTableAndDocument checks the support notes against the table and
// that docs/syscalls.md is what the tool writes now.
func TestTableAndDocument(t *testing.T) {
	calls, notes, err := load("../../kernel/proc")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 150 {
		t.Fatalf("found only %d calls in the table: the parser misses entries", len(calls))
	}
	if err := check(calls, notes); err != nil {
		t.Fatal(err)
	}
	linux, err := linuxCalls(unistd)
	if err != nil {
		t.Skipf("no Linux numbers on this host: %v", err)
	}
	for _, c := range calls {
		if name, ok := linux[c.No]; ok && name != c.Name {
			t.Errorf("table entry %d is %q, Linux's is %q", c.No, c.Name, name)
		}
	}
	doc, err := os.ReadFile("../../docs/syscalls.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != render(calls, notes, linux) {
		t.Errorf("docs/syscalls.md is stale: run go run ./tools/systable")
	}
}

func TestCheckCatchesMistakes(t *testing.T) {
	calls := []Call{{No: 1, Name: "write", Handler: "sysWrite"}, {No: 334, Name: "rseq", Handler: "sysNosys"}}
	for _, bad := range []map[string]Note{
		{"rseq": {Level: "unsupported", Text: "x"}, "nosuch": {Level: "partial", Text: "x"}},
		{"rseq": {Level: "partial", Text: "x"}},
		{},
		{"rseq": {Level: "unsupported", Text: "x"}, "write": {Level: "unsupported", Text: "x"}},
		{"rseq": {Level: "unsupported", Text: "x"}, "write": {Level: "missing", Text: "x"}},
	} {
		if err := check(calls, bad); err == nil {
			t.Errorf("check accepted %v", bad)
		}
	}
	if err := check(calls, map[string]Note{"rseq": {Level: "unsupported", Text: "why"}, "write": {Level: "supported", Text: "untested"}}); err != nil {
		t.Errorf("good notes refused: %v", err)
	}
	if !strings.Contains(render(calls, map[string]Note{"rseq": {Level: "unsupported", Text: "why"}}, map[int]string{0: "read", 1: "write", 334: "rseq"}), "| 0 | read | missing | |") {
		t.Error("a missing call is not listed")
	}
}
