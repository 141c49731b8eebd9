package netlink

import (
	"encoding/binary"
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

func msg(typ, flags uint16, seq uint32, payload []byte) []byte {
	return encode(Header{Type: typ, Flags: flags, Seq: seq}, payload)
}

func TestSplit(t *testing.T) {
	a := msg(20, FlagRequest, 1, []byte{1, 2, 3}) // padded to 20 bytes
	b := msg(21, FlagRequest, 2, nil)
	reqs := Split(append(append([]byte{}, a...), b...))
	if len(reqs) != 2 || reqs[0].Seq != 1 || len(reqs[0].Payload) != 3 || reqs[1].Type != 21 {
		t.Fatalf("two messages: got %+v", reqs)
	}
	// A length below the header, or past the buffer, ends the walk.
	bad := append([]byte{}, a...)
	binary.LittleEndian.PutUint32(bad, 8)
	if got := Split(bad); len(got) != 0 {
		t.Errorf("short length: got %d messages", len(got))
	}
	long := append([]byte{}, a...)
	binary.LittleEndian.PutUint32(long, 400)
	if got := Split(append(append([]byte{}, b...), long...)); len(got) != 1 {
		t.Errorf("overlong second message: got %d messages, want the first only", len(got))
	}
	if got := Split(a[:10]); len(got) != 0 {
		t.Errorf("truncated header: got %d messages", len(got))
	}
}

func TestAttrs(t *testing.T) {
	var m Builder
	m.U32(4, 1500)
	m.String(3, "lo")
	m.U8(16, 6)
	attrs, err := Attrs(m.b)
	if err != nil || len(attrs) != 3 {
		t.Fatalf("Attrs = %v, %v", attrs, err)
	}
	if binary.LittleEndian.Uint32(attrs[0].Value) != 1500 || string(attrs[1].Value) != "lo\x00" || attrs[2].Value[0] != 6 {
		t.Errorf("values: %+v", attrs)
	}
	for _, bad := range [][]byte{
		{2, 0, 1, 0},                // length below the attribute header
		{40, 0, 1, 0, 0, 0, 0, 0},   // length past the end
		{8, 0, 1, 0, 0, 0, 0, 0, 9}, // a stray byte after the last attribute
	} {
		if _, err := Attrs(bad); !errors.Is(err, linux.EINVAL) {
			t.Errorf("Attrs(%v) = %v, want EINVAL", bad, err)
		}
	}
}

// fakeProto answers GET requests (type 18) with n messages of size
// bytes each, and fails type 16 with EBUSY.
func fakeProto(n, size int) Handler {
	return func(c *vfs.Ctx, req Request, w *Writer) error {
		if req.Type == 16 {
			return linux.EBUSY
		}
		for i := 0; i < n; i++ {
			w.Message(16, func(m *Builder) { m.Bytes(make([]byte, size)) })
		}
		return nil
	}
}

func newTestSock(t *testing.T, h Handler) *sock {
	t.Helper()
	RegisterProtocol(31, h)
	s, err := newSocket(&vfs.Ctx{PID: 4242}, linux.SOCK_RAW, 31)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	return s.(*sock)
}

func recvAll(t *testing.T, s *sock) [][]byte {
	var out [][]byte
	for {
		buf := make([]byte, 1<<16)
		m := socket.RecvMsg{Buf: buf}
		n, err := s.RecvMsg(nil, socket.Blocking{NonBlock: true}, &m)
		if errors.Is(err, linux.EAGAIN) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n])
	}
}

func TestDumpDatagrams(t *testing.T) {
	s := newTestSock(t, fakeProto(40, 200))
	if _, err := s.SendMsg(&vfs.Ctx{PID: 4242}, socket.Blocking{}, &socket.SendMsg{Data: msg(18, FlagRequest|FlagDump, 7, make([]byte, 16))}); err != nil {
		t.Fatal(err)
	}
	dgrams := recvAll(t, s)
	if len(dgrams) < 3 {
		t.Fatalf("40 messages of 216 bytes in %d datagrams, want them split by goodSize", len(dgrams))
	}
	total := 0
	for i, d := range dgrams {
		if len(d) > goodSize {
			t.Errorf("datagram %d is %d bytes, over %d", i, len(d), goodSize)
		}
		for _, r := range Split(d) {
			if r.Seq != 7 || r.PortID != 4242 || r.Flags&FlagMulti == 0 {
				t.Errorf("reply header %+v: want seq 7, port 4242, NLM_F_MULTI", r.Header)
			}
			if r.Type == 16 {
				total++
			}
		}
	}
	if total != 40 {
		t.Errorf("got %d messages, want 40", total)
	}
	last := Split(dgrams[len(dgrams)-1])
	if len(last) != 1 || last[0].Type != MsgDone {
		t.Errorf("last datagram %+v: want NLMSG_DONE alone", last)
	}
}

func TestErrorAndAck(t *testing.T) {
	s := newTestSock(t, fakeProto(1, 4))
	ctx := &vfs.Ctx{PID: 4242}
	// A failing request gets only NLMSG_ERROR with -errno and its
	// request; a successful one with NLM_F_ACK its reply then an ack.
	data := append(msg(16, FlagRequest, 1, []byte{9, 9, 9, 9}), msg(18, FlagRequest|FlagAck, 2, nil)...)
	if _, err := s.SendMsg(ctx, socket.Blocking{}, &socket.SendMsg{Data: data}); err != nil {
		t.Fatal(err)
	}
	d := recvAll(t, s)
	if len(d) != 3 {
		t.Fatalf("%d datagrams, want error, reply, ack", len(d))
	}
	e := Split(d[0])[0]
	if e.Type != MsgError || int32(binary.LittleEndian.Uint32(e.Payload)) != -int32(linux.EBUSY) || len(e.Payload) != 4+HeaderLen+4 {
		t.Errorf("error reply %+v %v", e.Header, e.Payload)
	}
	if r := Split(d[1])[0]; r.Type != 16 || r.Flags&FlagMulti != 0 {
		t.Errorf("reply %+v: want type 16 without NLM_F_MULTI", r.Header)
	}
	ack := Split(d[2])[0]
	if ack.Type != MsgError || binary.LittleEndian.Uint32(ack.Payload) != 0 || ack.Seq != 2 || ack.Flags&FlagCapped == 0 {
		t.Errorf("ack %+v %v", ack.Header, ack.Payload)
	}
}

func TestPortIDs(t *testing.T) {
	a := newTestSock(t, fakeProto(0, 0))
	b := newTestSock(t, fakeProto(0, 0))
	ctx := &vfs.Ctx{PID: 777}
	if err := a.Bind(ctx, encodeAddr(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := b.Bind(ctx, encodeAddr(0, 0)); err != nil {
		t.Fatal(err)
	}
	pa := binary.LittleEndian.Uint32(a.Name()[4:])
	pb := binary.LittleEndian.Uint32(b.Name()[4:])
	if pa != 777 || pb == 777 || pb == 0 {
		t.Errorf("ports %d, %d: want the pid first, then another", pa, pb)
	}
	c := newTestSock(t, fakeProto(0, 0))
	if err := c.Bind(ctx, encodeAddr(pa, 0)); !errors.Is(err, linux.EADDRINUSE) {
		t.Errorf("bind to a taken port: %v, want EADDRINUSE", err)
	}
	a.Release()
	if err := c.Bind(ctx, encodeAddr(pa, 0)); err != nil {
		t.Errorf("bind to a released port: %v", err)
	}
}
