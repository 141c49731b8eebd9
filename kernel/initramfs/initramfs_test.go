package initramfs

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func archive(entries ...[3]string) []byte {
	var b bytes.Buffer
	add := func(name, mode, data string) {
		var m uint32
		fmt.Sscanf(mode, "%o", &m)
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			1, m, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		b.WriteString(name + "\x00")
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.WriteString(data)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	for _, e := range entries {
		add(e[0], e[1], e[2])
	}
	add("TRAILER!!!", "0", "")
	return b.Bytes()
}

func TestReadFileFollowsLinks(t *testing.T) {
	fs, err := New(archive(
		[3]string{"bin", "40755", ""},
		[3]string{"bin/busybox", "100755", "BB"},
		[3]string{"bin/sh", "120777", "busybox"},
		[3]string{"sbin/init", "120777", "/bin/sh"},
		[3]string{"loop", "120777", "loop"},
	))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/bin/busybox", "bin/sh", "/sbin/init", "/sbin/../bin/sh"} {
		if b, err := fs.ReadFile(p); err != nil || string(b) != "BB" {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}
	if _, err := fs.ReadFile("/nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if _, err := fs.ReadFile("/bin"); err == nil {
		t.Error("reading a directory succeeded")
	}
	if _, err := fs.ReadFile("/loop"); err == nil {
		t.Error("a symlink loop resolved")
	}
}
