package main

import (
	"fmt"
	"strings"
	"testing"
)

func pattern(name string, n int) []byte {
	p := make([]byte, n)
	fillPattern(p, patternKey(name), 0)
	return p
}

func TestPatternIsRandomAccess(t *testing.T) {
	whole := pattern("d1/f7", 5000)
	part := make([]byte, 1000)
	fillPattern(part, patternKey("d1/f7.tmp"), 3001) // the .tmp name has the same pattern
	if string(part) != string(whole[3001:4001]) {
		t.Fatal("the pattern from an offset differs from the whole")
	}
	if string(pattern("d1/f8", 64)) == string(whole[:64]) {
		t.Fatal("two names share a pattern")
	}
	if patternHash("d1/f7", 5000) != fnv(whole, fnvBasis) {
		t.Fatal("patternHash is not the hash of the pattern")
	}
}

func TestJudgeContents(t *testing.T) {
	p := pattern("d0/f1", 3000)
	if good, bad := judgeContents("d0/f1", p); good != 3000 || bad != -1 {
		t.Fatalf("the pattern itself: good %d bad %d", good, bad)
	}
	z := append([]byte{}, p...)
	clear(z[1024:1536]) // a hole: zeros are never stale data
	if good, bad := judgeContents("d0/f1", z); good != 1024 || bad != -1 {
		t.Fatalf("with a hole: good %d bad %d", good, bad)
	}
	g := append([]byte{}, p...)
	copy(g[2048:], pattern("d0/f2", 512)) // another file's data
	if good, bad := judgeContents("d0/f1", g); good != 2048 || bad != 2048 {
		t.Fatalf("with foreign data: good %d bad %d", good, bad)
	}
	g[100] ^= 1
	if good, _ := judgeContents("d0/f1", g); good != 100 {
		t.Fatalf("one byte flipped at 100: good %d", good)
	}
	// A durable end of file inside a sector, then zeros: a later write
	// grew the file and its data did not land (seen after a Linux cut:
	// d2/w1f48, pattern to 47,872 of 49,152 bytes, zeros after).
	e := pattern("d2/w1f48", 49152)
	clear(e[47872:])
	if good, bad := judgeContents("d2/w1f48", e); good < 47872 || bad != -1 {
		t.Fatalf("zeros after an end of file inside a sector: good %d bad %d", good, bad)
	}
	// Anything else after that end in the same sector is stale.
	e[48000] = 1
	if _, bad := judgeContents("d2/w1f48", e); bad != 47616 {
		t.Fatalf("non-zero byte after the end of file: bad %d, want 47616", bad)
	}
}

func ledgerOf(t *testing.T, lines ...string) *ledger {
	l := newLedger()
	for _, s := range lines {
		l.line(s + "\n")
	}
	if len(l.errors) > 0 {
		t.Fatalf("ledger errors: %v", l.errors)
	}
	return l
}

func durableLine(name string, size uint64) string {
	return fmt.Sprintf("durable %s %d %016x", name, size, patternHash(name, size))
}

func TestLedgerVerify(t *testing.T) {
	l := ledgerOf(t, "start",
		durableLine("d0/f1", 100), durableLine("d0/f1", 5000), // appended
		durableLine("d1/f2", 0),
		durableLine("d2/f3", 10), "unlink d2/f3", // removal under way
		durableLine("d3/f4", 10), "unlink d3/f4", "gone d3/f4")
	if d, g := l.counts(); d != 2 || g != 1 {
		t.Fatalf("counts: %d durable, %d gone", d, g)
	}
	ok := map[string]found{
		"d0/f1":     {size: 6000, good: 5100, bad: -1}, // a later append in flight
		"d1/f2":     {size: 0, good: 0, bad: -1},
		"d2/f3":     {size: 10, good: 10, bad: -1},
		"d0/s9":     {size: 4096, good: 512, bad: -1}, // unsynced scratch
		"d1/f5.tmp": {size: 0, bad: -1},
	}
	if p, v := l.verify(ok); len(p) != 0 || v != 3 {
		t.Fatalf("a good image: problems %v, %d verified", p, v)
	}
	for _, c := range []struct {
		change func(map[string]found)
		want   string
	}{
		{func(m map[string]found) { delete(m, "d1/f2") }, "d1/f2: durable with 0 bytes, missing"},
		{func(m map[string]found) { m["d0/f1"] = found{size: 4096, good: 4096, bad: -1} }, "d0/f1: durable with 5000 bytes, has 4096"},
		{func(m map[string]found) { m["d0/f1"] = found{size: 5000, good: 4096, bad: -1} }, "wrong from byte 4096"},
		{func(m map[string]found) { m["d3/f4"] = found{size: 10, good: 10, bad: -1} }, "d3/f4: removal durable, still present"},
		{func(m map[string]found) { m["d0/s9"] = found{size: 4096, good: 512, bad: 1024} }, "d0/s9: sector at 1024 holds data never written"},
	} {
		m := map[string]found{}
		for k, v := range ok {
			m[k] = v
		}
		c.change(m)
		p, _ := l.verify(m)
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("want a problem %q, got %v", c.want, p)
		}
	}
	delete(ok, "d2/f3") // the removal under way may have happened
	if p, _ := l.verify(ok); len(p) != 0 {
		t.Fatalf("removal under way, file gone: %v", p)
	}
}

// TestLedgerMail: with the mail workload every message found in a
// mailbox must be whole, reported durable or not; tmp holds anything.
func TestLedgerMail(t *testing.T) {
	l := ledgerOf(t, "start seed=1 workload=mail", durableLine("d0/m1_300", 300), durableLine("d2/w1m4_9000", 9000))
	if !l.mail {
		t.Fatal("the start line's workload=mail was not read")
	}
	ok := map[string]found{
		"d0/m1_300":    {size: 300, good: 300, bad: -1},
		"d2/w1m4_9000": {size: 9000, good: 9000, bad: -1},
		"d1/m5_4000":   {size: 4000, good: 4000, bad: -1}, // renamed, not yet reported
		"tmp/m6":       {size: 512, good: 0, bad: 0},      // a delivery under way
	}
	if p, v := l.verify(ok); len(p) != 0 || v != 2 {
		t.Fatalf("a good image: problems %v, %d verified", p, v)
	}
	for _, c := range []struct {
		name string
		f    found
		want string
	}{
		{"d1/m5_4000", found{size: 4000, good: 3584, bad: -1}, "d1/m5_4000: a message of 4000 bytes found in part"},
		{"d1/m5_4000", found{size: 3072, good: 3072, bad: -1}, "found in part (3072 bytes"},
		{"d3/m9", found{size: 1, good: 1, bad: -1}, "d3/m9: not a message's name"},
	} {
		m := map[string]found{}
		for k, v := range ok {
			m[k] = v
		}
		m[c.name] = c.f
		p, _ := l.verify(m)
		if len(p) != 1 || !strings.Contains(p[0], c.want) {
			t.Errorf("want a problem %q, got %v", c.want, p)
		}
	}
	if l := ledgerOf(t, "start seed=1"); l.mail {
		t.Error("workload=mail without it on the start line")
	}
}

func TestLedgerRefusesWrongHash(t *testing.T) {
	l := newLedger()
	l.line("durable d0/f1 100 0123456789abcdef\n")
	if len(l.errors) != 1 {
		t.Fatal("a hash that is not the pattern's was accepted")
	}
	l.line("error write: No space left on device\n")
	if len(l.errors) != 2 {
		t.Fatal("the guest's error line was not kept")
	}
}

func TestParseCheck(t *testing.T) {
	files, done, errs := parseCheck([]string{"# module x\n", "have d0/f1 5000 5000\n", "have d0/s2 4096 12\n", "bad d0/s2 512\n", "checked 2\n"})
	if !done || len(errs) != 0 || len(files) != 2 || files["d0/f1"].bad != -1 || files["d0/s2"].bad != 512 || files["d0/s2"].good != 12 {
		t.Fatalf("parsed %+v done %v errs %v", files, done, errs)
	}
	if _, done, _ := parseCheck([]string{"have d0/f1 1 1\n"}); done {
		t.Fatal("finished without a checked line")
	}
}

// TestCutLine: the console's last line, cut off by the power cut (no
// newline), is not read: its truncated hash would look like a wrong one.
func TestCutLine(t *testing.T) {
	l := newLedger()
	l.line("durable d2/f251 14895 29d76a")
	if len(l.errors) != 0 || len(l.files) != 0 {
		t.Errorf("a cut-off line was read: errors %v, files %d", l.errors, len(l.files))
	}
	l.line("durable d2/f251 14895 29d76a\n")
	if len(l.errors) == 0 {
		t.Error("a whole line with a wrong hash was accepted")
	}
}
