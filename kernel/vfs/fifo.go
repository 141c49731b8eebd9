package vfs

import (
	"sync"

	"shortbread/kernel/abi/linux"
)

// fifoTable holds the pipe of every FIFO that is open somewhere, by
// inode, as Linux keeps it in the inode (fs/pipe.c, fifo_open).
type fifoTable struct {
	mu sync.Mutex
	m  map[Inode]*pipe // protected by mu
}

// openFIFO opens a named pipe: a read-only open waits for a writer and a
// write-only open for a reader, unless O_NONBLOCK (then a write-only
// open with no reader fails with ENXIO); O_RDWR never waits.
func (v *VFS) openFIFO(c *Ctx, ino Inode, flags uint32) (File, error) {
	t := &v.fifos
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[Inode]*pipe)
	}
	p := t.m[ino]
	if p == nil {
		p = newPipe()
		p.onEmpty = func() {
			t.mu.Lock()
			p.mu.Lock()
			if t.m[ino] == p && p.readers == 0 && p.writers == 0 {
				delete(t.m, ino)
			}
			p.mu.Unlock()
			t.mu.Unlock()
		}
		t.m[ino] = p
	}
	nonblock := flags&linux.O_NONBLOCK != 0
	e := &pipeEnd{p: p, wSeen: -1}
	var ready func() bool
	q := &p.rq // a reader waits for a writer on the readers' side
	p.mu.Lock()
	switch flags & linux.O_ACCMODE {
	case linux.O_RDONLY:
		e.read = true
		p.readers++
		p.rOpens++
		if p.writers == 0 {
			seen := p.wOpens
			if nonblock {
				e.wSeen = seen // no POLLHUP before a writer comes
			}
			ready = func() bool { return p.wOpens != seen }
		}
	case linux.O_WRONLY:
		if p.readers == 0 {
			if nonblock {
				if p.writers == 0 {
					delete(t.m, ino)
				}
				p.mu.Unlock()
				t.mu.Unlock()
				return nil, linux.ENXIO
			}
			seen := p.rOpens
			ready = func() bool { return p.rOpens != seen }
			q = &p.wq
		}
		e.write = true
		p.writers++
		p.wOpens++
	default:
		e.read, e.write = true, true
		p.readers++
		p.writers++
		p.rOpens++
		p.wOpens++
	}
	p.mu.Unlock()
	t.mu.Unlock()
	p.rq.Notify()
	p.wq.Notify()
	if ready != nil && !nonblock {
		check := func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return ready()
		}
		if !check() {
			// A wait for the other end is an interruptible sleep: the
			// hung-task detector must not take it for a stuck call.
			if c.Sleeper != nil {
				c.Sleeper.SleepBegin()
			}
			err := WaitFor(q, Blocking{Intr: c.Intr}, check)
			if c.Sleeper != nil {
				c.Sleeper.SleepEnd()
			}
			if err != nil {
				e.Release()
				return nil, err
			}
		}
	}
	return e, nil
}
