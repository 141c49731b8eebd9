package selftest

// Tests of user programs: the smoke programs of user/smoke, from the boot
// initramfs, run as real ring-3 processes.

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"shortbread/kernel/machine"
	"shortbread/kernel/proc"
)

// Initramfs is the boot file system, set by the kernel before the tests.
var Initramfs proc.FS

// runUser runs a program to completion and returns its exit code and
// everything it wrote.
func runUser(path string, argv, envp []string) (int, string, error) {
	if Initramfs == nil {
		return 0, "", errors.New("no initramfs")
	}
	var out syncBuffer
	p, err := proc.Start(proc.Options{FS: Initramfs, Stdout: &out, Stderr: &out}, path, argv, envp)
	if err != nil {
		return 0, "", err
	}
	return proc.ExitCode(p.Wait()), out.String(), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testUserHello() error {
	code, out, err := runUser("/bin/hello", []string{"hello"}, []string{"SHORTBREAD=1"})
	if err != nil {
		return err
	}
	if want := "hello, world from hello (argc=1, SHORTBREAD=1)\n"; code != 0 || out != want {
		return fmt.Errorf("exit %d, output %q, want 0 and %q", code, out, want)
	}
	return nil
}

func testUserSegfault() error {
	code, out, err := runUser("/bin/fault", []string{"fault"}, nil)
	if err != nil {
		return err
	}
	if code != 128+11 {
		return fmt.Errorf("exit code %d (output %q), want 139: killed by SIGSEGV", code, out)
	}
	return nil
}

func testUserEFAULT() error {
	code, out, err := runUser("/bin/efault", []string{"efault"}, nil)
	if err != nil {
		return err
	}
	if code != 0 || strings.Contains(out, "not ok") || strings.Count(out, "ok ") < 6 {
		return fmt.Errorf("exit %d, output:\n%s", code, out)
	}
	return nil
}

func testUserENOEXEC() error {
	_, _, err := runUser("/bin/broken", []string{"broken"}, nil)
	if !errors.Is(err, proc.ErrNoExec) {
		return fmt.Errorf("exec of a truncated ELF: %v, want ENOEXEC", err)
	}
	return nil
}

// testUserMany runs many short processes at once on every CPU and checks
// that their memory all comes back.
func testUserMany() error {
	runtime.GC()
	before := machine.ReadMemStats().FreeFrames
	const n = 32
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			code, out, err := runUser("/bin/hello", []string{"hello"}, []string{"N=" + fmt.Sprint(i)})
			if err == nil && (code != 0 || !strings.HasSuffix(out, fmt.Sprintf("N=%d)\n", i))) {
				err = fmt.Errorf("process %d: exit %d output %q", i, code, out)
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			return err
		}
	}
	runtime.GC()
	after := machine.ReadMemStats().FreeFrames
	// Page tables and user frames must be back; allow for the Go heap.
	if before > after+256 {
		return fmt.Errorf("%d frames not returned after %d processes", before-after, n)
	}
	return nil
}

func testUserProcs() error {
	code, out, err := runUser("/bin/procs", []string{"procs"}, nil)
	if err != nil {
		return err
	}
	if code != 0 || strings.Contains(out, "not ok") {
		return fmt.Errorf("exit %d, output:\n%s", code, out)
	}
	return nil
}

// testUserFuzz lets several processes make random system calls with
// random arguments; the kernel must come out working.
func testUserFuzz() error {
	code, out, err := runUser("/bin/fuzz", []string{"fuzz", "4", "3000"}, nil)
	if err != nil {
		return err
	}
	if code != 0 || !strings.Contains(out, "fuzz: 4 processes") {
		return fmt.Errorf("exit %d, output %q", code, out)
	}
	// The kernel still runs programs afterwards.
	return testUserHello()
}

// testUserProcGC reads the GC statistics from user space (/proc) and sees
// them advance after a collection it asks for.
func testUserProcGC() error {
	code, out, err := runUser("/bin/procgc", []string{"procgc"}, nil)
	if err != nil {
		return err
	}
	if code != 0 || strings.Contains(out, "not ok") {
		return fmt.Errorf("exit %d, output:\n%s", code, out)
	}
	return nil
}
