package vfs_test

import (
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
