package vfs_test

import (
	"encoding/binary"
	"math"
	"testing"

	"shortbread/kernel/abi/linux"
)

func TestPipeBasics(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		p, err := s.pipe2(0)
		must(t, "pipe2", err)
		fl, _ := s.fcntl(p[0], linux.F_GETFD, 0)
		wantN(t, "no FD_CLOEXEC", fl, nil, 0)
		fl, _ = s.fcntl(p[0], linux.F_GETFL, 0)
		wantN(t, "read end F_GETFL", fl, nil, linux.O_RDONLY)
		fl, _ = s.fcntl(p[1], linux.F_GETFL, 0)
		wantN(t, "write end F_GETFL", fl, nil, linux.O_WRONLY)
		a, _ := s.fstat(p[0])
		b, _ := s.fstat(p[1])
		if a.Mode != linux.S_IFIFO|0o600 || a.Ino != b.Ino || a.Nlink != 1 {
			t.Errorf("pipe fstat: mode %#o ino %d/%d nlink %d", a.Mode, a.Ino, b.Ino, a.Nlink)
		}
		n, err := s.write(p[1], []byte("hello"))
		wantN(t, "write", n, err, 5)
		s.write(p[1], []byte(" there"))
		buf := make([]byte, 64)
		n, err = s.read(p[0], buf[:3])
		wantN(t, "partial read", n, err, 3)
		n, err = s.read(p[0], buf[3:])
		if n != 8 || string(buf[:11]) != "hello there" {
			t.Errorf("read across writes: %q %v", buf[:3+n], err)
		}
		_, err = s.write(p[0], []byte("x"))
		wantErr(t, "write on the read end", err, linux.EBADF)
		_, err = s.read(p[1], buf)
		wantErr(t, "read on the write end", err, linux.EBADF)
		_, err = s.lseek(p[0], 0, linux.SEEK_CUR)
		wantErr(t, "lseek", err, linux.ESPIPE)
		_, err = s.pread(p[0], buf, 0)
		wantErr(t, "pread", err, linux.ESPIPE)
		_, err = s.pwrite(p[1], buf, 0)
		wantErr(t, "pwrite", err, linux.ESPIPE)
		n, err = s.read(p[0], buf[:0])
		wantN(t, "zero-length read", n, err, 0)
		sz, err := s.fcntl(p[0], linux.F_GETPIPE_SZ, 0)
		wantN(t, "F_GETPIPE_SZ", sz, err, 65536)

		// EOF once every write end is closed and the data drained.
		s.write(p[1], []byte("z"))
		w2, _ := s.dup(p[1])
		s.close(p[1])
		s.fcntl(p[0], linux.F_SETFL, linux.O_NONBLOCK)
		n, _ = s.read(p[0], buf)
		wantN(t, "data before EOF", n, nil, 1)
		_, err = s.read(p[0], buf)
		wantErr(t, "a dup'ed write end keeps the pipe open", err, linux.EAGAIN)
		s.close(w2)
		n, err = s.read(p[0], buf)
		wantN(t, "EOF", n, err, 0)
		n, err = s.read(p[0], buf)
		wantN(t, "EOF again", n, err, 0)
		s.close(p[0])

		// EPIPE once every read end is closed.
		p, _ = s.pipe2(0)
		s.close(p[0])
		_, err = s.write(p[1], []byte("x"))
		wantErr(t, "write with no reader", err, linux.EPIPE)
		n, err = s.write(p[1], nil)
		wantN(t, "zero-length write with no reader", n, err, 0)
		s.close(p[1])
		_, err = s.pipe2(linux.O_APPEND)
		wantErr(t, "pipe2 bad flags", err, linux.EINVAL)
	})
}

func TestPipeNonblockCapacity(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		p, err := s.pipe2(linux.O_CLOEXEC | linux.O_NONBLOCK)
		must(t, "pipe2", err)
		for _, fd := range p {
			fl, _ := s.fcntl(fd, linux.F_GETFD, 0)
			wantN(t, "FD_CLOEXEC", fl, nil, linux.FD_CLOEXEC)
			fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
			wantN(t, "O_NONBLOCK", fl&linux.O_NONBLOCK, nil, linux.O_NONBLOCK)
		}
		buf := make([]byte, 1)
		_, err = s.read(p[0], buf)
		wantErr(t, "empty", err, linux.EAGAIN)
		rev, _ := s.poll(p[0], linux.POLLIN)
		wantN(t, "poll empty read end", rev, nil, 0)
		rev, _ = s.poll(p[1], linux.POLLOUT)
		wantN(t, "poll write end", rev, nil, linux.POLLOUT)

		chunk := make([]byte, 1024)
		total := 0
		for {
			n, err := s.write(p[1], chunk)
			if err != nil {
				wantErr(t, "full", err, linux.EAGAIN)
				break
			}
			total += n
		}
		wantN(t, "capacity", total, nil, 65536)
		rev, _ = s.poll(p[1], linux.POLLOUT)
		wantN(t, "poll full write end", rev, nil, 0)
		rev, _ = s.poll(p[0], linux.POLLIN)
		wantN(t, "poll full read end", rev, nil, linux.POLLIN)

		// Reading part of a page frees no slot: nothing fits, big or small.
		big := make([]byte, 65536)
		n, _ := s.read(p[0], big[:100])
		wantN(t, "read 100", n, nil, 100)
		_, err = s.write(p[1], make([]byte, 200))
		wantErr(t, "small write into a partly read full pipe", err, linux.EAGAIN)
		_, err = s.write(p[1], make([]byte, 8192))
		wantErr(t, "large write into a partly read full pipe", err, linux.EAGAIN)
		rev, _ = s.poll(p[1], linux.POLLOUT)
		wantN(t, "poll partly read full pipe", rev, nil, 0)
		// Draining the first page frees its slot: a large write goes in part.
		n, _ = s.read(p[0], big[:4096-100])
		wantN(t, "read rest of page", n, nil, 3996)
		rev, _ = s.poll(p[1], linux.POLLOUT)
		wantN(t, "poll with a free slot", rev, nil, linux.POLLOUT)
		n, err = s.write(p[1], make([]byte, 8192))
		wantN(t, "large write goes in part", n, err, 4096)
		got := 0
		for {
			n, err := s.read(p[0], big)
			if err != nil {
				wantErr(t, "drained", err, linux.EAGAIN)
				break
			}
			got += n
		}
		wantN(t, "drained", got, nil, 65536-4096+4096)

		// Writer gone: POLLHUP (with POLLIN while data remains).
		s.write(p[1], []byte("x"))
		s.close(p[1])
		rev, _ = s.poll(p[0], linux.POLLIN)
		wantN(t, "hangup with data", rev, nil, linux.POLLIN|linux.POLLHUP)
		s.read(p[0], big)
		rev, _ = s.poll(p[0], linux.POLLIN)
		wantN(t, "hangup", rev, nil, linux.POLLHUP)
		s.close(p[0])

		// Reader gone: POLLERR on the write end.
		p, _ = s.pipe2(0)
		s.close(p[0])
		rev, _ = s.poll(p[1], linux.POLLOUT)
		wantN(t, "no reader", rev, nil, linux.POLLOUT|linux.POLLERR)
		s.close(p[1])

		// F_SETPIPE_SZ rounds up to a power of two pages; data must fit.
		p, _ = s.pipe2(linux.O_NONBLOCK)
		sz, err := s.fcntl(p[1], linux.F_SETPIPE_SZ, 5000)
		wantN(t, "F_SETPIPE_SZ", sz, err, 8192)
		total = 0
		for {
			n, err := s.write(p[1], chunk)
			if err != nil {
				break
			}
			total += n
		}
		wantN(t, "resized capacity", total, nil, 8192)
		_, err = s.fcntl(p[1], linux.F_SETPIPE_SZ, 4096)
		wantErr(t, "shrink below the data", err, linux.EBUSY)
		sz, err = s.fcntl(p[1], linux.F_SETPIPE_SZ, 0)
		if err == nil {
			t.Errorf("shrinking to 0 below the data gave %d", sz)
		}
		n, _ = s.read(p[0], big)
		wantN(t, "data kept across resize", n, nil, 8192)
		sz, err = s.fcntl(p[1], linux.F_SETPIPE_SZ, 0)
		wantN(t, "F_SETPIPE_SZ 0", sz, err, 4096)
	})
}

// TestPipeOddWrites checks the page-slot capacity: writes that are not
// page multiples only share a page when the part below a page fits whole.
func TestPipeOddWrites(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		for _, c := range []struct{ chunk, want int }{{1, 65536}, {3000, 16 * 3000}, {2048, 65536}, {5000, 54096}} {
			p, _ := s.pipe2(linux.O_NONBLOCK)
			total := 0
			for {
				n, err := s.write(p[1], make([]byte, c.chunk))
				if err != nil {
					wantErr(t, "full", err, linux.EAGAIN)
					break
				}
				total += n
			}
			if total != c.want {
				t.Errorf("%d-byte writes fill the pipe at %d bytes, want %d", c.chunk, total, c.want)
			}
			s.close(p[0])
			s.close(p[1])
		}
	})
}

func TestEventFD(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
		fd, err := s.eventfd(3, linux.EFD_CLOEXEC|linux.EFD_NONBLOCK)
		must(t, "eventfd", err)
		fl, _ := s.fcntl(fd, linux.F_GETFD, 0)
		wantN(t, "cloexec", fl, nil, linux.FD_CLOEXEC)
		fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_GETFL", fl, nil, linux.O_RDWR|linux.O_NONBLOCK)
		a, _ := s.fstat(fd)
		wantN(t, "mode", a.Mode, nil, 0o600)
		rev, _ := s.poll(fd, linux.POLLIN|linux.POLLOUT)
		wantN(t, "poll", rev, nil, linux.POLLIN|linux.POLLOUT)
		n, err := s.write(fd, u64(4))
		wantN(t, "write", n, err, 8)
		buf := make([]byte, 16)
		n, err = s.read(fd, buf)
		if n != 8 || binary.LittleEndian.Uint64(buf) != 7 {
			t.Errorf("read %d %v value %d", n, err, binary.LittleEndian.Uint64(buf))
		}
		_, err = s.read(fd, buf)
		wantErr(t, "empty", err, linux.EAGAIN)
		rev, _ = s.poll(fd, linux.POLLIN|linux.POLLOUT)
		wantN(t, "poll empty", rev, nil, linux.POLLOUT)
		_, err = s.read(fd, buf[:4])
		wantErr(t, "short read", err, linux.EINVAL)
		_, err = s.write(fd, buf[:4])
		wantErr(t, "short write", err, linux.EINVAL)
		_, err = s.write(fd, u64(math.MaxUint64))
		wantErr(t, "write 2^64-1", err, linux.EINVAL)
		n, err = s.write(fd, u64(math.MaxUint64-1))
		wantN(t, "write to the maximum", n, err, 8)
		_, err = s.write(fd, u64(1))
		wantErr(t, "overflow", err, linux.EAGAIN)
		rev, _ = s.poll(fd, linux.POLLIN|linux.POLLOUT)
		wantN(t, "poll full", rev, nil, linux.POLLIN)
		n, _ = s.read(fd, buf)
		if n != 8 || binary.LittleEndian.Uint64(buf) != math.MaxUint64-1 {
			t.Errorf("read max: %d", binary.LittleEndian.Uint64(buf))
		}
		s.close(fd)

		fd, _ = s.eventfd(2, linux.EFD_SEMAPHORE|linux.EFD_NONBLOCK)
		for i := 0; i < 2; i++ {
			n, _ := s.read(fd, buf)
			if n != 8 || binary.LittleEndian.Uint64(buf) != 1 {
				t.Errorf("semaphore read %d: %d", i, binary.LittleEndian.Uint64(buf))
			}
		}
		_, err = s.read(fd, buf)
		wantErr(t, "semaphore empty", err, linux.EAGAIN)
		s.close(fd)
		_, err = s.eventfd(0, 0x7)
		wantErr(t, "bad flags", err, linux.EINVAL)
	})
}

// TestFIFONonblocking covers named pipes opened without waiting.
func TestFIFONonblocking(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		must(t, "mkfifo", s.mknod("fifo", linux.S_IFIFO|0o644, 0))
		_, err := s.open("fifo", linux.O_WRONLY|linux.O_NONBLOCK, 0)
		wantErr(t, "write end without a reader", err, linux.ENXIO)
		r, err := s.open("fifo", linux.O_RDONLY|linux.O_NONBLOCK, 0)
		must(t, "read end", err)
		rev, _ := s.poll(r, linux.POLLIN)
		wantN(t, "no POLLHUP before any writer", rev, nil, 0)
		buf := make([]byte, 16)
		n, err := s.read(r, buf)
		wantN(t, "read with no writer yet", n, err, 0)
		w, err := s.open("fifo", linux.O_WRONLY|linux.O_NONBLOCK, 0)
		must(t, "write end with a reader", err)
		_, err = s.lseek(w, 0, linux.SEEK_CUR)
		wantErr(t, "lseek", err, linux.ESPIPE)
		n, err = s.write(w, []byte("fifo data"))
		wantN(t, "write", n, err, 9)
		rev, _ = s.poll(r, linux.POLLIN)
		wantN(t, "readable", rev, nil, linux.POLLIN)
		n, _ = s.read(r, buf)
		if string(buf[:n]) != "fifo data" {
			t.Errorf("read %q", buf[:n])
		}
		_, err = s.read(r, buf)
		wantErr(t, "empty with a writer", err, linux.EAGAIN)
		s.close(w)
		rev, _ = s.poll(r, linux.POLLIN)
		wantN(t, "POLLHUP after the writer left", rev, nil, linux.POLLHUP)
		s.close(r)
		rw, err := s.open("fifo", linux.O_RDWR, 0)
		must(t, "O_RDWR does not wait", err)
		s.write(rw, []byte("self"))
		n, _ = s.read(rw, buf)
		if string(buf[:n]) != "self" {
			t.Errorf("O_RDWR read %q", buf[:n])
		}
		a, _ := s.fstat(rw)
		if a.Mode != linux.S_IFIFO|0o644 {
			t.Errorf("fstat of a FIFO: mode %#o", a.Mode)
		}
		s.close(rw)
		// Data does not outlive the last close.
		rw, _ = s.open("fifo", linux.O_RDWR|linux.O_NONBLOCK, 0)
		s.write(rw, []byte("x"))
		s.close(rw)
		rw, _ = s.open("fifo", linux.O_RDWR|linux.O_NONBLOCK, 0)
		_, err = s.read(rw, buf)
		wantErr(t, "fresh pipe after the last close", err, linux.EAGAIN)
		s.close(rw)
	})
}
