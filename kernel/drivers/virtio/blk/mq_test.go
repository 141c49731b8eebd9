package blk

import (
	"bytes"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	block "shortbread/kernel/blk"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio/virtiotest"
)

// patterned is a model of size bytes whose every sector holds its
// number's low byte.
func patterned(size int, mq int) *model {
	m := &model{data: make([]byte, size), bs: 512, mq: mq}
	for i := range m.data {
		m.data[i] = byte(i / 512)
	}
	return m
}

func (m *model) servedBy() [4]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served
}

// With F_MQ, two queues wanted and two offered, a request goes to the
// queue of the caller's CPU and completes on that queue's vector, which
// is aimed at that CPU.
func TestMultiQueue(t *testing.T) {
	m := patterned(1<<20, 2)
	var cpu atomic.Int64
	d, dev, _ := newDiskWith(t, m, Config{Queues: 2, CPU: func() int { return int(cpu.Load()) }}, nil)
	if d.Queues() != 2 {
		t.Fatalf("%d queues, want 2", d.Queues())
	}
	if kind, n := d.Interrupts(); kind != pci.MSIX || n != 2 {
		t.Errorf("interrupts %v x %d, want MSI-X x 2", kind, n)
	}
	if dev.DriverFeatures()&featureMQ == 0 {
		t.Error("F_MQ not accepted")
	}
	if !slices.Equal(dev.MSICPUs, []int{0, 1}) {
		t.Errorf("vectors aimed at CPUs %v, want [0 1]", dev.MSICPUs)
	}
	for _, c := range []int{0, 1, 2, 3} {
		cpu.Store(int64(c))
		q := c % 2
		before, raised := m.servedBy(), [2]int64{dev.Raised[0].Load(), dev.Raised[1].Load()}
		p := make([]byte, 8192)
		if _, err := d.ReadAt(p, int64(10+c)*512); err != nil {
			t.Fatalf("CPU %d: %v", c, err)
		}
		if !bytes.Equal(p, m.data[(10+c)*512:(10+c)*512+8192]) {
			t.Fatalf("CPU %d: read other bytes", c)
		}
		w := bytes.Repeat([]byte{byte(0x40 + c)}, 4096)
		if _, err := d.WriteAt(w, 64<<10); err != nil || !bytes.Equal(m.data[64<<10:68<<10], w) {
			t.Fatalf("CPU %d: write: %v", c, err)
		}
		if err := d.Flush(); err != nil {
			t.Fatalf("CPU %d: flush: %v", c, err)
		}
		after := m.servedBy()
		if after[q]-before[q] != 3 || after[1-q] != before[1-q] {
			t.Errorf("CPU %d: requests by queue %v -> %v, want 3 more on queue %d only", c, before[:2], after[:2], q)
		}
		if got := [2]int64{dev.Raised[0].Load(), dev.Raised[1].Load()}; got[q] == raised[q] || got[1-q] != raised[1-q] {
			t.Errorf("CPU %d: interrupts by queue %v -> %v, want more on queue %d only", c, raised, got, q)
		}
	}
	if len(m.seen) != 0 || len(dev.Errors) != 0 {
		t.Errorf("device saw %v %v", m.seen, dev.Errors)
	}
}

// BootCPUIRQs keeps the queues but aims every vector at CPU 0.
func TestBootCPUIRQs(t *testing.T) {
	m := patterned(1<<20, 2)
	d, dev, _ := newDiskWith(t, m, Config{Queues: 2, CPU: func() int { return 1 }, BootCPUIRQs: true}, nil)
	if d.Queues() != 2 || !slices.Equal(dev.MSICPUs, []int{0, 0}) {
		t.Fatalf("%d queues, vectors aimed at CPUs %v; want 2 queues, [0 0]", d.Queues(), dev.MSICPUs)
	}
	p := make([]byte, 4096)
	if _, err := d.ReadAt(p, 5*512); err != nil || !bytes.Equal(p, m.data[5*512:5*512+4096]) {
		t.Fatalf("read: %v", err)
	}
	if s := m.servedBy(); s[1] != 1 {
		t.Errorf("requests by queue %v, want one on queue 1", s[:2])
	}
}

// One queue unless the device offers F_MQ with several, more than one is
// wanted and the platform gives a vector each; fewer vectors or fewer
// offered queues make fewer queues. A single queue takes every CPU's
// requests.
func TestQueueCount(t *testing.T) {
	for _, c := range []struct {
		name        string
		mq, wanted  int
		limit, want int
		acceptsMQ   bool
		cpus        []int
	}{
		{"no F_MQ", 0, 2, 0, 1, false, []int{0}},
		{"one wanted", 2, 1, 0, 1, false, []int{0}},
		{"none wanted", 2, 0, 0, 1, false, []int{0}},
		{"one offered", 1, 2, 0, 1, true, []int{0}},
		{"more offered", 4, 2, 0, 2, true, []int{0, 1}},
		{"fewer offered", 2, 4, 0, 2, true, []int{0, 1}},
		{"fewer vectors", 4, 4, 3, 3, true, []int{0, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := patterned(1<<20, c.mq)
			d, dev, _ := newDiskWith(t, m, Config{Queues: c.wanted, CPU: func() int { return 1 }},
				func(dev *virtiotest.Device) { dev.MSILimit = c.limit })
			if d.Queues() != c.want {
				t.Errorf("%d queues, want %d", d.Queues(), c.want)
			}
			if got := dev.DriverFeatures()&featureMQ != 0; got != c.acceptsMQ {
				t.Errorf("F_MQ accepted %v, want %v", got, c.acceptsMQ)
			}
			if !slices.Equal(dev.MSICPUs, c.cpus) {
				t.Errorf("vectors aimed at CPUs %v, want %v", dev.MSICPUs, c.cpus)
			}
			p := make([]byte, 4096)
			if _, err := d.ReadAt(p, 3*512); err != nil || !bytes.Equal(p, m.data[3*512:3*512+4096]) {
				t.Fatalf("read: %v", err)
			}
			served := m.servedBy()
			if q := 1 % c.want; served[q] != 1 {
				t.Errorf("requests by queue %v, want one on queue %d", served, q)
			}
		})
	}
}

// A queue whose device side stops answering times its requests out;
// the other queue goes on meanwhile, and the held queue recovers its
// slots when the device answers late.
func TestTimeoutOneQueue(t *testing.T) {
	m := patterned(1<<20, 2)
	var cpu atomic.Int64
	d, dev, logs := newDiskWith(t, m, Config{Queues: 2, CPU: func() int { return int(cpu.Load()) }}, nil)
	// Long enough for queue 1's reads below to finish first on a
	// loaded host under the race detector.
	d.Timeout = time.Second
	dev.HoldQueues.Store(1) // queue 0
	held := make(chan error, 1)
	go func() { _, err := d.ReadAt(make([]byte, 512), 7*512); held <- err }()
	q0 := d.qs[0]
	deadline := time.Now().Add(5 * time.Second)
	for {
		q0.mu.Lock()
		n := len(q0.pending)
		q0.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request on queue 0 never went out")
		}
		time.Sleep(time.Millisecond)
	}
	// CPU 1's requests go to queue 1 and complete while queue 0's waits.
	cpu.Store(1)
	for i := range 20 {
		p := make([]byte, 512)
		if _, err := d.ReadAt(p, int64(20+i)*512); err != nil || p[0] != byte(20+i) {
			t.Fatalf("queue 1 read %d: %v (%d)", i, err, p[0])
		}
	}
	select {
	case err := <-held:
		t.Fatalf("queue 0's request ended while held: %v", err)
	default:
	}
	if err := <-held; !errors.Is(err, block.ErrTimeout) {
		t.Fatalf("held request: %v", err)
	}
	if len(*logs) != 1 || !bytes.Contains([]byte((*logs)[0]), []byte("sector 7")) {
		t.Errorf("log %q", *logs)
	}
	// Queue 1 was not touched by queue 0's timeout.
	if q1 := d.qs[1]; len(q1.slots) != cap(q1.slots) {
		t.Errorf("queue 1: %d slots free of %d", len(q1.slots), cap(q1.slots))
	}
	dev.ReleaseQueues()
	deadline = time.Now().Add(5 * time.Second)
	for len(q0.slots) != cap(q0.slots) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if len(q0.slots) != cap(q0.slots) {
		t.Fatalf("queue 0: %d slots free of %d after the late answer", len(q0.slots), cap(q0.slots))
	}
	cpu.Store(0)
	p := make([]byte, 512)
	if _, err := d.ReadAt(p, 9*512); err != nil || p[0] != 9 {
		t.Errorf("queue 0 after the timeout: %v", err)
	}
}

// Readers and writers spread over both queues at once each see their own
// data (run with -race too).
func TestConcurrentQueues(t *testing.T) {
	m := patterned(4<<20, 2)
	var turn atomic.Int64
	d, dev, _ := newDiskWith(t, m, Config{Queues: 2, CPU: func() int { return int(turn.Add(1)) }}, nil)
	writeReadBack(t, d, 8, 30, func(g, i int) (int64, []byte) {
		n := (1 + (g+i)%24) * 512
		return int64(g)*(256<<10) + int64(i%16)*4096, bytes.Repeat([]byte{byte(g*31 + i)}, n)
	})
	if s := m.servedBy(); s[0] < 100 || s[1] < 100 || s[0]+s[1] != 8*30*2 {
		t.Errorf("requests by queue %v, want both used, %d in all", s[:2], 8*30*2)
	}
	for i, q := range d.qs {
		if len(q.slots) != cap(q.slots) {
			t.Errorf("queue %d: %d slots free of %d", i, len(q.slots), cap(q.slots))
		}
	}
	if len(m.seen) != 0 || len(dev.Errors) != 0 {
		t.Errorf("device saw %v %v", m.seen, dev.Errors)
	}
}

// The CPU's queue is picked without allocating: a 4 KiB read on the
// second queue allocates nothing either.
func TestReadAllocationsMultiQueue(t *testing.T) {
	d, _, _ := newDiskWith(t, patterned(1<<20, 2), Config{Queues: 2, CPU: func() int { return 1 }}, nil)
	p := make([]byte, 4096)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := d.ReadAt(p, 8192); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 && !raceEnabled {
		t.Errorf("%.1f allocations per 4 KiB read, want none", allocs)
	}
}
