package main

// The terminals: the console's (consoles.go), and the pseudo-terminals of
// devpts, mounted on /dev/pts at boot and by mount -t devpts.

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devpts"
	"shortbread/kernel/proc"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// newTerminals makes the console's terminal (the screen's size when the
// screen is a console, else 24 by 80, as a VT100) and the devpts instance.
func (k *kernel) newTerminals() {
	k.console = tty.New(tty.WriterOutput{W: &k.cons.tty}, proc.Signals{}, nil)
	k.console.SetWindowSize(k.consoleSize())
	k.console.SetDevice(linux.MakeDev(5, 1))
	k.pts = devpts.New(devpts.Options{Dev: linux.MakeDev(0, anonMinor.Add(1)), Signals: proc.Signals{}, Clock: wallclock.Now})
}

// mountPts mounts devpts on /dev/pts.
func (k *kernel) mountPts(v *vfs.VFS, c *vfs.Ctx) error {
	return v.Mount(c, nil, "/dev/pts", k.pts.Root(), "devpts", 0)
}

// devptsType is the devpts file system type: every mount shows the one
// instance (see package devpts), with the options given.
func (k *kernel) devptsType() vfs.FSType {
	return vfs.FSType{Make: func(_ vfs.Source, _ bool, data string) (*vfs.FileSystem, error) {
		if err := k.pts.SetOptions(data); err != nil {
			return nil, err
		}
		return &vfs.FileSystem{Root: k.pts.Root()}, nil
	}}
}
