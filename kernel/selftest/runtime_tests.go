package selftest

// Tests of the scheduler, synchronization, timers and the garbage
// collector running on the machine layer.

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"shortbread/kernel/machine"
)

// Timer tolerance: QEMU without KVM runs guests far slower than hardware
// and the host may be busy, so a timer may fire late by this much. The
// guest's clock follows the host's, so a virtual CPU the host did not
// run for a while sees its timer that much late (a soak at host load 7.6
// saw Sleep(20ms) take 583 ms). What the bound is for is a timer that
// does not fire at all, or only when something else wakes the CPU.
const lateTolerance = 2 * time.Second

func testEveryCPU() error {
	n := machine.NumCPU()
	if p := runtime.GOMAXPROCS(0); p != n {
		return fmt.Errorf("GOMAXPROCS = %d, want %d (one P per CPU)", p, n)
	}
	seen := make([]atomic.Bool, n)
	var count atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 4*n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if c := machine.CurrentCPU(); !seen[c].Swap(true) {
					count.Add(1)
				}
				select {
				case <-stop:
					return
				default:
				}
				spin(20000)
				runtime.Gosched()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for int(count.Load()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if int(count.Load()) != n {
		var missing []int
		for i := range seen {
			if !seen[i].Load() {
				missing = append(missing, i)
			}
		}
		return fmt.Errorf("no goroutine ran on CPUs %v", missing)
	}
	return nil
}

var spinSink uint64

// spin burns CPU without blocking.
func spin(n int) {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	atomic.AddUint64(&spinSink, x)
}

func testChannels() error {
	// A pipeline of unbuffered channels across goroutines.
	const stages, items = 8, 1000
	first := make(chan int)
	in := first
	for s := 0; s < stages; s++ {
		out := make(chan int)
		go func(in <-chan int, out chan<- int) {
			for v := range in {
				out <- v + 1
			}
			close(out)
		}(in, out)
		in = out
	}
	go func() {
		for i := 0; i < items; i++ {
			first <- i
		}
		close(first)
	}()
	sum := 0
	for v := range in {
		sum += v
	}
	if want := items*(items-1)/2 + items*stages; sum != want {
		return fmt.Errorf("pipeline sum %d, want %d", sum, want)
	}
	// select chooses among ready channels and honours default.
	a, b := make(chan int, 1), make(chan int, 1)
	select {
	case <-a:
		return errors.New("select received from an empty channel")
	default:
	}
	a <- 1
	b <- 2
	got := 0
	for i := 0; i < 2; i++ {
		select {
		case v := <-a:
			got += v
		case v := <-b:
			got += v
		}
	}
	if got != 3 {
		return fmt.Errorf("select received %d, want 3", got)
	}
	return nil
}

func testMutex() error {
	n := machine.NumCPU()
	var mu sync.Mutex
	counter := 0
	cpus := make(map[int]bool)
	const per = 3000
	deadline := time.Now().Add(30 * time.Second)
	counts := make([]int, 4*n)
	var wg sync.WaitGroup
	for g := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// At least per increments each; then keep contending until
			// every CPU has held the lock (or time is up).
			for i := 0; ; i++ {
				mu.Lock()
				counter++
				cpus[machine.CurrentCPU()] = true
				all := len(cpus) == n
				mu.Unlock()
				counts[g]++
				if i >= per && (all || time.Now().After(deadline)) {
					return
				}
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	want := 0
	for _, c := range counts {
		want += c
	}
	if counter != want {
		return fmt.Errorf("counter %d, want %d: lost updates", counter, want)
	}
	if len(cpus) != n {
		return fmt.Errorf("lock taken on %d of %d CPUs in 30s", len(cpus), n)
	}
	return nil
}

func testMapsDefer() error {
	m := make(map[string]int)
	for i := 0; i < 10000; i++ {
		m[fmt.Sprint(i)] = i
	}
	for i := 0; i < 10000; i += 2 {
		delete(m, fmt.Sprint(i))
	}
	if len(m) != 5000 || m["9999"] != 9999 {
		return fmt.Errorf("map has %d entries, m[9999]=%d", len(m), m["9999"])
	}
	var order []int
	func() {
		for i := 0; i < 3; i++ {
			defer func(i int) { order = append(order, i) }(i)
		}
	}()
	if fmt.Sprint(order) != "[2 1 0]" {
		return fmt.Errorf("defers ran in order %v", order)
	}
	return nil
}

func testSleep() error {
	for _, d := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond} {
		start := time.Now()
		time.Sleep(d)
		el := time.Since(start)
		if el < d || el > d+lateTolerance {
			return fmt.Errorf("Sleep(%v) took %v (tolerance +%v)", d, el, lateTolerance)
		}
	}
	return nil
}

func testAfter() error {
	start := time.Now()
	select {
	case <-time.After(30 * time.Millisecond):
	case <-time.After(5 * time.Second):
		return errors.New("the later timer fired first")
	}
	if el := time.Since(start); el < 30*time.Millisecond || el > 30*time.Millisecond+lateTolerance {
		return fmt.Errorf("time.After(30ms) fired after %v", el)
	}
	t := time.NewTimer(20 * time.Millisecond)
	if !t.Stop() {
		return errors.New("Stop on a pending timer reported it already fired")
	}
	select {
	case <-t.C:
		return errors.New("a stopped timer fired")
	case <-time.After(100 * time.Millisecond):
	}
	return nil
}

// testPreempt occupies every P with a loop that makes no calls, so only
// asynchronous preemption (the runtime's SIGURG, delivered by the machine
// layer) lets anything else run, including the stop-the-world of a GC.
func testPreempt() error {
	n := runtime.GOMAXPROCS(0)
	var stop, started atomic.Int32
	for i := 0; i < n; i++ {
		go func() {
			started.Add(1)
			for stop.Load() == 0 {
			}
		}()
	}
	defer stop.Store(1)
	for started.Load() < int32(n) {
		runtime.Gosched()
	}
	var ticks atomic.Int32
	go func() {
		for stop.Load() == 0 {
			ticks.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	gcDone := make(chan struct{})
	go func() {
		runtime.GC()
		close(gcDone)
	}()
	select {
	case <-gcDone:
	case <-time.After(30 * time.Second):
		return errors.New("runtime.GC did not complete while tight loops ran")
	}
	deadline := time.Now().Add(30 * time.Second)
	for ticks.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if ticks.Load() < 5 {
		return fmt.Errorf("another goroutine progressed only %d times", ticks.Load())
	}
	return nil
}

func readMetrics(names ...string) []uint64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	out := make([]uint64, len(names))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			out[i] = s[i].Value.Uint64()
		}
	}
	return out
}

var heapSink [][]byte

func testGCHeap() error {
	const cycles, heap, allocs = "/gc/cycles/total:gc-cycles", "/memory/classes/heap/objects:bytes", "/gc/heap/allocs:bytes"
	runtime.GC()
	before := readMetrics(cycles, heap, allocs)
	baseline := before[1]
	live := make([]byte, 4<<20) // keep 4 MiB live throughout
	target := 10 * (baseline + uint64(len(live)))
	var allocated uint64
	for i := 0; allocated < target; i++ {
		b := make([]byte, 256<<10)
		b[0], b[len(b)-1] = 1, 1
		allocated += uint64(len(b))
		heapSink = append(heapSink, b)
		if len(heapSink) > 16 {
			heapSink = heapSink[1:]
		}
		if i%64 == 63 {
			runtime.GC()
		}
	}
	heapSink = nil
	runtime.KeepAlive(live)
	live = nil
	runtime.GC()
	runtime.GC()
	after := readMetrics(cycles, heap, allocs)
	if after[0]-before[0] < 4 {
		return fmt.Errorf("runtime/metrics shows %d GC cycles, want >= 4", after[0]-before[0])
	}
	if after[2]-before[2] < target {
		return fmt.Errorf("metrics show %d bytes allocated, want >= %d", after[2]-before[2], target)
	}
	if after[1] > baseline+2<<20 {
		return fmt.Errorf("heap %d bytes after GC, baseline %d", after[1], baseline)
	}
	return nil
}

func testFinalizers() error {
	const n = 10
	ran := make(chan int, n)
	for i := 0; i < n; i++ {
		obj := new([64]byte)
		obj[0] = byte(i)
		runtime.SetFinalizer(obj, func(o *[64]byte) { ran <- int(o[0]) })
	}
	got := 0
	deadline := time.After(20 * time.Second)
	for got < n {
		runtime.GC()
		select {
		case <-ran:
			got++
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d of %d finalizers ran", got, n)
		}
	}
	return nil
}

// testWeakCleanups: weak pointers go nil and runtime.AddCleanup's
// functions run once their objects are collected (ext4vfs forgets
// inodes no one uses this way).
func testWeakCleanups() error {
	const n = 10
	ran := make(chan int, n)
	ptrs := make([]weak.Pointer[[64]byte], n)
	for i := 0; i < n; i++ {
		obj := new([64]byte)
		ptrs[i] = weak.Make(obj)
		runtime.AddCleanup(obj, func(i int) { ran <- i }, i)
	}
	got := 0
	deadline := time.After(20 * time.Second)
	for got < n {
		runtime.GC()
		select {
		case <-ran:
			got++
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			return fmt.Errorf("%d of %d cleanups ran", got, n)
		}
	}
	for i, p := range ptrs {
		if p.Value() != nil {
			return fmt.Errorf("weak pointer %d still set after its cleanup ran", i)
		}
	}
	return nil
}
