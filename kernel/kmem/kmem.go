// Package kmem is the kernel's memory policy: the reserve of frames user
// memory leaves for the kernel (Reserve), and when the kernel itself is
// short of memory (Low). User memory cannot take the reserve (its frames
// come from machine.AllocFrame with the reserve to keep, and the OOM
// killer takes over when they run out), but kernel objects that
// programs make — pipe buffers, open files, processes, file-system
// inodes — come out of the Go heap, which may use the reserve, and the
// runtime cannot fail an allocation: a heap that finds no frame stops the
// machine. So requests that would make new kernel objects for a program
// ask Low first and fail (ENOMEM, ENFILE, ENOSPC, EAGAIN, as Linux would)
// while the reserve is being eaten, before the machine runs out; what
// programs already hold keeps working, and everything comes back when
// they let go. The probe (set at boot) reads the free frames; this
// package has no dependencies, so the subsystems that ask run under go
// test.
package kmem

import "sync/atomic"

var probe atomic.Pointer[func() bool]

// SetProbe installs the function Low asks (nil: memory is never low).
func SetProbe(f func() bool) {
	if f == nil {
		probe.Store(nil)
		return
	}
	probe.Store(&f)
}

// Low reports whether the kernel is short of memory: a request that would
// make a new kernel object for a program must fail.
func Low() bool {
	if f := probe.Load(); f != nil {
		return (*f)()
	}
	return false
}

// refused counts the requests Low turned away (/proc/shortbread/kmem).
var refused atomic.Int64

// Refuse reports Low and counts a refusal.
func Refuse() bool {
	if Low() {
		refused.Add(1)
		return true
	}
	return false
}

// Refused is how many requests were turned away since boot.
func Refused() int64 { return refused.Load() }

// Reserve is how many of total frames user memory (program pages, page
// tables, tmpfs data) leaves free for the kernel: a sixteenth of memory,
// between 8 MiB and 256 MiB. The kernel's heap, stacks and page tables
// grow by page faults that cannot fail (a kernel fault with no frame
// stops the machine), so they must never find the reserve taken.
func Reserve(total uint64) uint64 {
	const page = 4096
	return min(max(total/16, (8<<20)/page), (256<<20)/page)
}

var reclaim atomic.Pointer[func(int) int]

// SetReclaim installs the function Reclaim calls: the page cache's
// shrinker, which gives back frames it can drop or write back and drop.
func SetReclaim(f func(frames int) int) {
	if f == nil {
		reclaim.Store(nil)
		return
	}
	reclaim.Store(&f)
}

// Reclaim asks the caches to give back up to frames frames under memory
// pressure and returns how many they gave (0 with nothing installed).
func Reclaim(frames int) int {
	if f := reclaim.Load(); f != nil {
		return (*f)(frames)
	}
	return 0
}
