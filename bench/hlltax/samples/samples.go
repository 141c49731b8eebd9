// Package samples reads the kernel's profiler sample dumps from a serial
// log.
//
// # Format
//
// One measurement is a section of lines:
//
//	hlltax-begin key=value key=value ...
//	hs:<base64>
//	hs:<base64>
//	...
//	hlltax-end
//
// The begin line's key=value pairs describe the window; the kernel writes
// at least hz= (sampling rate per CPU), source= (nmi-hpet or lapic-timer),
// cpus= (CPU count) and ns= (window length in nanoseconds), and may add
// samples= (records written), dropped= (samples lost to full buffers) and
// any gc_*=, bench_* or other metrics. Keys and values contain no blanks.
//
// The hs: lines carry one standard (RFC 4648, padded) base64 encoding of
// the sample blob, split into lines of at most 76 characters; joined, they
// decode to the blob. The blob is a sequence of 16-byte little-endian
// records:
//
//	offset 0  uint64  PC of the interrupted instruction
//	offset 8  uint16  CPU index
//	offset 10 uint16  flags: bit 0 idle thread, bit 1 interrupts were off
//	                  (machine-layer trap context), bit 2 user mode
//	offset 12 [4]byte reserved, zero
//
// A log may hold any number of sections, and anything else: Parse skips
// other lines, carriage returns, and text before the markers (a console
// prefix; the hs: marker must not follow a letter). A line the serial
// console garbled (an hs: line that is not valid base64, or other output
// that landed inside one) loses its bytes: assuming every hs: line but the
// last is 76 characters long, Parse keeps the records around it and drops
// only those that overlapped it. A section without hlltax-end (a log cut
// short, or a new hlltax-begin) is returned with Ended false.
package samples

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// RecordSize is the size of one record in the blob.
const RecordSize = 16

// Flags of a sample.
const (
	FlagIdle   = 1 << 0 // the CPU was running its idle thread
	FlagIRQOff = 1 << 1 // interrupts were off: machine-layer trap context
	FlagUser   = 1 << 2 // the CPU was in user mode
)

// Sample is one record.
type Sample struct {
	PC    uint64
	CPU   uint16
	Flags uint16
}

// Idle reports whether the CPU was idle.
func (s Sample) Idle() bool { return s.Flags&FlagIdle != 0 }

// IRQOff reports whether interrupts were off.
func (s Sample) IRQOff() bool { return s.Flags&FlagIRQOff != 0 }

// User reports whether the CPU was in user mode.
func (s Sample) User() bool { return s.Flags&FlagUser != 0 }

// Kernel reports whether the sample counts as kernel time: neither idle
// nor in user mode.
func (s Sample) Kernel() bool { return s.Flags&(FlagIdle|FlagUser) == 0 }

// Section is one hlltax-begin … hlltax-end block.
type Section struct {
	Meta    map[string]string // every key=value of the begin line
	Samples []Sample
	Line    int  // line number of the begin line, from 1
	Ended   bool // the hlltax-end line was seen
	// BadLines counts hs: lines that did not decode; LostRecords the
	// records dropped because they overlapped one, or a partial record at
	// the end of the blob.
	BadLines    int
	LostRecords int
}

// Hz returns the hz= value, 0 if absent or malformed.
func (s *Section) Hz() int { return s.int("hz") }

// CPUs returns the cpus= value, 0 if absent.
func (s *Section) CPUs() int { return s.int("cpus") }

// NS returns the ns= value (window length), 0 if absent.
func (s *Section) NS() int64 {
	v, _ := strconv.ParseInt(s.Meta["ns"], 10, 64)
	return v
}

// Source returns the source= value.
func (s *Section) Source() string { return s.Meta["source"] }

func (s *Section) int(key string) int {
	v, _ := strconv.Atoi(s.Meta[key])
	return v
}

// Check reports problems with the section: no end line, undecodable
// lines, or a samples= count that does not match.
func (s *Section) Check() error {
	var probs []string
	if !s.Ended {
		probs = append(probs, "no hlltax-end line")
	}
	if s.BadLines > 0 {
		probs = append(probs, fmt.Sprintf("%d garbled hs: lines (%d records lost)", s.BadLines, s.LostRecords))
	} else if s.LostRecords > 0 {
		probs = append(probs, fmt.Sprintf("%d records lost", s.LostRecords))
	}
	if v, ok := s.Meta["samples"]; ok {
		if n, err := strconv.Atoi(v); err != nil || n != len(s.Samples)+s.LostRecords {
			probs = append(probs, fmt.Sprintf("samples=%s but %d records read", v, len(s.Samples)+s.LostRecords))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("section at line %d: %s", s.Line, strings.Join(probs, "; "))
}

const (
	beginMark = "hlltax-begin"
	endMark   = "hlltax-end"
	dataMark  = "hs:"
	lineChars = 76 // characters of a full hs: line
)

// Parse reads every section of a log.
func Parse(r io.Reader) ([]*Section, error) {
	var secs []*Section
	var cur *Section
	var lines []string
	finish := func() {
		if cur != nil {
			cur.decode(lines)
			secs = append(secs, cur)
		}
		cur, lines = nil, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r\n ")
		if i := strings.Index(line, beginMark); i >= 0 && (i+len(beginMark) == len(line) || line[i+len(beginMark)] == ' ') {
			finish()
			cur = &Section{Meta: parseMeta(line[i+len(beginMark):]), Line: n}
			continue
		}
		if cur == nil {
			continue
		}
		if i := strings.Index(line, endMark); i >= 0 && strings.TrimSpace(line[i+len(endMark):]) == "" {
			cur.Ended = true
			finish()
			continue
		}
		if d, ok := dataLine(line); ok {
			lines = append(lines, d)
		}
	}
	finish()
	return secs, sc.Err()
}

// ParseFile reads every section of the log file at path.
func ParseFile(path string) ([]*Section, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// dataLine returns the payload of an hs: line. The marker may follow other
// text (a console prefix, or output of another CPU that landed on the same
// line), but not a letter, so that "paths: x" is no data line.
func dataLine(line string) (string, bool) {
	i := strings.LastIndex(line, dataMark)
	if i < 0 || (i > 0 && unicode.IsLetter(rune(line[i-1]))) {
		return "", false
	}
	return line[i+len(dataMark):], true
}

func parseMeta(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// decode turns the hs: payloads into samples.
func (s *Section) decode(lines []string) {
	joined := strings.Join(lines, "")
	if blob, err := base64.StdEncoding.DecodeString(joined); err == nil {
		s.records(blob, nil)
		return
	}
	// Some line is garbled: decode line by line, placing each at the
	// offset a full line would have, and drop the records that overlap a
	// bad line.
	var blob []byte
	var holes [][2]int
	for i, l := range lines {
		b, err := base64.StdEncoding.DecodeString(l)
		last := i == len(lines)-1
		if err != nil || (!last && len(l) != lineChars) {
			s.BadLines++
			n := lineChars / 4 * 3
			if last {
				n = len(l) / 4 * 3 // best guess
			}
			holes = append(holes, [2]int{len(blob), len(blob) + n})
			blob = append(blob, make([]byte, n)...)
			continue
		}
		blob = append(blob, b...)
	}
	s.records(blob, holes)
}

func (s *Section) records(blob []byte, holes [][2]int) {
	for off := 0; off+RecordSize <= len(blob); off += RecordSize {
		bad := false
		for _, h := range holes {
			if off < h[1] && off+RecordSize > h[0] {
				bad = true
			}
		}
		if bad {
			s.LostRecords++
			continue
		}
		r := blob[off:]
		s.Samples = append(s.Samples, Sample{
			PC:    binary.LittleEndian.Uint64(r),
			CPU:   binary.LittleEndian.Uint16(r[8:]),
			Flags: binary.LittleEndian.Uint16(r[10:]),
		})
	}
	if len(blob)%RecordSize != 0 {
		s.LostRecords++
	}
}

// Encode returns the blob for samples.
func Encode(samples []Sample) []byte {
	blob := make([]byte, RecordSize*len(samples))
	for i, s := range samples {
		r := blob[i*RecordSize:]
		binary.LittleEndian.PutUint64(r, s.PC)
		binary.LittleEndian.PutUint16(r[8:], s.CPU)
		binary.LittleEndian.PutUint16(r[10:], s.Flags)
	}
	return blob
}

// Write writes one section in the dump format, meta keys sorted. It is
// the reference for the kernel's writer and the tests.
func Write(w io.Writer, meta map[string]string, samples []Sample) error {
	keys := make([]string, 0, len(meta))
	for k, v := range meta {
		if k == "" || strings.ContainsAny(k, " =\r\n") || strings.ContainsAny(v, " \r\n") {
			return fmt.Errorf("samples: bad key or value %q=%q", k, v)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	bw.WriteString(beginMark)
	for _, k := range keys {
		fmt.Fprintf(bw, " %s=%s", k, meta[k])
	}
	bw.WriteString("\n")
	enc := base64.StdEncoding.EncodeToString(Encode(samples))
	for len(enc) > 0 {
		n := min(lineChars, len(enc))
		bw.WriteString(dataMark + enc[:n] + "\n")
		enc = enc[n:]
	}
	bw.WriteString(endMark + "\n")
	return bw.Flush()
}
