package nvme

import (
	"encoding/binary"
	"fmt"
	"sync"

	"shortbread/kernel/blk"
)

// Namespace is one namespace of a controller: a block device.
type Namespace struct {
	c       *Controller
	name    string
	nsid    uint32
	shift   uint // log2 of the logical block size
	sectors uint64
}

func (n *Namespace) Name() string    { return n.name }
func (n *Namespace) SectorSize() int { return 1 << n.shift }

// MemAlign is 4: a PRP entry may point anywhere dword-aligned (NVMe 1.4
// section 4.3), and Linux lets O_DIRECT buffers of NVMe namespaces be
// aligned so.
func (n *Namespace) MemAlign() int { return 4 }

func (n *Namespace) Sectors() uint64 { return n.sectors }

// ID is the namespace identifier.
func (n *Namespace) ID() uint32 { return n.nsid }

// ReadAt reads whole logical blocks at off.
func (n *Namespace) ReadAt(p []byte, off int64) (int, error) { return n.rw(p, off, false) }

// WriteAt writes whole logical blocks at off.
func (n *Namespace) WriteAt(p []byte, off int64) (int, error) { return n.rw(p, off, true) }

// rw splits a transfer into commands of one slot each, all on the
// caller's CPU's queue, as many in flight as the queue has free slots.
// On failure it reports the bytes before the first failed command.
func (n *Namespace) rw(p []byte, off int64, write bool) (int, error) {
	if err := blk.Check(n, len(p), off); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	q := n.c.io[n.c.cpu()%len(n.c.io)]
	per := n.c.dataPages * PageSize
	if len(p) <= per {
		if err := n.transfer(q, p, off, write); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	errs := make([]error, (len(p)+per-1)/per)
	var wg sync.WaitGroup
	for i := range errs {
		chunk := p[i*per : min(len(p), (i+1)*per)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.transfer(q, chunk, off+int64(i*per), write)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i * per, err
		}
	}
	return len(p), nil
}

// transfer reads or writes p (at most one slot's pages) at off.
func (n *Namespace) transfer(q *queue, p []byte, off int64, write bool) error {
	cmd, err := q.get()
	if err != nil {
		return n.fail(off, err)
	}
	pages := (len(p) + PageSize - 1) / PageSize
	e := &sqe{opcode: ioRead, nsid: n.nsid, prp1: cmd.data[0].Phys}
	if write {
		e.opcode = ioWrite
		for i := 0; i < pages; i++ {
			copy(cmd.data[i].Mem, p[i*PageSize:])
		}
	}
	// PRP entries (§4.3): the first page, then the second page or a
	// list of the rest.
	switch {
	case pages == 2:
		e.prp2 = cmd.data[1].Phys
	case pages > 2:
		for i := 1; i < pages; i++ {
			binary.LittleEndian.PutUint64(cmd.prpList.Mem[8*(i-1):], cmd.data[i].Phys)
		}
		e.prp2 = cmd.prpList.Phys
	}
	lba := uint64(off) >> n.shift
	e.cdw[0], e.cdw[1] = uint32(lba), uint32(lba>>32)
	e.cdw[2] = uint32(len(p)>>n.shift) - 1 // NLB, 0-based
	var copyOut func()
	if !write {
		copyOut = func() {
			for i := 0; i < pages; i++ {
				copy(p[i*PageSize:], cmd.data[i].Mem)
			}
		}
	}
	if _, err := q.run(cmd, e, copyOut); err != nil {
		return n.fail(off, err)
	}
	return nil
}

// Flush makes every completed write durable (a no-op without a volatile
// write cache, as on Linux).
func (n *Namespace) Flush() error {
	if !n.c.id.vwc {
		return nil
	}
	q := n.c.io[n.c.cpu()%len(n.c.io)]
	cmd, err := q.get()
	if err != nil {
		return n.fail(0, err)
	}
	if _, err := q.run(cmd, &sqe{opcode: ioFlush, nsid: n.nsid}, nil); err != nil {
		return n.fail(0, fmt.Errorf("flush: %w", err))
	}
	return nil
}

// fail logs err with the device and 512-byte sector (Linux's units in
// its I/O error lines) and returns it wrapped with both.
func (n *Namespace) fail(off int64, err error) error {
	n.c.log("nvme %s: sector %d: %v", n.name, off/512, err)
	return fmt.Errorf("%s: sector %d: %w", n.name, off/512, err)
}

// CanDiscard reports whether the controller deallocates (Dataset
// Management, ONCS bit 2).
func (n *Namespace) CanDiscard() bool { return n.c.id.dsm }

// Discard deallocates the n bytes at off (whole logical blocks): Dataset
// Management commands with the Deallocate attribute, each range at most
// the controller's DMRSL blocks, each command at most DMRL ranges and
// DMSL blocks. What a later read returns is the controller's choice
// (Identify Namespace's DLFEAT says which; nothing here relies on it).
func (n *Namespace) Discard(off, size int64) error {
	if !n.c.id.dsm {
		return blk.ErrNoDiscard
	}
	if err := blk.CheckRange(n, off, size); err != nil {
		return err
	}
	lim := n.c.dsm
	lba, left := uint64(off)>>n.shift, uint64(size)>>n.shift
	for left > 0 {
		start := lba
		ranges := dsmRanges(&lba, &left, lim)
		if err := n.deallocate(ranges); err != nil {
			return n.fail(int64(start)<<n.shift, fmt.Errorf("deallocate: %w", err))
		}
	}
	return nil
}

// dsmRanges takes the ranges of one command from the blocks at *lba
// (*left of them), within lim, and advances both.
func dsmRanges(lba, left *uint64, lim dsmLimits) [][2]uint64 {
	var out [][2]uint64
	total := uint64(0)
	for *left > 0 && len(out) < lim.ranges {
		c := min(*left, lim.rangeBlocks)
		if lim.commandBlocks != 0 {
			if total == lim.commandBlocks {
				break
			}
			c = min(c, lim.commandBlocks-total)
		}
		out = append(out, [2]uint64{*lba, c})
		*lba, *left, total = *lba+c, *left-c, total+c
	}
	return out
}

// deallocate sends one Dataset Management command for ranges (start,
// blocks), laid out in the slot's first data page.
func (n *Namespace) deallocate(ranges [][2]uint64) error {
	q := n.c.io[n.c.cpu()%len(n.c.io)]
	cmd, err := q.get()
	if err != nil {
		return err
	}
	p := cmd.data[0].Mem
	clear(p[:len(ranges)*dsmRangeSize])
	for i, r := range ranges {
		e := p[i*dsmRangeSize:]
		binary.LittleEndian.PutUint32(e[4:], uint32(r[1])) // not 0-based
		binary.LittleEndian.PutUint64(e[8:], r[0])
	}
	e := &sqe{opcode: ioDSM, nsid: n.nsid, prp1: cmd.data[0].Phys,
		cdw: [6]uint32{uint32(len(ranges) - 1), dsmDeallocate}}
	_, err = q.run(cmd, e, nil)
	return err
}
