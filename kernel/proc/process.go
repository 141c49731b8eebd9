// Package proc runs user programs: processes, their threads (one kernel
// goroutine per user thread, entering user mode through the machine
// layer), exec of static ELF programs and the system calls they make.
//
// Lock order: Process.mu, then the address space's lock (package mm).
package proc

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
)

// physMem is physical memory as package mm needs it, from the machine
// layer's frame allocator and direct map.
type physMem struct{}

func (physMem) Alloc() uintptr  { return machine.AllocFrame() }
func (physMem) Free(pa uintptr) { machine.FreeFrame(pa) }
func (physMem) Page(pa uintptr) *[mm.PageSize]byte {
	return (*[mm.PageSize]byte)(machine.PhysPointer(pa))
}

func newSpace() (*mm.Space, error) {
	r := machine.KernelReserved()
	return mm.NewSpace(physMem{}, machine.InitAddressSpace, [][2]uintptr{r[0], r[1]}, machine.FlushTLB)
}

// FS is where exec finds programs.
type FS interface {
	// ReadFile returns the contents of a regular file.
	ReadFile(path string) ([]byte, error)
}

// Process is a running program.
type Process struct {
	PID   int
	Space *mm.Space
	FS    FS

	mu      sync.Mutex
	stdout  io.Writer
	stderr  io.Writer
	stdin   io.Reader
	threads map[int]*Thread
	exited  bool
	status  int // wait status: exit code << 8, or the terminating signal
	done    chan struct{}
	name    string
}

// Thread is one user thread.
type Thread struct {
	TID  int
	Proc *Process
	regs machine.UserRegs
	// clearTID is set_tid_address's pointer.
	clearTID uintptr
}

var lastPID atomic.Int64

// Options configure a new process.
type Options struct {
	FS     FS
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Start runs path with argv and envp in a new process.
func Start(o Options, path string, argv, envp []string) (*Process, error) {
	p := &Process{
		PID: int(lastPID.Add(1)), FS: o.FS, stdin: o.Stdin, stdout: o.Stdout, stderr: o.Stderr,
		threads: make(map[int]*Thread), done: make(chan struct{}),
	}
	t := &Thread{TID: p.PID, Proc: p}
	if err := t.exec(path, argv, envp); err != nil {
		return nil, err
	}
	p.threads[t.TID] = t
	go t.run()
	return p, nil
}

// Wait blocks until the process has exited and returns its wait status
// (as wait4 encodes it).
func (p *Process) Wait() int {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// ExitCode decodes a wait status: the exit code, or 128+signal.
func ExitCode(status int) int {
	if status&0x7f != 0 {
		return 128 + status&0x7f
	}
	return status >> 8 & 0xff
}

// exit ends the whole process with a wait status.
func (p *Process) exit(status int) {
	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		return
	}
	p.exited = true
	p.status = status
	p.mu.Unlock()
	p.Space.Destroy()
	close(p.done)
}

func (p *Process) String() string { return fmt.Sprintf("pid %d (%s)", p.PID, p.name) }
