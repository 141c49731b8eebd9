package vfs_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func BenchmarkStatPath(b *testing.B) {
	k := newKernelSys(b)
	k.mkdir("usr", 0o755)
	k.mkdir("usr/lib", 0o755)
	k.mkdir("usr/lib/x86_64", 0o755)
	f, _ := k.open("usr/lib/x86_64/libc.so", linux.O_CREAT|linux.O_RDWR, 0o644)
	k.close(f)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.v.Stat(&k.ctx, nil, "/usr/lib/x86_64/libc.so", 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFile4K(b *testing.B) {
	k := newKernelSys(b)
	fd, _ := k.open("f", linux.O_CREAT|linux.O_RDWR, 0o644)
	k.write(fd, make([]byte, 1<<20))
	f, _ := k.fdt.Get(fd)
	defer f.DecRef()
	buf := make([]byte, 4096)
	b.SetBytes(4096)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := f.Pread(buf, int64(i%256)*4096, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPipe(b *testing.B) {
	r, w, _ := vfs.NewPipe(0, vfs.Owner{})
	defer r.DecRef()
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _ := r.Read(buf, nil)
			if n == 0 {
				close(done)
				return
			}
		}
	}()
	msg := make([]byte, 4096)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		w.Write(msg, nil)
	}
	w.DecRef()
	<-done
}

// BenchmarkLookupParallel is bench/scale's lookup on the host: stat,
// open and close of one deep path from every goroutine (run with -cpu
// 1,2 to compare).
func BenchmarkLookupParallel(b *testing.B) {
	k := newKernelSys(b)
	for _, d := range []string{"/t", "/t/usr", "/t/usr/share", "/t/usr/share/doc", "/t/usr/share/doc/pkg"} {
		k.mkdir(d, 0o755)
	}
	const path = "/t/usr/share/doc/pkg/file"
	fd, _ := k.open(path, linux.O_CREAT|linux.O_RDWR, 0o644)
	k.close(fd)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := k.ctx
		for pb.Next() {
			if _, err := k.v.Stat(&c, nil, path, 0); err != nil {
				b.Error(err)
				return
			}
			f, err := k.v.Open(&c, nil, path, linux.O_RDONLY, 0)
			if err != nil {
				b.Error(err)
				return
			}
			f.DecRef()
		}
	})
}

// BenchmarkChurnSharedDirParallel is bench/scale's files_shared on the
// host: every goroutine creates, writes 4 KiB to, closes and later
// unlinks files in one directory.
func BenchmarkChurnSharedDirParallel(b *testing.B) {
	k := newKernelSys(b)
	k.mkdir("/shared", 0o777)
	var worker atomic.Int32
	buf := make([]byte, 4096)
	b.RunParallel(func(pb *testing.PB) {
		c := k.ctx
		w := worker.Add(1)
		name := func(n int) string { return fmt.Sprintf("/shared/w%d.%d", w, n%32) }
		for n := 0; pb.Next(); n++ {
			f, err := k.v.Open(&c, nil, name(n), linux.O_CREAT|linux.O_WRONLY|linux.O_TRUNC, 0o644)
			if err != nil {
				b.Error(err)
				return
			}
			f.Write(buf, nil)
			f.DecRef()
			if n >= 16 {
				if err := k.v.Unlink(&c, nil, name(n-16)); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}
