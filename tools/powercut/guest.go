package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/tools/powercut/nbd"
	"shortbread/tools/powercut/wcache"
)

// kernel boots one of the two kernels with h_durable as init.
type kernel struct {
	name string
	// args are QEMU's arguments that load the kernel for PC_MODE mode.
	args func(mode string) []string
}

// prepare builds what each kernel boots: for Shortbread an ISO per mode
// (tools/mkiso.sh, the command line is baked in), for Linux the user
// initramfs with Debian's virtio and ext4 modules appended.
// linuxOpts, if not empty, are the mount options of Linux's work boots
// (barrier=0 for the harness's negative control).
// workers is PC_WORKERS, the work boot's processes changing files at
// once, and workload PC_WORKLOAD (files or mail).
func prepare(root, work string, names []string, linuxOpts string, workers int, workload string) (map[string]kernel, error) {
	ks := map[string]kernel{}
	for _, n := range names {
		switch n {
		case "shortbread":
			isos := map[string]string{}
			for _, mode := range []string{"work", "check"} {
				iso := filepath.Join(work, "shortbread-"+mode+".iso")
				cmdline := "init=/tests/h_durable loglevel=warn PC_MODE=" + mode
				if mode == "work" {
					cmdline += fmt.Sprintf(" PC_WORKERS=%d PC_WORKLOAD=%s", workers, workload)
				}
				if err := run(root, "tools/mkiso.sh", iso, "build/stub.elf", "build/kernel.elf", cmdline, "build/user/initramfs.cpio"); err != nil {
					return nil, err
				}
				isos[mode] = iso
			}
			ks[n] = kernel{name: n, args: func(mode string) []string { return []string{"-cdrom", isos[mode]} }}
		case "linux":
			// The one module set every guest uses (modules.sh caches
			// one).
			if err := run(root, "tools/linux/modules.sh", "build/linux"); err != nil {
				return nil, err
			}
			initrd := filepath.Join(work, "linux-initrd.cpio")
			stage := filepath.Join(work, "linux-stage")
			os.RemoveAll(stage)
			script := fmt.Sprintf(`set -e
mkdir -p %[1]s/lib/modules
cp build/linux/modules/*.ko build/linux/modules/load-order %[1]s/lib/modules/
# Linux unpacks concatenated newc archives in turn.
(cd %[1]s && find . | cpio -o -H newc --quiet) | cat build/user/initramfs.cpio - > %[2]s
rm -rf %[1]s`, stage, initrd)
			if err := run(root, "sh", "-c", script); err != nil {
				return nil, err
			}
			ks[n] = kernel{name: n, args: func(mode string) []string {
				cmdline := "console=ttyS0 panic=-1 quiet no_timer_check rdinit=/tests/h_durable PC_MODE=" + mode
				if mode == "work" && linuxOpts != "" {
					cmdline += " PC_OPTS=" + linuxOpts
				}
				if mode == "work" {
					cmdline += fmt.Sprintf(" PC_WORKERS=%d PC_WORKLOAD=%s", workers, workload)
				}
				return []string{"-kernel", "build/linux/vmlinuz", "-initrd", initrd, "-append", cmdline}
			}}
		default:
			return nil, fmt.Errorf("unknown kernel %q (shortbread or linux)", n)
		}
	}
	return ks, nil
}

func run(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// boot is one QEMU run with the disk served over NBD.
type boot struct {
	cmd    *exec.Cmd
	lines  chan string // console lines as they come; closed at EOF
	log    *os.File
	served chan error // the NBD connection's end
	ln     net.Listener
	exited chan struct{} // closed once QEMU is gone; err is Wait's
	err    error
	killed bool
	killMu sync.Mutex
	// trap, when positive, counts down FLUSH requests: the one that
	// brings it to zero is the moment of the cut. The disk stops before
	// it, with the writes it was to cover all in the cache.
	trap atomic.Int32
}

// trapDisk is the disk as QEMU sees it: a FLUSH that springs the boot's
// trap cuts the power instead.
type trapDisk struct {
	*wcache.Disk
	b *boot
}

func (d trapDisk) Flush() error {
	if d.b.trap.Load() > 0 && d.b.trap.Add(-1) == 0 {
		d.b.kill()
		<-d.b.exited // nothing more reaches the disk, nor any reply the guest
		return errors.New("the power is off")
	}
	return d.Disk.Flush()
}

// startBoot serves disk on a unix socket and boots k in mode with it as
// a virtio-blk disk with a write cache (QEMU passes the guest's flushes
// on as NBD_CMD_FLUSH).
func startBoot(root string, k kernel, mode string, disk *wcache.Disk, sock, logPath string, cpus int) (*boot, error) {
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	b := &boot{lines: make(chan string, 4096), served: make(chan error, 1), ln: ln, exited: make(chan struct{})}
	go func() {
		// One connection: QEMU's. Later ones are refused by closing.
		conn, err := ln.Accept()
		if err != nil {
			b.served <- err
			return
		}
		ln.Close()
		srv := &nbd.Server{Name: "disk", Dev: trapDisk{disk, b}, Log: func(f string, a ...any) {
			fmt.Fprintf(os.Stderr, "powercut: "+f+"\n", a...)
		}}
		err = srv.Serve(conn)
		conn.Close()
		b.served <- err
	}()
	args := []string{"-machine", "q35", "-cpu", "max", "-m", "512M", "-smp", fmt.Sprint(cpus),
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
		"-blockdev", "driver=nbd,server.type=unix,server.path=" + sock + ",export=disk,node-name=pcdisk",
		"-device", "virtio-blk-pci,drive=pcdisk,write-cache=on"}
	args = append(args, k.args(mode)...)
	b.cmd = exec.Command("qemu-system-x86_64", args...)
	b.cmd.Dir = root
	b.cmd.Stdin = nil
	b.log, err = os.Create(logPath)
	if err != nil {
		ln.Close()
		return nil, err
	}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	b.cmd.Stderr = b.log
	if err := b.cmd.Start(); err != nil {
		ln.Close()
		return nil, err
	}
	go func() {
		r := bufio.NewReader(out)
		for {
			s, err := r.ReadString('\n')
			if s != "" {
				b.log.WriteString(s)
				b.lines <- s
			}
			if err != nil {
				if err != io.EOF {
					fmt.Fprintf(b.log, "powercut: console: %v\n", err)
				}
				close(b.lines)
				b.err = b.cmd.Wait() // after the last read, as Wait wants
				close(b.exited)
				return
			}
		}
	}()
	return b, nil
}

// kill cuts the power.
func (b *boot) kill() {
	b.killMu.Lock()
	defer b.killMu.Unlock()
	if !b.killed {
		b.killed = true
		b.cmd.Process.Kill()
	}
}

// finish waits for QEMU to exit and for the NBD connection to end, so
// every request QEMU sent has been served; it returns QEMU's exit status
// translated as isa-debug-exit encodes it (-1: killed or no status).
func (b *boot) finish() (status int) {
	for range b.lines {
		// drain: the reader closes lines at EOF
	}
	<-b.exited
	err := b.err
	b.ln.Close()
	select {
	case <-b.served:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(b.log, "powercut: the NBD connection outlived QEMU by 30 s")
	}
	b.log.Close()
	if err == nil {
		return -1 // QEMU exited 0: no status from the guest
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.Exited() && ee.ExitCode()%2 == 1 {
		return (ee.ExitCode() - 1) / 2
	}
	return -1
}
