package linux

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// TestErrnoMatchesHost compares every errno with the host's (Go's syscall
// package holds the amd64 values) and its text with glibc's wording, which
// Go keeps apart from the first letter's case.
func TestErrnoMatchesHost(t *testing.T) {
	named := map[Errno]syscall.Errno{
		EPERM: syscall.EPERM, ENOENT: syscall.ENOENT, EINTR: syscall.EINTR, EIO: syscall.EIO,
		ENXIO: syscall.ENXIO, EBADF: syscall.EBADF, EAGAIN: syscall.EAGAIN, ENOMEM: syscall.ENOMEM,
		EACCES: syscall.EACCES, EFAULT: syscall.EFAULT, EBUSY: syscall.EBUSY, EEXIST: syscall.EEXIST,
		EXDEV: syscall.EXDEV, ENODEV: syscall.ENODEV, ENOTDIR: syscall.ENOTDIR, EISDIR: syscall.EISDIR,
		EINVAL: syscall.EINVAL, ENFILE: syscall.ENFILE, EMFILE: syscall.EMFILE, ENOTTY: syscall.ENOTTY,
		ETXTBSY: syscall.ETXTBSY, EFBIG: syscall.EFBIG, ENOSPC: syscall.ENOSPC, ESPIPE: syscall.ESPIPE,
		EROFS: syscall.EROFS, EMLINK: syscall.EMLINK, EPIPE: syscall.EPIPE, ERANGE: syscall.ERANGE,
		ENAMETOOLONG: syscall.ENAMETOOLONG, ENOSYS: syscall.ENOSYS, ENOTEMPTY: syscall.ENOTEMPTY,
		ELOOP: syscall.ELOOP, EOVERFLOW: syscall.EOVERFLOW, EOPNOTSUPP: syscall.EOPNOTSUPP,
		ETIMEDOUT: syscall.ETIMEDOUT, ECONNREFUSED: syscall.ECONNREFUSED, EINPROGRESS: syscall.EINPROGRESS,
		EHWPOISON: syscall.Errno(133), ENOTSOCK: syscall.ENOTSOCK,
		EADDRINUSE: syscall.EADDRINUSE, ECHILD: syscall.ECHILD, ESRCH: syscall.ESRCH, E2BIG: syscall.E2BIG,
	}
	for e, h := range named {
		if uintptr(e) != uintptr(h) {
			t.Errorf("%s = %d, host %d", h.Error(), e, h)
		}
	}
	for n := Errno(1); n <= EHWPOISON; n++ {
		if n == 41 || n == 58 {
			continue // numbers Linux leaves unused
		}
		got, host := n.Error(), syscall.Errno(n).Error()
		if got == "" || strings.HasPrefix(got, "errno ") {
			t.Errorf("errno %d has no text", n)
			continue
		}
		if strings.HasPrefix(host, "errno ") || n == EWOULDBLOCK {
			continue
		}
		if got != host && strings.ToLower(got[:1])+got[1:] != host {
			t.Errorf("errno %d: %q, host %q", n, got, host)
		}
	}
	if got := ENOENT.Error(); got != "No such file or directory" {
		t.Errorf("ENOENT text %q", got)
	}
	if got := Errno(4000).Error(); got != "errno 4000" {
		t.Errorf("unknown errno text %q", got)
	}
}

func TestErrnoIs(t *testing.T) {
	var err error = EEXIST
	wrapped := errors.Join(errors.New("context"), err)
	if !errors.Is(wrapped, EEXIST) || errors.Is(wrapped, ENOENT) {
		t.Error("errors.Is does not see a wrapped Errno")
	}
	var e Errno
	if !errors.As(wrapped, &e) || e != EEXIST {
		t.Errorf("errors.As found %v", e)
	}
}

// TestErrnoNoAlloc checks that returning an Errno as an error does not
// allocate (small integers are boxed without allocation).
func TestErrnoNoAlloc(t *testing.T) {
	var sink error
	n := testing.AllocsPerRun(100, func() { sink = Errno(ENAMETOOLONG) })
	_ = sink
	if n != 0 {
		t.Errorf("boxing an Errno allocates %v times", n)
	}
}
