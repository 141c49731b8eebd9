// Package sampler runs the machine layer's sampling profiler: it gives
// every CPU a sample buffer, starts and stops sampling around a
// measurement window, and writes the samples with the window's GC figures
// in the dump format of package prof.
package sampler

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"shortbread/kernel/drivers/hpet"
	"shortbread/kernel/machine"
	"shortbread/kernel/prof"
)

// Session is one running measurement.
type Session struct {
	bufs   [][]byte
	pb     []machine.ProfBuffer
	source int
	timer  *hpet.Timer // the NMI source's timer, if it is one
	hz     int
	start  time.Time
	gc0    prof.GCStats
}

// Result is a finished measurement.
type Result struct {
	Raw     []byte   // records of every CPU, CPU 0's first
	Counts  []uint64 // samples recorded per CPU
	Dropped []uint64 // samples lost to full buffers per CPU
	Echoes  uint64   // doubled interrupts discarded (see Stop)
	Source  string   // "nmi-hpet" or "lapic-timer"
	Hz      int
	Wall    time.Duration
	GC      prof.GCWindow
}

// Start begins sampling every CPU hz times a second, with room for perCPU
// samples each. hpetAddr is the HPET's physical address, 0 if there is
// none; with a periodic HPET timer whose interrupt the machine layer can
// make an NMI to every CPU, samples come from it.
func Start(hz, perCPU int, hpetAddr uint64) (*Session, error) {
	n := machine.NumCPU()
	s := &Session{hz: hz}
	for i := 0; i < n; i++ {
		b := make([]byte, perCPU*prof.RecordSize)
		// The NMI handler cannot take page faults: commit every page now.
		for j := 0; j < len(b); j += 4096 {
			b[j] = 0xff
		}
		s.bufs = append(s.bufs, b)
		s.pb = append(s.pb, machine.ProfBuffer{Addr: uint64(uintptr(unsafe.Pointer(&b[0]))), Cap: uint64(perCPU)})
	}
	s.gc0 = prof.ReadGC()
	s.start = time.Now()
	pin := -1
	if hpetAddr != 0 {
		if t, err := hpet.Periodic(hpet.MMIO(machine.PhysAddr(uintptr(hpetAddr))), hz); err == nil {
			s.timer, pin = t, t.Pin
		}
	}
	src, err := machine.ProfStart(s.pb, hz, pin)
	if err != nil {
		return nil, fmt.Errorf("sampler: %v", err)
	}
	s.source = src
	if src == machine.ProfSourceNMI {
		s.timer.Start()
	}
	return s, nil
}

// Stop ends sampling and collects the samples.
func (s *Session) Stop() *Result {
	if s.source == machine.ProfSourceNMI {
		s.timer.Stop()
	}
	machine.ProfStop()
	wall := time.Since(s.start)
	gc1 := prof.ReadGC()
	r := &Result{Hz: s.hz, Wall: wall, GC: prof.Window(s.gc0, gc1), Source: "lapic-timer"}
	if s.source == machine.ProfSourceNMI {
		r.Source = "nmi-hpet"
	}
	// An interrupt source can fire twice for one period (QEMU 7.2's HPET
	// re-arms 10 ns later when the counter equals the comparator, which
	// -icount makes exact): a second sample less than half a period after
	// the previous one on the same CPU is that echo, not a sample.
	half := uint32(machine.TSCHz() / uint64(s.hz) / 2)
	for i, b := range s.bufs {
		n, dropped := machine.ProfCount(i)
		n = min(n, uint64(len(b)/prof.RecordSize))
		kept := uint64(0)
		var last uint32
		for j := uint64(0); j < n; j++ {
			rec := b[j*prof.RecordSize : (j+1)*prof.RecordSize]
			tsc := binary.LittleEndian.Uint32(rec[12:])
			if j > 0 && tsc-last < half {
				r.Echoes++
				continue
			}
			last = tsc
			r.Raw = append(r.Raw, rec...)
			kept++
		}
		r.Counts = append(r.Counts, kept)
		r.Dropped = append(r.Dropped, dropped)
	}
	// The buffers were reachable through uintptrs only; keep them alive
	// until sampling has stopped.
	for i := range s.bufs {
		s.bufs[i] = nil
	}
	return r
}

// Dump writes the result, with extra key=values (the benchmark's own
// figures), for bench/hlltax.
func (r *Result) Dump(w io.Writer, extra map[string]string) error {
	meta := map[string]string{
		"hz":     strconv.Itoa(r.Hz),
		"source": r.Source,
		"cpus":   strconv.Itoa(len(r.Counts)),
		"ns":     strconv.FormatInt(r.Wall.Nanoseconds(), 10),
	}
	var total, dropped uint64
	for i := range r.Counts {
		total += r.Counts[i]
		dropped += r.Dropped[i]
	}
	meta["samples"] = strconv.FormatUint(total, 10)
	meta["dropped"] = strconv.FormatUint(dropped, 10)
	meta["echoes"] = strconv.FormatUint(r.Echoes, 10)
	var kv strings.Builder
	r.GC.KeyValues(&kv)
	for k, v := range prof.ParseKeyValues(kv.String()) {
		meta[k] = v
	}
	for k, v := range extra {
		meta[k] = v
	}
	return prof.WriteDump(w, meta, r.Raw)
}
