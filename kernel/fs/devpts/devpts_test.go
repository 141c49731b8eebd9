package devpts_test

import (
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devpts"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

type noSignals struct{}

func (noSignals) SignalGroup(int, int)   {}
func (noSignals) SignalProcess(int, int) {}

func setup(t *testing.T) (*vfs.VFS, *devpts.FS) {
	t.Helper()
	v, err := vfs.New(tmpfs.New(tmpfs.Options{}).Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	c := &vfs.Ctx{}
	if err := v.Mkdir(c, nil, "/pts", 0o755); err != nil {
		t.Fatal(err)
	}
	fs := devpts.New(devpts.Options{Dev: linux.MakeDev(0, 20), Signals: noSignals{}})
	if err := v.Mount(c, nil, "/pts", fs.Root(), "devpts", 0); err != nil {
		t.Fatal(err)
	}
	return v, fs
}

func names(t *testing.T, v *vfs.VFS) []string {
	t.Helper()
	d, err := v.Open(&vfs.Ctx{}, nil, "/pts", linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DecRef()
	buf := make([]byte, 4096)
	n, err := d.Getdents(buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for off := 0; off < n; {
		e, l := linux.DecodeDirent64(buf[off:n])
		if e.Name != "." && e.Name != ".." {
			out = append(out, e.Name)
		}
		off += l
	}
	return out
}

func TestSlavesComeAndGo(t *testing.T) {
	v, fs := setup(t)
	if err := fs.SetOptions("mode=620,gid=5,ptmxmode=666,newinstance,max=100"); err != nil {
		t.Fatal(err)
	}
	if err := fs.SetOptions("bogus=1"); !errors.Is(err, linux.EINVAL) {
		t.Errorf("unknown option: %v", err)
	}
	user := &vfs.Ctx{Cred: vfs.Cred{UID: 1000, GID: 1000, EUID: 1000, EGID: 1000}, PID: 3}
	m0, err := v.Open(user, nil, "/pts/ptmx", linux.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := v.Open(user, nil, "/pts/ptmx", linux.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	p0, ok := devpts.MasterOf(m0)
	p1, _ := devpts.MasterOf(m1)
	if !ok || p0.Index != 0 || p1.Index != 1 {
		t.Fatalf("indices %d %d", p0.Index, p1.Index)
	}
	if got := names(t, v); len(got) != 3 || got[0] != "ptmx" || got[1] != "0" || got[2] != "1" {
		t.Errorf("listing %v", got)
	}
	st, err := v.Stat(user, nil, "/pts/1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != linux.S_IFCHR|0o620 || st.UID != 1000 || st.GID != 5 || st.Rdev != linux.MakeDev(136, 1) || st.Ino != 4 {
		t.Errorf("slave attributes %+v", st)
	}
	// Locked until unlockpt.
	if _, err := v.Open(user, nil, "/pts/0", linux.O_RDWR, 0); !errors.Is(err, linux.EIO) {
		t.Errorf("locked slave: %v", err)
	}
	p0.SetLocked(false)
	s0, err := v.Open(user, nil, "/pts/0", linux.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The master closes: the name goes, the index stays taken while the
	// slave is open, and is free once it closes.
	m0.DecRef()
	if _, err := v.Stat(user, nil, "/pts/0", 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("slave name after the master closed: %v", err)
	}
	m2, _ := v.Open(user, nil, "/pts/ptmx", linux.O_RDWR, 0)
	if p2, _ := devpts.MasterOf(m2); p2.Index != 2 {
		t.Errorf("index %d given while 0 is held by its slave", p2.Index)
	}
	if fs.Pairs() != 3 {
		t.Errorf("%d pairs, want 3", fs.Pairs())
	}
	s0.DecRef()
	m3, _ := v.Open(user, nil, "/pts/ptmx", linux.O_RDWR, 0)
	if p3, _ := devpts.MasterOf(m3); p3.Index != 0 {
		t.Errorf("index %d, want 0 (freed)", p3.Index)
	}
	for _, f := range []*vfs.OpenFile{m1, m2, m3} {
		f.DecRef()
	}
	if fs.Pairs() != 0 || len(names(t, v)) != 1 {
		t.Errorf("after every close: %d pairs, listing %v", fs.Pairs(), names(t, v))
	}
}
