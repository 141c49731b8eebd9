package numa

import (
	"reflect"
	"strings"
	"testing"

	"shortbread/kernel/acpi"
)

// twoNodes is QEMU's -numa layout for 2 GiB and 4 CPUs, CPUs 0-1 on node
// 0 and 2-3 on node 1, with the SLIT QEMU gives for dist 0-1 = 21.
func twoNodes(t *testing.T) *Topology {
	srat := &acpi.SRAT{
		CPUs: []acpi.CPUAffinity{{APICID: 0, Domain: 0}, {APICID: 1, Domain: 0}, {APICID: 2, Domain: 1}, {APICID: 3, Domain: 1}},
		Memory: []acpi.MemAffinity{
			{Base: 0, Length: 0xa0000},
			{Base: 0x100000, Length: 0x3ff00000},
			{Base: 0x40000000, Length: 0x40000000, Domain: 1},
		},
	}
	ram := []Span{{0, 0x9f000}, {0x100000, 0x7ffe0000}}
	// CPU numbers follow start order, not APIC IDs.
	topo, why := Build(srat, nil, []uint32{0, 2, 1, 3}, ram)
	if why != "" {
		t.Fatal(why)
	}
	return topo
}

func TestBuild(t *testing.T) {
	topo := twoNodes(t)
	if len(topo.Nodes) != 2 {
		t.Fatalf("%d nodes", len(topo.Nodes))
	}
	if !reflect.DeepEqual(topo.CPUNode, []int{0, 1, 0, 1}) {
		t.Errorf("CPUNode = %v", topo.CPUNode)
	}
	if got := List(topo.Nodes[1].CPUs); got != "1,3" {
		t.Errorf("node 1 CPUs = %s", got)
	}
	if p0, p1 := topo.Nodes[0].Present, topo.Nodes[1].Present; p0 != 0x9f000+0x3ff00000 || p1 != 0x3ffe0000 {
		t.Errorf("present = %#x, %#x", p0, p1)
	}
	for _, c := range []struct {
		pa   uint64
		node int
	}{{0x40000000, 1}, {0x3fffffff, 0}, {0xa0000, 0}, {1 << 40, 0}} {
		if n, _ := topo.nodeAt(c.pa, c.pa+1); n != c.node {
			t.Errorf("node of %#x = %d, want %d", c.pa, n, c.node)
		}
	}
	if topo.Distance(0) != "10 20" || topo.Distance(1) != "20 10" {
		t.Errorf("distances %q %q", topo.Distance(0), topo.Distance(1))
	}
}

func TestOrderBySLIT(t *testing.T) {
	srat := &acpi.SRAT{Memory: []acpi.MemAffinity{
		{Base: 0, Length: 1 << 30, Domain: 4}, {Base: 1 << 30, Length: 1 << 30, Domain: 7}, {Base: 2 << 30, Length: 1 << 30, Domain: 9},
	}}
	slit := slitOf(t, 10, [][]byte{
		4: {4: 10, 7: 30, 9: 15},
		7: {4: 30, 7: 10, 9: 30},
		9: {4: 15, 7: 30, 9: 10},
	})
	topo, why := Build(srat, slit, []uint32{0}, []Span{{0, 3 << 30}})
	if why != "" {
		t.Fatal(why)
	}
	if o := topo.Order(0); !reflect.DeepEqual(o, []int{0, 2, 1}) {
		t.Errorf("Order(0) = %v", o)
	}
	if o := topo.Order(1); !reflect.DeepEqual(o, []int{1, 0, 2}) {
		t.Errorf("Order(1) = %v", o)
	}
	if topo.Nodes[2].Present != 1<<30 {
		t.Errorf("node 2 present %#x", topo.Nodes[2].Present)
	}
}

func TestOneNode(t *testing.T) {
	topo, why := Build(nil, nil, []uint32{0, 1}, []Span{{0, 1 << 20}, {2 << 20, 4 << 20}})
	if why == "" || len(topo.Nodes) != 1 || topo.Nodes[0].Present != 3<<20 || List(topo.Nodes[0].CPUs) != "0-1" {
		t.Fatalf("%+v %q", topo, why)
	}
	if o := topo.Order(0); !reflect.DeepEqual(o, []int{0}) {
		t.Errorf("Order = %v", o)
	}
	many := &acpi.SRAT{}
	for d := uint32(0); d < MaxNodes+1; d++ {
		many.CPUs = append(many.CPUs, acpi.CPUAffinity{APICID: d, Domain: d})
	}
	if topo, why := Build(many, nil, []uint32{0, 5}, nil); why == "" || len(topo.Nodes) != 1 {
		t.Errorf("%d domains: %d nodes, %q", MaxNodes+1, len(topo.Nodes), why)
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", "0 1 2 3": "0-3", "3 0 1 6 8 9": "0-1,3,6,8-9"} {
		var xs []int
		for _, f := range strings.Fields(in) {
			xs = append(xs, int(f[0]-'0'))
		}
		if got := List(xs); got != want {
			t.Errorf("List(%v) = %q, want %q", xs, got, want)
		}
	}
	m := string(Meminfo(1, 1000, 300))
	if !strings.Contains(m, "Node 1 MemTotal:") || !strings.Contains(m, "Node 1 MemUsed:             700 kB\n") {
		t.Errorf("meminfo:\n%s", m)
	}
}

// slitOf builds a SLIT of n localities with the given rows through the
// parser.
func slitOf(t *testing.T, n int, rows [][]byte) *acpi.SLIT {
	body := make([]byte, 8+n*n)
	body[0] = byte(n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			d := byte(20)
			if i == j {
				d = 10
			}
			if i < len(rows) && j < len(rows[i]) && rows[i][j] != 0 {
				d = rows[i][j]
			}
			body[8+i*n+j] = d
		}
	}
	b := append([]byte("SLIT"), make([]byte, 32)...)
	b = append(b, body...)
	l := len(b)
	b[4], b[5] = byte(l), byte(l>>8)
	s, err := acpi.ParseSLIT(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
