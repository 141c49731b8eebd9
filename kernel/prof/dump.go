package prof

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
)

// RecordSize is the size of one sample record, as the machine layer writes
// it: PC (8 bytes), CPU index (2), flags (2), reserved (4), little-endian.
const RecordSize = 16

// Sample flags.
const (
	FlagIdle     = 1 // the CPU was running its idle thread
	FlagIRQOff   = 2 // interrupts were off (machine-layer trap context)
	FlagUserMode = 4 // the CPU was in user mode
)

// Sample is one decoded record.
type Sample struct {
	PC    uint64
	CPU   uint16
	Flags uint16
}

// Decode turns raw records into samples.
func Decode(raw []byte) []Sample {
	s := make([]Sample, 0, len(raw)/RecordSize)
	for len(raw) >= RecordSize {
		s = append(s, Sample{
			PC:    binary.LittleEndian.Uint64(raw),
			CPU:   binary.LittleEndian.Uint16(raw[8:]),
			Flags: binary.LittleEndian.Uint16(raw[10:]),
		})
		raw = raw[RecordSize:]
	}
	return s
}

// WriteDump writes one measurement section in the format bench/hlltax
// reads from a serial log:
//
//	hlltax-begin key=value ...
//	hs:<base64 of the records, at most 76 characters a line>
//	hlltax-end
//
// meta keys are written sorted so dumps of equal runs compare equal.
func WriteDump(w io.Writer, meta map[string]string, raw []byte) error {
	keys := make([]string, 0, len(meta))
	for k := range meta {
		if strings.ContainsAny(k, " =\n") || strings.ContainsAny(meta[k], " \n") {
			return fmt.Errorf("prof: bad dump key or value %q=%q", k, meta[k])
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("hlltax-begin")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, meta[k])
	}
	b.WriteString("\n")
	enc := base64.StdEncoding.EncodeToString(raw)
	for len(enc) > 0 {
		n := min(76, len(enc))
		b.WriteString("hs:")
		b.WriteString(enc[:n])
		b.WriteString("\n")
		enc = enc[n:]
	}
	b.WriteString("hlltax-end\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ParseKeyValues splits "k=v k=v" into a map (for meta built from
// GCWindow.KeyValues).
func ParseKeyValues(s string) map[string]string {
	m := make(map[string]string)
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}
