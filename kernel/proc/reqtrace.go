package proc

import (
	"context"
	"runtime/trace"
	"strconv"
)

// Requests in the kernel's execution trace (/proc/shortbread/trace):
// while a trace runs, a thread's socket read that returns data begins a
// request on that socket and the next write to it that sends some ends
// it, each a user log event ("request start" or "request end") on the
// thread's goroutine, whose message is the thread's name (to tell
// servers from clients) and the descriptor. With the trace's own
// stop-the-world and mark-assist ranges they give the GC delay each
// request saw, as Biscuit measured it (a request runs from the system
// call that reads it to the one that writes the answer); bench/gcdelay
// reads them. Nothing is marked when no trace runs: the check is one
// atomic load per system call.

// System calls that read a request or write its answer.
var (
	requestReads  = [...]uint64{0, 19, 45, 47}     // read, readv, recvfrom, recvmsg
	requestWrites = [...]uint64{1, 20, 40, 44, 46} // write, writev, sendfile, sendto, sendmsg
)

// markRequest logs the start or end of a request after system call no
// returned ret, if no read or wrote a socket (its first argument): a
// read begins a request on that descriptor unless one is open there, a
// write ends the one open there. Each descriptor is its own client's
// connection, so a server that reads several requests before it
// answers any (redis's event loop) has each timed from its own read.
func (t *Thread) markRequest(no uint64, ret int64) {
	if ret <= 0 {
		return
	}
	start := false
	switch {
	case contains(requestReads[:], no):
		start = true
	case contains(requestWrites[:], no):
	default:
		return
	}
	fd := int32(t.args[0])
	if _, open := t.requests[fd]; open == start {
		return
	}
	f, _, e := t.sock(uint64(fd))
	if e != 0 {
		return
	}
	f.DecRef()
	what := "request end"
	if start {
		what = "request start"
		if t.requests == nil {
			t.requests = map[int32]struct{}{}
		}
		t.requests[fd] = struct{}{}
	} else {
		delete(t.requests, fd)
	}
	trace.Log(context.Background(), what, t.commName()+" "+strconv.Itoa(int(fd)))
}

func contains(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
