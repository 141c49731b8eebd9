package vfs_test

import (
	"fmt"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/cpio"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// newcMember encodes one member of a newc archive.
func newcMember(ino int, name string, mode uint32, data string) string {
	s := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%s\x00",
		ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0, name)
	for len(s)%4 != 0 {
		s += "\x00"
	}
	s += data
	for len(s)%4 != 0 {
		s += "\x00"
	}
	return s
}

// Example shows the boot-time setup the process layer does: a tmpfs root
// from the initramfs, devfs on /dev, and system calls through an FDTable.
func Example() {
	initrd := newcMember(1, "etc", linux.S_IFDIR|0o755, "") +
		newcMember(2, "etc/motd", linux.S_IFREG|0o644, "welcome\n") +
		newcMember(3, "dev", linux.S_IFDIR|0o755, "") +
		newcMember(4, "TRAILER!!!", 0, "")
	entries, err := cpio.Parse([]byte(initrd))
	if err != nil {
		panic(err)
	}
	root, err := tmpfs.FromCPIO(entries, tmpfs.Options{Dev: linux.MakeDev(0, 1)})
	if err != nil {
		panic(err)
	}
	v, _ := vfs.New(root.Root(), "rootfs")
	c := &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5)})
	if err := v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0); err != nil {
		panic(err)
	}
	dev.Register(v)

	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	for _, p := range []string{"/dev/null", "/dev/null", "/dev/null"} { // stdin, stdout, stderr
		f, _ := v.Open(c, nil, p, linux.O_RDWR, 0)
		fdt.Install(f, false)
		f.DecRef()
	}
	f, err := v.Open(c, nil, "/etc/motd", linux.O_RDONLY|linux.O_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	fd, _ := fdt.Install(f, true)
	f.DecRef()

	g, _ := fdt.Get(fd)
	buf := make([]byte, 64)
	n, _ := g.Read(buf, nil)
	g.DecRef()
	fmt.Printf("fd %d: %q\n", fd, buf[:n])

	_, err = v.Open(c, nil, "/etc/nope", linux.O_RDONLY, 0)
	fmt.Println("errno", int(err.(linux.Errno)), err)
	fdt.CloseOnExec()
	fmt.Println("after exec:", fdt.FDs())
	// Output:
	// fd 3: "welcome\n"
	// errno 2 No such file or directory
	// after exec: [0 1 2]
}
