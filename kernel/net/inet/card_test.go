package inet

import (
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/link/channel"

	"shortbread/kernel/net/link"
)

// fakeCard is a link endpoint that reports carrier and counters.
type fakeCard struct {
	*channel.Endpoint
	up atomic.Bool
	st link.Stats
}

func (c *fakeCard) LinkUp() bool          { return c.up.Load() }
func (c *fakeCard) Counters() *link.Stats { return &c.st }

// A card's carrier shows in SIOCGIFFLAGS as RUNNING and LOWER_UP, and its
// own counters (errors and drops too) in /proc/net/dev.
func TestCardCarrierAndCounters(t *testing.T) {
	c := &fakeCard{Endpoint: channel.New(16, 1500, "\x52\x54\x00\x00\x00\x01")}
	id, err := AddEthernet("ethT", c, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The stack is the kernel's one, shared by every test (and every run
	// of -count): the name must be free for the next.
	t.Cleanup(func() {
		if err := RemoveEthernet(id); err != nil {
			t.Error(err)
		}
		var req [IfreqSize]byte
		copy(req[:], "ethT")
		if err := IfIoctl(SIOCGIFFLAGS, &req); err == nil {
			t.Error("ethT still there after RemoveEthernet")
		}
	})
	flags := func() uint32 {
		var req [IfreqSize]byte
		copy(req[:], "ethT")
		if err := IfIoctl(SIOCGIFFLAGS, &req); err != nil {
			t.Fatal(err)
		}
		return uint32(binary.LittleEndian.Uint16(req[16:]))
	}
	if f := flags(); f&iffUp == 0 || f&(iffRunning) != 0 {
		t.Errorf("no carrier: flags %#x", f)
	}
	c.up.Store(true)
	if f := flags(); f&iffUp == 0 || f&iffRunning == 0 {
		t.Errorf("carrier: flags %#x", f)
	}
	c.st.RxBytes.Store(1234)
	c.st.RxPackets.Store(5)
	c.st.RxErrors.Store(3)
	c.st.RxDropped.Store(2)
	c.st.TxBytes.Store(999)
	c.st.TxPackets.Store(7)
	c.st.TxErrors.Store(1)
	c.st.TxDropped.Store(4)
	var line string
	for _, l := range strings.Split(string(ProcNetDev()), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "ethT:") {
			line = l
		}
	}
	want := []string{"ethT:", "1234", "5", "3", "2", "0", "0", "0", "0", "999", "7", "1", "4", "0", "0", "0", "0"}
	if got := strings.Fields(line); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("/proc/net/dev line %q, want fields %v", line, want)
	}
}
