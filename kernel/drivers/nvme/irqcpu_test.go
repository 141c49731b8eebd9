package nvme_test

import (
	"bytes"
	"sync/atomic"
	"testing"

	"shortbread/kernel/drivers/nvme/nvmetest"
	"shortbread/kernel/drivers/pci"
)

// Each I/O queue's vector is programmed with the message address of the
// CPU that submits to it (CPU q-1 for queue q; with fewer queues than
// CPUs, the first of those sharing it), and a request submitted on CPU
// c completes with an interrupt delivered there — or, when queues are
// shared, at its queue's CPU. The fallbacks keep one queue, on CPU 0.
func TestQueueInterruptCPUs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   nvmetest.Options
		cpus   int
		queues int
		kind   pci.IntrKind
	}{
		{"a queue per CPU", nvmetest.Options{Vectors: 8}, 4, 4, pci.MSIX},
		{"one CPU", nvmetest.Options{Vectors: 8}, 1, 1, pci.MSIX},
		{"controller grants 3 of 4", nvmetest.Options{Vectors: 8, MaxQueues: 3}, 4, 3, pci.MSIX},
		{"controller grants 1", nvmetest.Options{Vectors: 8, MaxQueues: 1}, 4, 1, pci.MSIX},
		{"table of 2", nvmetest.Options{Vectors: 2}, 4, 2, pci.MSIX},
		{"MSI only", nvmetest.Options{}, 4, 1, pci.MSI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := nvmetest.New(tc.opts, ns(1<<20, 9))
			var cpu atomic.Int64
			c, _ := mustOpen(t, dev, setup{queues: tc.cpus, cpu: func() int { return int(cpu.Load()) }})
			if k, _ := c.Interrupts(); c.Queues() != tc.queues || k != tc.kind {
				t.Fatalf("%d queues on %v, want %d on %v", c.Queues(), k, tc.queues, tc.kind)
			}
			if got, ok := dev.QueueCPU(0); !ok || got != 0 {
				t.Errorf("admin queue interrupts CPU %d (%v), want 0", got, ok)
			}
			for q := 1; q <= tc.queues; q++ {
				if got, ok := dev.QueueCPU(uint16(q)); !ok || got != q-1 {
					t.Errorf("queue %d interrupts CPU %d (%v), want %d", q, got, ok, q-1)
				}
			}
			d := c.Namespaces()[0]
			w := pattern(4096, 7)
			if _, err := d.WriteAt(w, 0); err != nil {
				t.Fatal(err)
			}
			// Twice as many submitting CPUs as the machine has, so that
			// every queue is shared once the CPU numbers wrap.
			for sub := 0; sub < 2*tc.cpus; sub++ {
				cpu.Store(int64(sub))
				q := sub%tc.queues + 1
				executed := dev.Executed[q].Load()
				var before [nvmetest.MaxCPUs]int64
				for i := range before {
					before[i] = dev.RaisedAt[i].Load()
				}
				r := make([]byte, 4096)
				if _, err := d.ReadAt(r, 0); err != nil || !bytes.Equal(r, w) {
					t.Fatalf("read on CPU %d: %v", sub, err)
				}
				if dev.Executed[q].Load() != executed+1 {
					t.Errorf("read on CPU %d: not carried by queue %d", sub, q)
				}
				for i := range before {
					got := dev.RaisedAt[i].Load() - before[i]
					want := int64(0)
					if i == q-1 {
						want = 1
					}
					if got != want {
						t.Errorf("read on CPU %d (queue %d): %d interrupts at CPU %d, want %d", sub, q, got, i, want)
					}
				}
			}
		})
	}
}

// With BootCPUIRQs every queue keeps its own vector, all at CPU 0.
func TestBootCPUIRQs(t *testing.T) {
	dev := nvmetest.New(nvmetest.Options{Vectors: 8}, ns(1<<20, 9))
	var cpu atomic.Int64
	c, _ := mustOpen(t, dev, setup{queues: 4, bootIRQ: true, cpu: func() int { return int(cpu.Load()) }})
	if k, n := c.Interrupts(); c.Queues() != 4 || k != pci.MSIX || n != 4 {
		t.Fatalf("%d queues on %d %v vectors, want 4 on 4 MSI-X", c.Queues(), n, k)
	}
	for q := 1; q <= 4; q++ {
		if got, ok := dev.QueueCPU(uint16(q)); !ok || got != 0 {
			t.Errorf("queue %d interrupts CPU %d (%v), want 0", q, got, ok)
		}
	}
	cpu.Store(3)
	before := dev.RaisedAt[0].Load()
	if _, err := c.Namespaces()[0].ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if dev.Executed[4].Load() != 1 || dev.RaisedAt[0].Load() != before+1 {
		t.Errorf("read on CPU 3: %d commands on queue 4, %d interrupts at CPU 0; want 1 and 1",
			dev.Executed[4].Load(), dev.RaisedAt[0].Load()-before)
	}
}
