// Command netinject puts malformed and hostile frames on a Shortbread
// guest's wire for a bounded time while the guest serves HTTP, and checks
// that the kernel stays up, the server answers correctly during and
// after, and the kernel's memory and goroutines return to their
// baseline.
//
// The wire is QEMU's socket netdev (each frame preceded by its length as
// 4 big-endian bytes): the injector listens, QEMU connects. On the
// injector's side of the wire a netstack of its own (10.0.0.2) is the
// real client, and the bad frames (frames.go) are interleaved with its
// traffic.
//
// usage: go run ./tools/netinject [-nic virtio-net-pci] [-cpus 2] [-seconds 20] [-rate 400]
//
//	(after make kernel build/stub.elf user)
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

var p = peer{
	guestMAC: [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56},
	ourMAC:   [6]byte{0x52, 0x54, 0, 0xab, 0xcd, 0xef},
	guestIP:  [4]byte{10, 0, 0, 1},
	ourIP:    [4]byte{10, 0, 0, 2},
}

const page = "served-by-the-guest"

// guestScript starts its server, reports its baseline, and only then
// has the page the injector waits for (so nothing is injected before
// the baseline's counters are read); it waits for the injector's stop
// (a connection to port 9), then for memory and goroutines to come back,
// and reports them with the counters. It waits at least 65 s, past the stack's timers for what the attack left (30 s for
// an unfinished datagram's fragments, 60 s of TIME_WAIT, the SYN-ACK
// retransmissions to flooding addresses), and at most 150 s.
const guestScript = `mkdir -p /www && httpd -p 80 -h /www
kmem() { echo 3 > /proc/sys/vm/drop_caches; sleep 1; awk '/^MemFree:/ {print $2}' /proc/meminfo; }
gor() { grep -c '^goroutine ' /proc/shortbread/goroutines; }
rt() { awk '/^GoMetadata:|^GoOther:/ {s += $2} END {print s + 0}' /proc/meminfo; }
classes() { awk '/^(GoHeapInuse|Slab|KernelStack|GoMetadata|GoOther):/ {printf "%s %s ", $1, $2}' /proc/meminfo; echo; }
m0=$(kmem); g0=$(gor); r0=$(rt)
echo "inject-baseline $m0 $g0 $(classes)"
echo inject-counters-before; cat /proc/net/dev /proc/net/snmp; echo inject-counters-end
echo ` + page + ` > /www/index.html
nc -l -p 9 < /dev/null > /tmp/stop
echo "inject-stop $(cat /tmp/stop)"
t0=$(cut -d. -f1 /proc/uptime)
while :; do m=$(kmem); g=$(gor); echo "inject-wait $m $g"; i=$(($(cut -d. -f1 /proc/uptime) - t0)); [ $i -ge 65 ] && [ $((m0 - m - $(rt) + r0)) -lt 2048 ] && [ $g -le $g0 ] && break; [ $i -lt 150 ] || break; done
echo "inject-after $m $g $i $(classes)"
echo inject-counters-after; cat /proc/net/dev /proc/net/snmp; echo inject-counters-end
true`

func main() {
	nic := flag.String("nic", "virtio-net-pci", "QEMU network device model")
	cpus := flag.Int("cpus", 2, "guest CPUs")
	seconds := flag.Int("seconds", 20, "how long to inject")
	rate := flag.Int("rate", 400, "bad frames a second")
	only := flag.String("kinds", "", "comma-separated kinds of frames to send (default: all)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed, to repeat a run)")
	flag.Parse()
	if *only != "" {
		var sel []kind
		for _, k := range kinds {
			if strings.Contains(","+*only+",", ","+k.name+",") {
				sel = append(sel, k)
			}
		}
		if len(sel) == 0 {
			fmt.Fprintf(os.Stderr, "netinject: no kind in %q\n", *only)
			os.Exit(2)
		}
		kinds = sel
	}
	if err := run(*nic, *cpus, *seconds, *rate, *seed); err != nil {
		fmt.Fprintf(os.Stderr, "netinject (%s, %d CPUs): FAIL: %v\n", *nic, *cpus, err)
		os.Exit(1)
	}
}

// wire is the injector's end of the guest's link.
type wire struct {
	mu   sync.Mutex
	conn net.Conn
}

func (w *wire) send(frame []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(frame)))
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.conn.Write(append(hdr[:], frame...))
	return err
}

func run(nic string, cpus, seconds, rate int, seed uint64) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	mac := net.HardwareAddr(p.guestMAC[:]).String()
	extra := fmt.Sprintf("-netdev socket,id=n0,connect=%s -device %s,netdev=n0,mac=%s", ln.Addr(), nic, mac)
	cmd := exec.Command(filepath.Join(root, "tools/run-cmd.sh"), "-", guestScript)
	cmd.Env = append(os.Environ(), "QEMU_EXTRA="+extra, "CPUS="+strconv.Itoa(cpus), "TIMEOUT=400",
		"KARGS=ip=10.0.0.1:::255.255.255.0::eth0:off")
	if nic == "e1000" {
		cmd.Env = append(cmd.Env, "MACHINE=pc") // where QEMU puts the 82540EM
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return err
	}
	var log strings.Builder
	var logMu sync.Mutex
	guestDone := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
		}
		close(guestDone)
	}()
	guestLog := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return log.String()
	}
	fail := func(err error) error {
		// Stop QEMU itself, so that run-cmd.sh prints the console.
		exec.Command("pkill", "-f", "connect="+ln.Addr().String()).Run()
		select {
		case <-guestDone:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-guestDone
		}
		cmd.Wait()
		return fmt.Errorf("%v\n--- guest:\n%s", err, tail(guestLog(), 40))
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(120 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		return fail(fmt.Errorf("QEMU did not connect: %v", err))
	}
	defer conn.Close()
	w := &wire{conn: conn}
	s, ep, err := hostStack()
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // our stack's frames onto the wire
		for {
			pkt := ep.ReadContext(ctx)
			if pkt == nil {
				return
			}
			b := pkt.ToBuffer()
			frame := b.Flatten()
			b.Release()
			pkt.DecRef()
			w.send(frame)
		}
	}()
	go func() { // the guest's frames to our stack
		r := bufio.NewReader(conn)
		var hdr [4]byte
		for {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > 1<<16 {
				return
			}
			frame := make([]byte, n)
			if _, err := io.ReadFull(r, frame); err != nil {
				return
			}
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
			ep.InjectInbound(0, pkt)
			pkt.DecRef()
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return gonet.DialContextTCP(ctx, s, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(p.guestIP), Port: 80}, ipv4.ProtocolNumber)
		},
	}}
	get := func() error {
		resp, err := client.Get("http://10.0.0.1/index.html")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != page {
			return fmt.Errorf("status %d, body %q", resp.StatusCode, body)
		}
		return nil
	}
	// The guest's console comes back only when it powers off
	// (run-cmd.sh), so its server answering is the sign it is ready.
	if err := retry(240*time.Second, get); err != nil {
		return fail(fmt.Errorf("server not reachable before injecting: %v", err))
	}
	fmt.Printf("netinject (%s, %d CPUs): seed %d; the guest serves its page\n", nic, cpus, seed)

	// Inject, with the real client fetching the page meanwhile.
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	counts := make([]int, len(kinds))
	var gets, okGets atomic.Int64
	stopGets := make(chan struct{})
	var getsDone sync.WaitGroup
	getsDone.Add(1)
	go func() {
		defer getsDone.Done()
		for {
			select {
			case <-stopGets:
				return
			case <-time.After(500 * time.Millisecond):
			}
			gets.Add(1)
			if get() == nil {
				okGets.Add(1)
			}
		}
	}()
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	tick := time.NewTicker(time.Second / 50)
	sent := 0
	for time.Now().Before(end) {
		<-tick.C
		for quota := rate / 50; quota > 0; {
			k := r.IntN(len(kinds))
			for _, f := range kinds[k].make(r, p) {
				if err := w.send(f); err != nil {
					return fail(fmt.Errorf("the wire broke after %d frames: %v", sent, err))
				}
				counts[k]++
				sent++
				quota--
			}
		}
	}
	tick.Stop()
	close(stopGets)
	getsDone.Wait()
	var kindsSent []string
	for i, k := range kinds {
		kindsSent = append(kindsSent, fmt.Sprintf("%s %d", k.name, counts[i]))
	}
	fmt.Printf("netinject (%s, %d CPUs): %d bad frames in %d s (%s); %d of %d page fetches meanwhile answered\n",
		nic, cpus, sent, seconds, strings.Join(kindsSent, ", "), okGets.Load(), gets.Load())

	if err := retry(60*time.Second, get); err != nil {
		return fail(fmt.Errorf("server not answering after the injection: %v", err))
	}
	if err := retry(30*time.Second, func() error {
		c, err := gonet.DialContextTCP(ctx, s, tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4(p.guestIP), Port: 9}, ipv4.ProtocolNumber)
		if err != nil {
			return err
		}
		c.Write([]byte("stop\n"))
		return c.Close()
	}); err != nil {
		return fail(fmt.Errorf("could not tell the guest to stop: %v", err))
	}
	stopped := time.Now()
	select {
	case <-guestDone:
	case <-time.After(300 * time.Second):
		return fail(fmt.Errorf("guest did not finish %v after the stop", time.Since(stopped).Round(time.Second)))
	}
	werr := cmd.Wait()
	glog := guestLog()
	if werr != nil {
		return fmt.Errorf("guest failed (%v)\n--- guest:\n%s", werr, tail(glog, 40))
	}
	return judge(nic, cpus, glog, counts)
}

var (
	baseRe  = regexp.MustCompile(`(?m)^inject-baseline (\d+) (\d+)`)
	afterRe = regexp.MustCompile(`(?m)^inject-after (\d+) (\d+) (\d+)`)
)

// judge checks the guest's report: memory and goroutines back, and the
// interface's counters. Memory is what MemFree lost beyond the growth
// of the runtime's own records (GoMetadata, GoOther), which it keeps at
// their high-water mark.
func judge(nic string, cpus int, glog string, counts []int) error {
	b, a := baseRe.FindStringSubmatch(glog), afterRe.FindStringSubmatch(glog)
	if a == nil || b == nil {
		return fmt.Errorf("no inject-baseline or inject-after line\n--- guest:\n%s", tail(glog, 40))
	}
	m0, _ := strconv.Atoi(b[1])
	g0, _ := strconv.Atoi(b[2])
	m, _ := strconv.Atoi(a[1])
	g, _ := strconv.Atoi(a[2])
	waited, _ := strconv.Atoi(a[3])
	class := func(line, name string) int {
		f := strings.Fields(line[strings.Index(line, name+":")+len(name)+1:])
		v, _ := strconv.Atoi(f[0])
		return v
	}
	line := func(prefix string) string {
		l := glog[strings.Index(glog, prefix):]
		return l[:strings.IndexByte(l+"\n", '\n')]
	}
	bl, al := line(b[0]), line(a[0])
	records := 0
	if strings.Contains(bl, "GoMetadata:") && strings.Contains(al, "GoMetadata:") {
		records = class(al, "GoMetadata") + class(al, "GoOther") - class(bl, "GoMetadata") - class(bl, "GoOther")
	}
	fmt.Printf("netinject (%s, %d CPUs): before: %s\nnetinject (%s, %d CPUs): after:  %s\n", nic, cpus,
		strings.Join(strings.Fields(bl)[3:], " "), nic, cpus, strings.Join(strings.Fields(al)[4:], " "))
	if strings.Contains(glog, "panic") || strings.Contains(glog, "PANIC") {
		return fmt.Errorf("the guest's log has a panic\n%s", tail(glog, 60))
	}
	fmt.Printf("netinject (%s, %d CPUs): kernel memory %d KiB free before, %d after (%+d KiB, %d of it the runtime's records; %d s to settle); goroutines %d before, %d after\n",
		nic, cpus, m0, m, m-m0, records, waited, g0, g)
	if m0-m-records >= 2048 || g > g0 {
		return fmt.Errorf("memory or goroutines did not come back: free %d -> %d KiB, goroutines %d -> %d", m0, m, g0, g)
	}
	before, after := counters(glog, "inject-counters-before"), counters(glog, "inject-counters-after")
	if before == nil || after == nil {
		return fmt.Errorf("no counters before or after\n--- guest:\n%s", tail(glog, 40))
	}
	sent := map[string]int{}
	for i, k := range kinds {
		sent[k.name] = counts[i]
	}
	for _, c := range dropChecks(nic, sent) {
		got := 0
		for _, name := range c.counters {
			got += after[name] - before[name]
		}
		if c.least == 0 {
			fmt.Printf("netinject (%s, %d CPUs): %s: %d counted\n", nic, cpus, strings.Join(c.counters, " + "), got)
			continue
		}
		fmt.Printf("netinject (%s, %d CPUs): %s: %d counted, at least %d sent\n", nic, cpus, strings.Join(c.counters, " + "), got, c.least)
		if got < c.least {
			return fmt.Errorf("the guest counted %d in %s for %d frames that must land there (%s)",
				got, strings.Join(c.counters, " + "), c.least, c.why)
		}
	}
	return nil
}

// dropCheck is a sum of the guest's counters (/proc/net/dev and
// /proc/net/snmp, as counters names them) that the frames sent must
// have raised by at least least.
type dropCheck struct {
	counters []string
	least    int
	why      string
}

// dropChecks are the counters the bad frames must show in. Every bad
// IPv4 header (its checksum, its lengths, its version) is an Ip
// InHdrErrors, as on Linux. Frames the card refuses (too short for an
// Ethernet header, longer than the MTU) are the driver's receive errors
// or drops on virtio-net, whose device hands every frame on; QEMU's Intel
// models pad short frames and filter long ones by RCTL before the driver
// sees them, so there nothing is owed to those counters. The TCP and UDP
// counters are printed, not held to a count: netstack counts a segment
// or datagram too short for its header as an Ip InHdrErrors, below the
// protocol's row, where Linux drops it uncounted.
func dropChecks(nic string, sent map[string]int) []dropCheck {
	checks := []dropCheck{
		{[]string{"Ip.InHdrErrors"}, sent["ip-bad-checksum"] + sent["ip-bad-lengths"], "IPv4 headers with a bad checksum, length or version"},
		{[]string{"Tcp.InErrs"}, 0, "reported"},
		{[]string{"Udp.InErrors"}, 0, "reported"},
	}
	if nic == "virtio-net-pci" {
		checks = append(checks, dropCheck{[]string{"eth0.rx_errs", "eth0.rx_drop"}, sent["runt"] + sent["oversized"], "frames shorter than an Ethernet header or longer than the MTU"})
	}
	return checks
}

// counters reads the /proc/net/dev and /proc/net/snmp text the guest
// printed after marker: eth0's receive errors and drops as eth0.rx_errs
// and eth0.rx_drop, and every snmp value as Proto.Name.
func counters(glog, marker string) map[string]int {
	glog = strings.ReplaceAll(glog, "\r", "") // a serial console's line ends
	i := strings.Index(glog, marker+"\n")
	if i < 0 {
		return nil
	}
	text := glog[i+len(marker)+1:]
	if j := strings.Index(text, "inject-counters-end"); j >= 0 {
		text = text[:j]
	}
	out := map[string]int{}
	var names []string // the snmp header line before each value line
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "eth0:"); ok {
			// receive: bytes packets errs drop ... (Linux's "%6s:%8llu"
			// leaves no space after the colon past 99,999,999 bytes)
			if f = strings.Fields(rest); len(f) >= 4 {
				out["eth0.rx_errs"], _ = strconv.Atoi(f[2])
				out["eth0.rx_drop"], _ = strconv.Atoi(f[3])
			}
			continue
		}
		switch {
		case len(f) > 1 && strings.HasSuffix(f[0], ":") && !strings.Contains(line, "|"):
			if _, err := strconv.Atoi(f[1]); err != nil {
				names = f
				continue
			}
			if len(names) != len(f) || names[0] != f[0] {
				continue
			}
			proto := strings.TrimSuffix(f[0], ":")
			for k := 1; k < len(f); k++ {
				out[proto+"."+names[k]], _ = strconv.Atoi(f[k])
			}
		}
	}
	return out
}

// hostStack is the injector's own network stack: 10.0.0.2 on a channel
// endpoint whose frames the wire carries.
func hostStack() (*stack.Stack, *channel.Endpoint, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	ep := channel.New(1024, 1500, tcpip.LinkAddress(p.ourMAC[:]))
	if err := s.CreateNIC(1, ethernet.New(ep)); err != nil {
		return nil, nil, fmt.Errorf("host stack: %v", err)
	}
	addr := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(p.ourIP), PrefixLen: 24}}
	if err := s.AddProtocolAddress(1, addr, stack.AddressProperties{}); err != nil {
		return nil, nil, fmt.Errorf("host stack: %v", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: addr.AddressWithPrefix.Subnet(), NIC: 1}})
	return s, ep, nil
}

func retry(limit time.Duration, f func() error) error {
	end := time.Now().Add(limit)
	for {
		err := f()
		if err == nil || time.Now().After(end) {
			return err
		}
		time.Sleep(time.Second)
	}
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in the repository: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
