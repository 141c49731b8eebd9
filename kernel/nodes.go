package main

// NUMA: the nodes the ACPI SRAT describes, given to the frame allocator
// (each CPU takes frames from its own node first, then the nearest) and
// reported where Linux reports them, /sys/devices/system/node.

import (
	"errors"
	"fmt"

	"shortbread/kernel/acpi"
	"shortbread/kernel/fs/procfs"
	"shortbread/kernel/machine"
	"shortbread/kernel/multiboot"
	"shortbread/kernel/numa"
	"shortbread/kernel/proc"
)

// setNUMA reads the SRAT and SLIT, and gives the frame allocator the
// nodes; after startCPUs, which numbered the CPUs.
func (k *kernel) setNUMA() {
	var srat *acpi.SRAT
	var slit *acpi.SLIT
	if k.tables != nil {
		var err error
		if srat, err = k.tables.SRAT(); err != nil && !errors.Is(err, acpi.ErrNotFound) {
			k.log.Warnf("acpi: SRAT: %v", err)
		}
		if slit, err = k.tables.SLIT(); err != nil && !errors.Is(err, acpi.ErrNotFound) {
			k.log.Warnf("acpi: SLIT: %v", err)
		}
	}
	var ram []numa.Span
	var size, top uint64
	for _, r := range k.boot.MemoryMap {
		if r.Type == multiboot.MemAvailable {
			ram = append(ram, numa.Span{Base: r.Base, End: r.End()})
			size, top = size+r.Length, max(top, r.End())
		}
	}
	k.log.Infof("memory: %d MiB available in %d of the boot memory map's %d ranges, up to %#x",
		size>>20, len(ram), len(k.boot.MemoryMap), top)
	if len(ram) > machine.MaxRanges {
		k.log.Warnf("memory: only the first %d available ranges are used", machine.MaxRanges)
	}
	topo, why := numa.Build(srat, slit, k.cpuAPIC, ram)
	k.nodes = topo
	if len(topo.Nodes) == 1 {
		if srat != nil {
			k.log.Warnf("numa: one node: %s", why)
		}
		return
	}
	var spans []machine.NodeSpan
	for i, n := range topo.Nodes {
		for _, s := range n.Spans {
			spans = append(spans, machine.NodeSpan{Base: uintptr(s.Base), End: uintptr(s.End), Node: uint8(i)})
		}
	}
	cpuNode := make([]uint8, len(topo.CPUNode))
	for c, n := range topo.CPUNode {
		cpuNode[c] = uint8(n)
	}
	var order []uint8
	for i := range topo.Nodes {
		for _, n := range topo.Order(i) {
			order = append(order, uint8(n))
		}
	}
	if err := machine.SetNUMA(spans, cpuNode, order, len(topo.Nodes)); err != nil {
		k.log.Warnf("numa: %v; frames are taken from any node", err)
		return
	}
	proc.CPUNode = func(cpu int) int {
		if cpu < 0 || cpu >= len(topo.CPUNode) {
			return 0
		}
		return topo.CPUNode[cpu]
	}
	for i, n := range topo.Nodes {
		k.log.Infof("numa: node %d: CPUs %s, %d MiB", i, numa.List(n.CPUs), n.Present>>20)
	}
}

// nodeTotalKB is node n's memory in KiB. The frames boot kept back (the
// kernel image, the boot modules, the first MiB, which sit in the first
// node's low memory) are taken from node 0's, so the nodes add up to
// /proc/meminfo's MemTotal.
func (k *kernel) nodeTotalKB(n int) uint64 {
	total := machine.ReadMemStats().TotalFrames * 4
	if len(k.nodes.Nodes) == 1 {
		return total
	}
	if n > 0 {
		return k.nodes.Nodes[n].Present >> 10
	}
	var others uint64
	for _, o := range k.nodes.Nodes[1:] {
		others += o.Present >> 10
	}
	return total - min(others, total)
}

// addNodes adds the node directory Linux has under
// /sys/devices/system/node (numactl and libnuma read it).
func (k *kernel) addNodes(fs *procfs.FS) {
	topo := k.nodes
	var all []int
	for i := range topo.Nodes {
		all = append(all, i)
	}
	list := func(xs []int) procfs.Gen {
		s := []byte(numa.List(xs) + "\n")
		return func() []byte { return s }
	}
	const dir = "devices/system/node/"
	fs.AddFile(dir+"online", list(all), nil)
	fs.AddFile(dir+"possible", list(all), nil)
	var withCPU, withMem []int
	for i, n := range topo.Nodes {
		if len(n.CPUs) > 0 {
			withCPU = append(withCPU, i)
		}
		if n.Present > 0 || i == 0 {
			withMem = append(withMem, i)
		}
	}
	fs.AddFile(dir+"has_cpu", list(withCPU), nil)
	fs.AddFile(dir+"has_memory", list(withMem), nil)
	fs.AddFile(dir+"has_normal_memory", list(withMem), nil)
	for i, n := range topo.Nodes {
		node := fmt.Sprintf("%snode%d/", dir, i)
		fs.AddFile(node+"cpulist", list(n.CPUs), nil)
		fs.AddFile(node+"meminfo", func() []byte {
			free := machine.NodeFreeFrames(i) * 4
			if len(topo.Nodes) == 1 {
				free = machine.ReadMemStats().FreeFrames * 4
			}
			return numa.Meminfo(i, k.nodeTotalKB(i), free)
		}, nil)
		d := []byte(topo.Distance(i) + "\n")
		fs.AddFile(node+"distance", func() []byte { return d }, nil)
	}
}
