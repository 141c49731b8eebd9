// Package numa is the machine's NUMA layout as the kernel reports and
// uses it: nodes numbered densely from 0 (the ACPI SRAT's proximity
// domains in ascending order, as Linux numbers its nodes on these
// machines), each with its CPUs and memory, and the distances between
// them (the SLIT's, else 10 local and 20 remote, as Linux assumes). A
// machine without an SRAT is one node. It also formats the files Linux
// keeps under /sys/devices/system/node. Pure logic, host-tested.
package numa

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"shortbread/kernel/acpi"
)

// MaxNodes bounds the nodes kept apart; a machine with more is one node.
const MaxNodes = 16

// Span is a physical range [Base, End).
type Span struct{ Base, End uint64 }

// Node is one NUMA node.
type Node struct {
	CPUs  []int  // CPU numbers, ascending
	Spans []Span // its memory as the SRAT gives it (hot-pluggable ranges included)
	// Present is the usable RAM in Spans, in bytes (the boot memory map's
	// available ranges).
	Present uint64
}

// Topology is the machine's layout.
type Topology struct {
	Nodes   []Node
	CPUNode []int     // node of each CPU number
	Dist    [][]uint8 // Dist[i][j]: distance from node i to node j
}

// Build makes the layout from the SRAT (nil: one node), the SLIT (nil:
// 10 and 20), the local APIC ID of each CPU by number and the usable RAM
// of the boot memory map. CPUs the SRAT does not place go to node 0, as
// does RAM outside its ranges. The reason for falling back to one node,
// if any, is returned with it.
func Build(srat *acpi.SRAT, slit *acpi.SLIT, apicIDs []uint32, ram []Span) (*Topology, string) {
	doms, why := []uint32(nil), ""
	if srat != nil {
		doms = srat.Domains()
	}
	switch {
	case srat == nil:
		why = "no SRAT"
	case len(doms) == 0:
		why, doms = "the SRAT places nothing", nil
	case len(doms) > MaxNodes:
		why, doms = fmt.Sprintf("%d nodes, more than %d", len(doms), MaxNodes), nil
	}
	if doms == nil {
		doms = []uint32{0}
		srat = &acpi.SRAT{}
	}
	node := map[uint32]int{}
	for i, d := range doms {
		node[d] = i
	}
	t := &Topology{Nodes: make([]Node, len(doms)), CPUNode: make([]int, len(apicIDs))}
	for cpu, id := range apicIDs {
		for _, c := range srat.CPUs {
			if c.APICID == id {
				t.CPUNode[cpu] = node[c.Domain]
				break
			}
		}
		n := &t.Nodes[t.CPUNode[cpu]]
		n.CPUs = append(n.CPUs, cpu)
	}
	for _, m := range srat.Memory {
		n := &t.Nodes[node[m.Domain]]
		n.Spans = append(n.Spans, Span{m.Base, m.Base + m.Length})
	}
	for _, r := range ram {
		for p := r.Base; p < r.End; {
			i, end := t.nodeAt(p, r.End)
			t.Nodes[i].Present += end - p
			p = end
		}
	}
	t.Dist = make([][]uint8, len(doms))
	for i := range t.Dist {
		t.Dist[i] = make([]uint8, len(doms))
		for j := range t.Dist[i] {
			switch {
			case slit != nil && int64(doms[i]) < int64(slit.N) && int64(doms[j]) < int64(slit.N):
				t.Dist[i][j] = slit.Distance(int(doms[i]), int(doms[j]))
			case i == j:
				t.Dist[i][j] = 10
			default:
				t.Dist[i][j] = 20
			}
		}
	}
	return t, why
}

// nodeAt is the node of address p and the end of the piece from p up to
// limit that lies in that node (node 0 outside every span).
func (t *Topology) nodeAt(p, limit uint64) (int, uint64) {
	end := limit
	for i, n := range t.Nodes {
		for _, s := range n.Spans {
			if p >= s.Base && p < s.End {
				return i, min(limit, s.End)
			}
			if s.Base > p && s.Base < end {
				end = s.Base
			}
		}
	}
	return 0, end
}

// Order is the order in which CPUs of node n take memory from the nodes:
// nearest first, its own before any other, ties by node number.
func (t *Topology) Order(n int) []int {
	o := make([]int, len(t.Nodes))
	for i := range o {
		o[i] = i
	}
	sort.SliceStable(o, func(a, b int) bool {
		if (o[a] == n) != (o[b] == n) {
			return o[a] == n
		}
		return t.Dist[n][o[a]] < t.Dist[n][o[b]]
	})
	return o
}

// List formats numbers as Linux's cpulist and node lists do: ascending
// ranges, "0-3,6,8-9".
func List(xs []int) string {
	s := append([]int(nil), xs...)
	sort.Ints(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Meminfo is node n's /sys/devices/system/node/nodeN/meminfo, in Linux's
// format, from its total and free memory in KiB.
func Meminfo(n int, totalKB, freeKB uint64) []byte {
	var b strings.Builder
	used := totalKB - min(freeKB, totalKB)
	for _, l := range []struct {
		key string
		kb  uint64
	}{{"MemTotal", totalKB}, {"MemFree", freeKB}, {"MemUsed", used}} {
		fmt.Fprintf(&b, "Node %d %-15s %8d kB\n", n, l.key+":", l.kb)
	}
	return []byte(b.String())
}

// Distance is node n's distance file: its distance to every node.
func (t *Topology) Distance(n int) string {
	f := make([]string, len(t.Nodes))
	for j, d := range t.Dist[n] {
		f[j] = strconv.Itoa(int(d))
	}
	return strings.Join(f, " ")
}
