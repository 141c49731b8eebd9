package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/samples"
)

// ProfileOptions select what goes into the profile.
type ProfileOptions struct {
	Binary      string // kernel ELF path, recorded in the mapping
	IncludeIdle bool   // also idle samples (label mode=idle)
	IncludeUser bool   // also user-mode samples (label mode=user)
}

// Profile builds one pprof profile from the sections: one sample per
// distinct PC (and section and mode), valued in samples and, when the
// rate is known, CPU nanoseconds. Every sample carries the labels
// class=GC|Prologue|WriteBarrier|Safety|Other and mode=kernel|idle|user,
// and section=N when there is more than one section. Locations have the
// function names and, with a Framer, inlined frames and file:line.
func Profile(sym Symbolizer, secs []*samples.Section, opt ProfileOptions) (*profile.Profile, error) {
	fr, _ := sym.(Framer)
	hz := 0
	var ns int64
	for _, s := range secs {
		if hz == 0 {
			hz = s.Hz()
		} else if s.Hz() != hz {
			hz = -1 // mixed rates: no time values
		}
		ns += s.NS()
	}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}},
		DurationNanos: ns,
	}
	period := int64(0)
	if hz > 0 {
		period = int64(1e9 / hz)
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
		p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.Period = period
	}
	p.DefaultSampleType = "samples"

	type key struct {
		pc      uint64
		section int
		mode    string
	}
	counts := map[key]int64{}
	lo, hi := ^uint64(0), uint64(0)
	for i, s := range secs {
		for _, x := range s.Samples {
			mode := "kernel"
			switch {
			case x.Idle():
				if !opt.IncludeIdle {
					continue
				}
				mode = "idle"
			case x.User():
				if !opt.IncludeUser {
					continue
				}
				mode = "user"
			}
			counts[key{x.PC, i, mode}]++
			lo, hi = min(lo, x.PC), max(hi, x.PC)
		}
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("report: no samples for the profile")
	}
	m := &profile.Mapping{ID: 1, Start: lo, Limit: hi + 1, File: opt.Binary,
		HasFunctions: true, HasFilenames: fr != nil, HasLineNumbers: fr != nil, HasInlineFrames: fr != nil}
	p.Mapping = []*profile.Mapping{m}

	funcs := map[[2]string]*profile.Function{}
	function := func(name, file string) *profile.Function {
		if f := funcs[[2]string{name, file}]; f != nil {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: file}
		funcs[[2]string{name, file}] = f
		p.Function = append(p.Function, f)
		return f
	}
	locs := map[uint64]*profile.Location{}
	location := func(pc uint64) (*profile.Location, classify.Class) {
		cl, name := sym.Class(pc)
		if l := locs[pc]; l != nil {
			return l, cl
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Address: pc}
		var frames []classify.Frame
		if fr != nil && name != "" {
			frames = fr.Frames(pc)
		}
		if len(frames) == 0 {
			if name == "" {
				name = unknownFunc
			}
			frames = []classify.Frame{{Func: name}}
		}
		for _, f := range frames {
			l.Line = append(l.Line, profile.Line{Function: function(f.Func, f.File), Line: int64(f.Line)})
		}
		locs[pc] = l
		p.Location = append(p.Location, l)
		return l, cl
	}

	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.pc != b.pc {
			return a.pc < b.pc
		}
		if a.section != b.section {
			return a.section < b.section
		}
		return a.mode < b.mode
	})
	for _, k := range keys {
		l, cl := location(k.pc)
		n := counts[k]
		s := &profile.Sample{
			Location: []*profile.Location{l},
			Value:    []int64{n},
			Label:    map[string][]string{"class": {cl.String()}, "mode": {k.mode}},
		}
		if period > 0 {
			s.Value = append(s.Value, n*period)
		}
		if len(secs) > 1 {
			s.Label["section"] = []string{strconv.Itoa(k.section + 1)}
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteProfile builds the profile and writes it gzip-compressed.
func WriteProfile(w io.Writer, sym Symbolizer, secs []*samples.Section, opt ProfileOptions) error {
	p, err := Profile(sym, secs, opt)
	if err != nil {
		return err
	}
	return p.Write(w)
}
