package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ledger is what the workload reported durable before the cut, read from
// its console lines (user/tests/h_durable.c describes them).
type ledger struct {
	started bool
	seed    string // the workload's, from its start line
	mail    bool   // mail deliveries (workload=mail): every message found must be whole
	files   map[string]*entry
	errors  []string
}

type state int

const (
	durable   state = iota // holds at least size bytes of its pattern
	unlinking              // removal under way: either outcome is right
	gone                   // removal durable: must be absent
)

type entry struct {
	state state
	size  uint64
}

func newLedger() *ledger { return &ledger{files: map[string]*entry{}} }

// line takes one console line of the work boot.
func (l *ledger) line(s string) {
	if !strings.HasSuffix(s, "\n") {
		// The console's last line, cut off by the power cut (h_durable
		// writes each line whole; the serial port sends it a byte at a
		// time): what it reports cannot be read, so it is not checked.
		return
	}
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "start":
		l.started = true
		if len(f) > 1 {
			l.seed = strings.TrimPrefix(f[1], "seed=")
		}
		l.mail = len(f) > 2 && f[2] == "workload=mail"
	case f[0] == "durable" && len(f) == 4:
		size, err1 := strconv.ParseUint(f[2], 10, 64)
		hash, err2 := strconv.ParseUint(f[3], 16, 64)
		if err1 != nil || err2 != nil {
			l.errors = append(l.errors, "malformed line: "+s)
			return
		}
		if want := patternHash(f[1], size); hash != want {
			l.errors = append(l.errors, fmt.Sprintf("%s: the guest's hash %016x is not the pattern's %016x (h_durable and the harness disagree)", f[1], hash, want))
		}
		l.files[f[1]] = &entry{state: durable, size: size}
	case f[0] == "unlink" && len(f) == 2:
		l.files[f[1]] = &entry{state: unlinking}
	case f[0] == "gone" && len(f) == 2:
		l.files[f[1]] = &entry{state: gone}
	case f[0] == "error":
		l.errors = append(l.errors, s)
	}
}

// counts is how many items the ledger holds that a check can verify.
func (l *ledger) counts() (durables, gones int) {
	for _, e := range l.files {
		switch e.state {
		case durable:
			durables++
		case gone:
			gones++
		}
	}
	return
}

// found is one file seen after the cut.
type found struct {
	size, good uint64
	bad        int64 // offset of a stale sector, -1 if none
}

// verify checks what was found against the ledger: every durable file
// present with its durable bytes, every gone file absent, no file with
// bytes that were never written to it. It returns the problems and how
// many ledger items were verified.
func (l *ledger) verify(files map[string]found) (problems []string, verified int) {
	names := make([]string, 0, len(l.files))
	for n := range l.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := l.files[n]
		f, ok := files[n]
		switch e.state {
		case durable:
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: durable with %d bytes, missing", n, e.size))
			case f.size < e.size:
				problems = append(problems, fmt.Sprintf("%s: durable with %d bytes, has %d", n, e.size, f.size))
			case f.good < e.size:
				problems = append(problems, fmt.Sprintf("%s: durable with %d bytes, wrong from byte %d", n, e.size, f.good))
			default:
				verified++
			}
		case gone:
			if ok {
				problems = append(problems, fmt.Sprintf("%s: removal durable, still present (%d bytes)", n, f.size))
			} else {
				verified++
			}
		}
	}
	fnames := make([]string, 0, len(files))
	for n := range files {
		fnames = append(fnames, n)
	}
	sort.Strings(fnames)
	for _, n := range fnames {
		f := files[n]
		if l.mail && strings.HasPrefix(n, "tmp/") {
			// A delivery under way: it holds the pattern of the name
			// it was to be renamed to, unknown here, and counts for
			// nothing (mail tools remove what tmp holds after a crash).
			continue
		}
		if f.bad >= 0 {
			problems = append(problems, fmt.Sprintf("%s: sector at %d holds data never written to it (stale or foreign)", n, f.bad))
		}
		if !l.mail {
			continue
		}
		// A message in a mailbox was fsynced before its rename: found
		// at all, reported durable or not, it must be whole.
		size, ok := messageSize(n)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: not a message's name", n))
		case f.size != size || f.good != size:
			problems = append(problems, fmt.Sprintf("%s: a message of %d bytes found in part (%d bytes, %d right)", n, size, f.size, f.good))
		}
	}
	return problems, verified
}

// messageSize is the size a mail delivery's name carries: d2/w1m7_5120.
func messageSize(name string) (uint64, bool) {
	_, sz, ok := strings.Cut(name, "_")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(sz, 10, 64)
	return n, err == nil
}

// parseCheck reads the check boot's console: the files it found and
// whether it finished ("checked N").
func parseCheck(lines []string) (files map[string]found, finished bool, errs []string) {
	files = map[string]found{}
	for _, s := range lines {
		f := strings.Fields(strings.TrimSpace(s))
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "have" && len(f) == 4:
			size, err1 := strconv.ParseUint(f[2], 10, 64)
			good, err2 := strconv.ParseUint(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				errs = append(errs, "malformed line: "+s)
				continue
			}
			x := files[f[1]]
			x.size, x.good = size, good
			if _, seen := files[f[1]]; !seen {
				x.bad = -1
			}
			files[f[1]] = x
		case f[0] == "bad" && len(f) == 3:
			off, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				errs = append(errs, "malformed line: "+s)
				continue
			}
			x := files[f[1]]
			x.bad = off
			files[f[1]] = x
		case f[0] == "checked":
			finished = true
		case f[0] == "error":
			errs = append(errs, s)
		}
	}
	return files, finished, errs
}
