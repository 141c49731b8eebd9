package machine

import "errors"

const (
	// MaxNodes is how many NUMA nodes the frame allocator keeps apart.
	MaxNodes = 16
	// MaxRanges is how many available ranges of the boot memory map the
	// frame allocator keeps (more are left unused), and how many node
	// spans it takes.
	MaxRanges = 128
)

// NodeSpan is a physical range [Base, End) of node Node (the layout of
// the machine layer's sbRange).
type NodeSpan struct {
	Base, End uintptr
	Node      uint8
}

func setNUMA(spans []NodeSpan, cpuNode, order []uint8, nnodes int)

// SetNUMA gives the frame allocator the machine's nodes: spans, each
// CPU's node (by CPU number), and for each node the order in which its
// CPUs take frames from the nodes, its own first (order is nnodes rows
// of nnodes). Frames outside every span count as node 0's. Once, at boot.
func SetNUMA(spans []NodeSpan, cpuNode, order []uint8, nnodes int) error {
	if nnodes < 1 || nnodes > MaxNodes || len(order) != nnodes*nnodes || len(spans) > MaxRanges {
		return errors.New("machine: bad NUMA layout")
	}
	for _, s := range spans {
		if int(s.Node) >= nnodes || s.End <= s.Base {
			return errors.New("machine: bad NUMA span")
		}
	}
	for _, n := range cpuNode {
		if int(n) >= nnodes {
			return errors.New("machine: CPU on a node that does not exist")
		}
	}
	for _, n := range order {
		if int(n) >= nnodes {
			return errors.New("machine: node order names a node that does not exist")
		}
	}
	setNUMA(spans, cpuNode, order, nnodes)
	return nil
}

// NodeFreeFrames is how many free frames node has.
func NodeFreeFrames(node int) uint64
