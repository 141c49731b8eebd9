package cpio

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// write builds a newc archive the way cpio(1) does.
func write(entries []Entry) []byte {
	var b bytes.Buffer
	pad := func() {
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	add := func(e Entry) {
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			1, e.Mode, e.UID, e.GID, 1, e.Mtime, len(e.Data), 0, 0, 0, 0, len(e.Name)+1, 0)
		b.WriteString(e.Name)
		b.WriteByte(0)
		pad()
		b.Write(e.Data)
		pad()
	}
	for _, e := range entries {
		add(e)
	}
	add(Entry{Name: "TRAILER!!!"})
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	in := []Entry{
		{Name: "bin", Mode: 0o40755},
		{Name: "bin/hello", Mode: 0o100755, UID: 0, Mtime: 1700000000, Data: []byte("\x7fELF..")},
		{Name: "bin/sh", Mode: 0o120777, Data: []byte("busybox")},
		{Name: "empty", Mode: 0o100644},
	}
	out, err := Parse(write(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d entries, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i].Name != in[i].Name || out[i].Mode != in[i].Mode || !bytes.Equal(out[i].Data, in[i].Data) || out[i].Mtime != in[i].Mtime {
			t.Errorf("entry %d: %+v, want %+v", i, out[i], in[i])
		}
	}
}

func TestMalformed(t *testing.T) {
	good := write([]Entry{{Name: "a", Mode: 0o100644, Data: []byte("hello")}})
	for name, b := range map[string][]byte{
		"empty":       nil,
		"no trailer":  good[:len(good)-120],
		"bad magic":   append([]byte("070707"), good[6:]...),
		"cut in data": good[:112+4],
		"bad hex":     append(append([]byte(nil), good[:10]...), append([]byte("zz"), good[12:]...)...),
	} {
		if _, err := Parse(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRealCpio reads an archive made by Debian's cpio, if installed.
func TestRealCpio(t *testing.T) {
	if _, err := exec.LookPath("cpio"); err != nil {
		t.Skip("cpio not installed")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "etc"), 0o755)
	os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	os.Symlink("passwd", filepath.Join(dir, "etc/link"))
	cmd := exec.Command("sh", "-c", "find . | sort | cpio -o -H newc --quiet")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	es, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	for _, e := range es {
		got[e.Name] = e
	}
	if e := got["etc/passwd"]; string(e.Data) != "root:x:0:0::/root:/bin/sh\n" || e.Mode&0o170000 != 0o100000 {
		t.Errorf("etc/passwd: %+v", e)
	}
	if e := got["etc/link"]; string(e.Data) != "passwd" || e.Mode&0o170000 != 0o120000 {
		t.Errorf("symlink: %+v", e)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(write([]Entry{{Name: "x", Data: []byte("y")}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := Parse(b)
		if err == nil {
			for _, e := range es {
				if len(e.Data) > len(b) {
					t.Fatal("entry larger than the archive")
				}
			}
		}
	})
}
