// Package kmem says when the kernel itself is short of memory. User
// memory cannot take the machine layer's reserve (machine.AllocFrame
// stops there, and the OOM killer takes over), but kernel objects that
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
