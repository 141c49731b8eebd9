// Command screentest checks the screen console as a user at the machine
// would: it boots an ISO in QEMU with no serial port (or with the serial
// port written to a file while the screen is the console), types on the
// PS/2 keyboard through QMP's send-key, and reads the screen back: VGA
// text memory through pmemsave under BIOS, the UEFI framebuffer through
// screendump, whose pixels are decoded cell by cell against the kernel's
// own font (package font). tools/screentest.sh runs it in the
// configurations of make screen-test and make test.
//
// usage: screentest -iso ISO [-uefi] [-serial FILE] [-steps short|full|crash] [-timeout 300s]
//
// The ISO must boot busybox's shell on the console (init=/bin/sh). The
// steps type commands whose output the shell has to compute (so an echo
// of the keys typed cannot pass for it), interrupt a sleep with Ctrl-C,
// and end with `exit 3`, which must power the machine off with status 3.
// -steps crash boots an ISO whose kernel panics (crash=nil) on a machine
// without isa-debug-exit, where the failing power-off halts and leaves
// the screen as it is, and waits until the screen shows the panic, the
// faulting function in the goroutine trace and the registers.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

var (
	iso      = flag.String("iso", "", "ISO to boot")
	uefi     = flag.Bool("uefi", false, "boot through OVMF (the screen is a GOP framebuffer)")
	serial   = flag.String("serial", "", "write the serial port to this file (default: no serial port)")
	steps    = flag.String("steps", "short", "short, full or crash")
	timeout  = flag.Duration("timeout", 300*time.Second, "limit for the whole run")
	cpus     = flag.Int("cpus", 1, "CPUs")
	expectIn = flag.String("expect-serial", "", "comma-separated strings the serial file must contain at the end")
	rejectIn = flag.String("reject-serial", "", "comma-separated strings the serial file must not contain")
	show     = flag.Bool("show", false, "print the screen as last read before exit 3")
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("screentest: ")
	flag.Parse()
	if *iso == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(); err != nil {
		log.Fatalf("FAILED: %v", err)
	}
	log.Printf("passed")
}

func run() error {
	dir, err := os.MkdirTemp("", "screentest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "qmp")
	args := []string{"-machine", "q35", "-cpu", "max", "-m", "512M", "-smp", fmt.Sprint(*cpus),
		"-display", "none", "-no-reboot", "-monitor", "none", "-cdrom", *iso,
		"-qmp", "unix:" + sock + ",server=on,wait=off"}
	if *steps != "crash" {
		args = append(args, "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04")
	}
	if *serial != "" {
		args = append(args, "-serial", "file:"+*serial)
	} else {
		args = append(args, "-serial", "none")
	}
	if *uefi {
		args = append(args, "-bios", "/usr/share/ovmf/OVMF.fd")
	}
	cmd := exec.Command("qemu-system-x86_64", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(*timeout)
	defer cmd.Process.Kill()

	var q *qmp
	for q == nil {
		if q, err = dialQMP(sock); err != nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("QMP: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	defer q.close()
	s := &session{q: q, dir: dir, deadline: deadline}

	if *steps == "crash" {
		err := s.crash()
		if err != nil || *show {
			s.dump()
		}
		return err
	}
	if err := s.scenario(); err != nil {
		s.dump()
		return err
	}
	if *show {
		s.dump()
	}
	// exit 3 powers off with status 3: isa-debug-exit makes QEMU exit 7.
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			return fmt.Errorf("QEMU ended with %v, want exit status 7 (the shell's exit 3)", err)
		}
	case <-time.After(time.Until(deadline)):
		return errors.New("the machine did not power off after exit 3")
	}
	return checkSerial()
}

// checkSerial looks for what must and must not be in the serial file.
func checkSerial() error {
	if *serial == "" {
		return nil
	}
	b, err := os.ReadFile(*serial)
	if err != nil {
		return err
	}
	for _, want := range splitList(*expectIn) {
		if !strings.Contains(string(b), want) {
			return fmt.Errorf("the serial port lacks %q", want)
		}
	}
	for _, bad := range splitList(*rejectIn) {
		if strings.Contains(string(b), bad) {
			return fmt.Errorf("the serial port has %q", bad)
		}
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// session is one booted machine.
type session struct {
	q        *qmp
	dir      string
	deadline time.Time
	last     []string // the screen as last read
}

func (s *session) scenario() error {
	// The shell's prompt ends the cursor's line once booted.
	if err := s.waitFor("the shell's prompt", func(l []string) bool { return promptAt(l) >= 0 }); err != nil {
		return err
	}
	log.Printf("booted; screen %dx%d", len(s.last), width(s.last))
	if *serial == "" && !contains(s.last, "kernel ready:") {
		// With the screen as the only console, the kernel's log is there.
		return errors.New(`the screen does not show the kernel's "kernel ready:" line`)
	}
	// Shifted keys ($, (, *, ), |), a pipe, and output the shell computes.
	if err := s.command("echo sum=$((6*7)) | tr a-z A-Z", "SUM=42"); err != nil {
		return err
	}
	// Ctrl-C reaches the line discipline and interrupts the foreground
	// job, once it has said it runs (before its exec, SIGINT ends the
	// child shell with the same status).
	if err := s.command("sh -c 'echo ready; exec sleep 60'", "ready"); err != nil {
		return err
	}
	if err := s.keys("ctrl", "c"); err != nil {
		return err
	}
	if err := s.command("echo rc=$?", "rc=130"); err != nil {
		return err
	}
	if *steps == "full" {
		if err := s.full(); err != nil {
			return err
		}
	}
	return s.typeLine("exit 3")
}

// crash waits for the crash report on the screen: the panic's message,
// the faulting function in the goroutine trace (main.crash, which
// crash=nil calls) and a register line of the machine layer, which comes
// last, so the report has been drawn to its end.
func (s *session) crash() error {
	err := s.waitFor("the panic, its trace and the registers", func(l []string) bool {
		return contains(l, "panic: runtime error: invalid memory address or nil pointer dereference") &&
			contains(l, "main.crash(") && contains(l, "rip=0x")
	})
	if err == nil {
		log.Printf("the crash report is on the %dx%d screen", width(s.last), len(s.last))
	}
	return err
}

// full adds scrolling, clearing and line editing.
func (s *session) full() error {
	// 60 lines scroll the screen: the last numbers sit above the prompt.
	if err := s.typeLine("seq 1 60"); err != nil {
		return err
	}
	if err := s.waitFor("seq's last lines above the prompt", func(l []string) bool {
		p := promptAt(l)
		return p >= 3 && l[p-1] == "60" && l[p-2] == "59" && l[p-3] == "58"
	}); err != nil {
		return err
	}
	// clear leaves the prompt alone at the top.
	if err := s.typeLine("clear"); err != nil {
		return err
	}
	if err := s.waitFor("a cleared screen", func(l []string) bool {
		if promptAt(l) != 0 {
			return false
		}
		for _, line := range l[1:] {
			if line != "" {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	// Line editing: Backspace, then the left arrow and an insertion.
	if err := s.typeText("echo abd"); err != nil {
		return err
	}
	if err := s.keys("backspace"); err != nil {
		return err
	}
	if err := s.typeText("cx"); err != nil {
		return err
	}
	if err := s.keys("left"); err != nil {
		return err
	}
	if err := s.typeText("Y"); err != nil {
		return err
	}
	if err := s.keys("ret"); err != nil {
		return err
	}
	if err := s.waitFor(`"abcYx" from the edited line`, func(l []string) bool { return contains(l, "abcYx") && outputLine(l, "abcYx") }); err != nil {
		return err
	}
	// A long line wraps at the right margin and its output follows.
	long := "echo " + strings.Repeat("w", width(s.last)) + " | wc -c"
	return s.command(long, fmt.Sprint(width(s.last)+1))
}

// command types line, presses Enter and waits for a line of output that
// is exactly want.
func (s *session) command(line, want string) error {
	if err := s.typeLine(line); err != nil {
		return err
	}
	return s.waitFor(fmt.Sprintf("%q after %q", want, line), func(l []string) bool { return outputLine(l, want) })
}

// typeLine types line, waits until the screen shows it, and presses Enter.
func (s *session) typeLine(line string) error {
	if err := s.typeText(line); err != nil {
		return err
	}
	return s.keys("ret")
}

// typeText types text a key at a time and waits until the cursor's line
// ends with it (the echo), so nothing is typed ahead of a slow guest.
func (s *session) typeText(text string) error {
	for _, r := range text {
		k, ok := keyFor(r)
		if !ok {
			return fmt.Errorf("no key for %q", r)
		}
		if err := s.keys(k...); err != nil {
			return err
		}
	}
	tail := text
	if len(tail) > 20 {
		tail = tail[len(tail)-20:]
	}
	return s.waitFor(fmt.Sprintf("the echo of %q", text), func(l []string) bool {
		return strings.Contains(strings.Join(l, ""), tail)
	})
}

// keys presses the keys together (QMP qcodes) and releases them.
func (s *session) keys(codes ...string) error {
	var ks []map[string]string
	for _, c := range codes {
		ks = append(ks, map[string]string{"type": "qcode", "data": c})
	}
	if err := s.q.do("send-key", map[string]any{"keys": ks, "hold-time": 40}); err != nil {
		return err
	}
	// The release comes after the hold time; the next key waits for it
	// so that a Shift does not reach the key after.
	time.Sleep(80 * time.Millisecond)
	return nil
}

// waitFor reads the screen until ok holds for its lines.
func (s *session) waitFor(what string, ok func([]string) bool) error {
	for {
		l, err := s.screen()
		if err != nil {
			return err
		}
		s.last = l
		if ok(l) {
			return nil
		}
		if time.Now().After(s.deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// screen reads the screen's text.
func (s *session) screen() ([]string, error) {
	if *uefi {
		f := filepath.Join(s.dir, "screen.ppm")
		if err := s.q.do("screendump", map[string]any{"filename": f}); err != nil {
			return nil, err
		}
		return readPPM(f)
	}
	f := filepath.Join(s.dir, "screen.bin")
	if err := s.q.do("pmemsave", map[string]any{"val": 0xb8000, "size": 80 * 25 * 2, "filename": f}); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	return textCells(b, 80, 25), nil
}

// dump prints the screen as last read, for a failure's log.
func (s *session) dump() {
	fmt.Fprintln(os.Stderr, "screen:")
	for _, l := range s.last {
		fmt.Fprintf(os.Stderr, "|%s\n", strings.ReplaceAll(l, "\x7f", "#"))
	}
}

// promptAt returns the row of the last shell prompt with nothing typed
// after it, or -1.
func promptAt(l []string) int {
	for i := len(l) - 1; i >= 0; i-- {
		if l[i] == "" {
			continue
		}
		// busybox ash's prompt for root in /.
		if strings.HasSuffix(l[i], "/ #") {
			return i
		}
		return -1
	}
	return -1
}

// outputLine reports whether a line is exactly want.
func outputLine(l []string, want string) bool {
	for _, line := range l {
		if line == want {
			return true
		}
	}
	return false
}

func contains(l []string, s string) bool {
	for _, line := range l {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func width(l []string) int {
	if *uefi {
		return ppmCols
	}
	return 80
}

// qmp is a QMP connection.
type qmp struct {
	c net.Conn
	r *bufio.Reader
}

func dialQMP(path string) (*qmp, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	q := &qmp{c: c, r: bufio.NewReader(c)}
	if _, err := q.r.ReadBytes('\n'); err != nil { // the greeting
		c.Close()
		return nil, err
	}
	if err := q.do("qmp_capabilities", nil); err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmp) close() { q.c.Close() }

// do runs a command and waits for its return, skipping events.
func (q *qmp) do(cmd string, args map[string]any) error {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, _ := json.Marshal(req)
	if _, err := q.c.Write(append(b, '\n')); err != nil {
		return err
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("QMP %s: %v", cmd, err)
		}
		var resp struct {
			Return json.RawMessage
			Error  *struct{ Desc string }
			Event  string
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("QMP %s: %v", cmd, err)
		}
		switch {
		case resp.Error != nil:
			return fmt.Errorf("QMP %s: %s", cmd, resp.Error.Desc)
		case resp.Return != nil:
			return nil
		}
	}
}
