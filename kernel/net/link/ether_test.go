package link

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// recorder is a stack that keeps what it is handed.
type recorder struct{ frames [][]byte }

func (r *recorder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	r.frames = append(r.frames, pkt.ToView().ToSlice())
}
func (*recorder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

func TestEtherDeliverAndMTU(t *testing.T) {
	var e Ether
	mac := tcpip.LinkAddress("\x52\x54\x00\x12\x34\x56")
	e.InitEther(mac, 1514)
	if e.MTU() != 1514 || e.LinkAddress() != mac || e.MAC() != mac {
		t.Fatalf("MTU %d address %v", e.MTU(), e.LinkAddress())
	}
	e.SetMTU(9000) // beyond the buffers: clamped
	if e.MTU() != 1514 {
		t.Errorf("SetMTU(9000): MTU %d, want 1514", e.MTU())
	}
	e.SetMTU(1280)
	if e.MTU() != 1280 {
		t.Errorf("SetMTU(1280): MTU %d", e.MTU())
	}

	e.Deliver(make([]byte, 60)) // nothing attached: dropped
	if e.IsAttached() || e.Stats.RxDropped.Load() != 1 || e.Stats.RxPackets.Load() != 0 {
		t.Errorf("unattached: dropped %d packets %d", e.Stats.RxDropped.Load(), e.Stats.RxPackets.Load())
	}
	var r recorder
	e.Attach(&r)
	frame := bytes.Repeat([]byte{0xab}, 64)
	e.Deliver(frame)
	if !e.IsAttached() || len(r.frames) != 1 || !bytes.Equal(r.frames[0], frame) {
		t.Fatalf("attached: %d frames delivered", len(r.frames))
	}
	if c := e.Counters(); c.RxPackets.Load() != 1 || c.RxBytes.Load() != 64 || c.RxDropped.Load() != 1 {
		t.Errorf("counters: packets %d bytes %d dropped %d", c.RxPackets.Load(), c.RxBytes.Load(), c.RxDropped.Load())
	}
}

// DeliverBuffer hands the stack the buffer itself, or releases it when
// nothing is attached.
func TestEtherDeliverBuffer(t *testing.T) {
	var e Ether
	e.InitEther(tcpip.LinkAddress("\x52\x54\x00\x12\x34\x56"), 1514)
	e.DeliverBuffer(buffer.MakeWithData(make([]byte, 60)), false)
	if e.Stats.RxDropped.Load() != 1 {
		t.Errorf("unattached: dropped %d", e.Stats.RxDropped.Load())
	}
	var r recorder
	e.Attach(&r)
	frame := bytes.Repeat([]byte{0xcd}, 70)
	e.DeliverBuffer(buffer.MakeWithData(frame), true)
	if len(r.frames) != 1 || !bytes.Equal(r.frames[0], frame) || e.Stats.RxBytes.Load() != 70 || e.Stats.RxPackets.Load() != 1 {
		t.Errorf("delivered %d frames, %d bytes counted", len(r.frames), e.Stats.RxBytes.Load())
	}
}
