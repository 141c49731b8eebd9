package classify

import (
	"debug/dwarf"
	"sort"
)

// inlRange is one PC range of one inlined call (DW_TAG_inlined_subroutine).
type inlRange struct {
	lo, hi   uint64
	depth    int    // nesting depth below the out-of-line function (1 = inlined into it)
	name     string // the inlined function
	callFile string // where it was inlined, in its caller
	callLine int
}

// inlineIndex holds every inlined call's ranges, sorted by lo.
type inlineIndex struct {
	r []inlRange
}

func newInlineIndex(d *dwarf.Data) (*inlineIndex, error) {
	type pending struct {
		inlRange
		origin dwarf.Offset
		ranges [][2]uint64
	}
	names := map[dwarf.Offset]string{}
	var ps []pending
	var files []*dwarf.LineFile
	depth := 0    // DIE tree depth
	subDepth := 0 // tree depth of the current out-of-line subprogram
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		switch e.Tag {
		case dwarf.TagCompileUnit:
			files = nil
			if lr, err := d.LineReader(e); err == nil && lr != nil {
				files = lr.Files()
			}
		case dwarf.TagSubprogram:
			if n, ok := e.Val(dwarf.AttrName).(string); ok {
				names[e.Offset] = n
			}
			subDepth = depth
		case dwarf.TagInlinedSubroutine:
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			p := pending{origin: origin}
			p.depth = depth - subDepth
			if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && int(i) < len(files) && files[i] != nil {
				p.callFile = files[i].Name
			}
			if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
				p.callLine = int(l)
			}
			p.ranges, _ = d.Ranges(e)
			ps = append(ps, p)
		}
		if e.Children {
			depth++
		}
	}
	idx := &inlineIndex{}
	for _, p := range ps {
		p.name = names[p.origin]
		for _, rg := range p.ranges {
			if rg[1] > rg[0] {
				q := p.inlRange
				q.lo, q.hi = rg[0], rg[1]
				idx.r = append(idx.r, q)
			}
		}
	}
	sort.SliceStable(idx.r, func(i, j int) bool { return idx.r[i].lo < idx.r[j].lo })
	return idx, nil
}

// within returns the ranges that start in [lo, hi).
func (x *inlineIndex) within(lo, hi uint64) []inlRange {
	i := sort.Search(len(x.r), func(i int) bool { return x.r[i].lo >= lo })
	j := sort.Search(len(x.r), func(i int) bool { return x.r[i].lo >= hi })
	return x.r[i:j]
}

// at returns the inlined calls covering pc, outermost first; entry is
// the start of pc's function.
func (x *inlineIndex) at(pc, entry uint64) []inlRange {
	var out []inlRange
	for _, r := range x.within(entry, pc+1) {
		if pc < r.hi {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].depth < out[j].depth })
	return out
}
