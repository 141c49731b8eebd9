package ext4

import (
	"fmt"
	"testing"

	"shortbread/kernel/abi/linux"
)

// Host benchmarks on an in-memory device: the file system's own cost,
// without a disk's.

func benchFS(b *testing.B, size string) *FS {
	b.Helper()
	dev := loadImage(b, mkfs(b, size, "", "-t", "ext4", "-b", "4096"))
	f, err := Mount(dev, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return f
}

func BenchmarkWriteSequential(b *testing.B) {
	f := benchFS(b, "512M")
	ino, err := f.Create(RootIno, "big", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	for i := 0; i < b.N; i++ {
		off := int64(i%4096) * int64(len(chunk)) // wrap at 256 MiB
		if _, err := f.WriteAt(ino, chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkReadSequential(b *testing.B) {
	f := benchFS(b, "512M")
	ino, _ := f.Create(RootIno, "big", linux.S_IFREG|0o644, 0, 0, 0, 0)
	chunk := make([]byte, 64<<10)
	for i := 0; i < 1024; i++ {
		f.WriteAt(ino, chunk, int64(i)*int64(len(chunk)))
	}
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ReadAt(ino, chunk, int64(i%1024)*int64(len(chunk))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateWriteUnlink: the metadata cycle of a mail spool.
func BenchmarkCreateWriteUnlink(b *testing.B) {
	f := benchFS(b, "256M")
	d, _ := f.Mkdir(RootIno, "spool", 0o755, 0, 0)
	msg := make([]byte, 4000)
	for i := 0; i < b.N; i++ {
		name := fmt.Sprint("m", i)
		ino, err := f.Create(d, name, linux.S_IFREG|0o600, 0, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.WriteAt(ino, msg, 0)
		if i >= 1000 {
			if err := f.Unlink(d, fmt.Sprint("m", i-1000)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCreateFsync adds a Sync (fsync: a journal commit) per file.
func BenchmarkCreateFsync(b *testing.B) {
	f := benchFS(b, "256M")
	d, _ := f.Mkdir(RootIno, "spool", 0o755, 0, 0)
	msg := make([]byte, 4000)
	for i := 0; i < b.N; i++ {
		ino, err := f.Create(d, fmt.Sprint("m", i), linux.S_IFREG|0o600, 0, 0, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.WriteAt(ino, msg, 0)
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}
