package nbd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// memDev is a Device in memory that records flushes and FUA writes.
type memDev struct {
	data    []byte
	flushes int
	fua     int
	trims   int
}

func (d *memDev) Size() int64 { return int64(len(d.data)) }
func (d *memDev) ReadAt(p []byte, off int64) error {
	copy(p, d.data[off:])
	return nil
}
func (d *memDev) Write(p []byte, off int64, fua bool) error {
	copy(d.data[off:], p)
	if fua {
		d.fua++
	}
	return nil
}
func (d *memDev) WriteZeroes(off, n int64, fua bool) error {
	clear(d.data[off : off+n])
	return nil
}
func (d *memDev) Trim(off, n int64) error { d.trims++; return nil }
func (d *memDev) Flush() error            { d.flushes++; return nil }

// client is the test's side of the protocol.
type client struct {
	t    *testing.T
	c    net.Conn
	done chan error
}

func start(t *testing.T, dev *memDev) *client {
	t.Helper()
	a, b := net.Pipe()
	s := &Server{Name: "disk", Dev: dev, Log: t.Logf}
	cl := &client{t: t, c: a, done: make(chan error, 1)}
	go func() { cl.done <- s.Serve(b); b.Close() }()
	t.Cleanup(func() { a.Close() })
	return cl
}

func (c *client) read(n int) []byte {
	c.t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c.c, b); err != nil {
		c.t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

func (c *client) write(parts ...any) {
	c.t.Helper()
	var b bytes.Buffer
	for _, p := range parts {
		if err := binary.Write(&b, binary.BigEndian, p); err != nil {
			c.t.Fatal(err)
		}
	}
	if _, err := c.c.Write(b.Bytes()); err != nil {
		c.t.Fatalf("writing: %v", err)
	}
}

// hello reads the greeting and sends the client flags.
func (c *client) hello(flags uint32) {
	c.t.Helper()
	g := c.read(18)
	if string(g[:8]) != "NBDMAGIC" || binary.BigEndian.Uint64(g[8:]) != optMagic {
		c.t.Fatalf("greeting %x", g)
	}
	if f := binary.BigEndian.Uint16(g[16:]); f != flagFixedNewstyle|flagNoZeroes {
		c.t.Fatalf("handshake flags %#x", f)
	}
	c.write(flags)
}

type optReply struct {
	typ  uint32
	data []byte
}

// option sends an option and reads replies until one that is not
// NBD_REP_INFO or NBD_REP_SERVER.
func (c *client) option(code uint32, data []byte) []optReply {
	c.t.Helper()
	c.write(uint64(optMagic), code, uint32(len(data)), data)
	var out []optReply
	for {
		h := c.read(20)
		if binary.BigEndian.Uint64(h) != repMagic || binary.BigEndian.Uint32(h[8:]) != code {
			c.t.Fatalf("option reply header %x", h)
		}
		r := optReply{typ: binary.BigEndian.Uint32(h[12:])}
		r.data = c.read(int(binary.BigEndian.Uint32(h[16:])))
		out = append(out, r)
		if r.typ != repInfo && r.typ != repServer {
			return out
		}
	}
}

func goData(name string, infos ...uint16) []byte {
	d := binary.BigEndian.AppendUint32(nil, uint32(len(name)))
	d = append(d, name...)
	d = binary.BigEndian.AppendUint16(d, uint16(len(infos)))
	for _, i := range infos {
		d = binary.BigEndian.AppendUint16(d, i)
	}
	return d
}

// request sends a command and reads its simple reply.
func (c *client) request(typ, flags uint16, handle, off uint64, n uint32, payload []byte, wantData int) (uint32, []byte) {
	c.t.Helper()
	c.write(uint32(requestMagic), flags, typ, handle, off, n, payload)
	h := c.read(16)
	if binary.BigEndian.Uint32(h) != replyMagic || binary.BigEndian.Uint64(h[8:]) != handle {
		c.t.Fatalf("reply header %x", h)
	}
	errno := binary.BigEndian.Uint32(h[4:])
	if errno != 0 {
		return errno, nil
	}
	return 0, c.read(wantData)
}

func TestGoAndTransmission(t *testing.T) {
	dev := &memDev{data: make([]byte, 1<<20)}
	c := start(t, dev)
	c.hello(clientFixedNewstyle | clientNoZeroes)

	// QEMU asks for structured replies first; declining is allowed.
	if r := c.option(8, nil); len(r) != 1 || r[0].typ != repErrUnsup {
		t.Fatalf("structured replies: %+v", r)
	}
	if r := c.option(optList, nil); len(r) != 2 || r[0].typ != repServer || string(r[0].data[4:]) != "disk" || r[1].typ != repAck {
		t.Fatalf("list: %+v", r)
	}
	if r := c.option(optGo, goData("nope")); len(r) != 1 || r[0].typ != repErrUnknown {
		t.Fatalf("go to an unknown export: %+v", r)
	}
	if r := c.option(optGo, []byte{0, 0, 0, 9, 'x'}); len(r) != 1 || r[0].typ != repErrInvalid {
		t.Fatalf("go with a name past the data: %+v", r)
	}
	r := c.option(optGo, goData("disk", infoBlockSize))
	if len(r) != 3 || r[2].typ != repAck {
		t.Fatalf("go: %+v", r)
	}
	if typ := binary.BigEndian.Uint16(r[0].data); typ != infoExport ||
		binary.BigEndian.Uint64(r[0].data[2:]) != 1<<20 || binary.BigEndian.Uint16(r[0].data[10:]) != transmitFlags {
		t.Fatalf("export info %x", r[0].data)
	}
	if typ := binary.BigEndian.Uint16(r[1].data); typ != infoBlockSize || binary.BigEndian.Uint32(r[1].data[2:]) != minBlock {
		t.Fatalf("block size info %x", r[1].data)
	}

	data := bytes.Repeat([]byte("shortbread"), 410)[:4096]
	if e, _ := c.request(cmdWrite, 0, 1, 8192, 4096, data, 0); e != 0 {
		t.Fatalf("write: errno %d", e)
	}
	if e, _ := c.request(cmdWrite, cmdFlagFUA, 2, 0, 512, data[:512], 0); e != 0 || dev.fua != 1 {
		t.Fatalf("FUA write: errno %d, %d FUA writes seen", e, dev.fua)
	}
	if e, got := c.request(cmdRead, 0, 3, 8192, 4096, nil, 4096); e != 0 || !bytes.Equal(got, data) {
		t.Fatalf("read back: errno %d", e)
	}
	if e, _ := c.request(cmdFlush, 0, 4, 0, 0, nil, 0); e != 0 || dev.flushes != 1 {
		t.Fatalf("flush: errno %d, %d flushes", e, dev.flushes)
	}
	if e, _ := c.request(cmdWriteZeroes, cmdFlagNoHole, 5, 8192, 1024, nil, 0); e != 0 {
		t.Fatalf("write zeroes: errno %d", e)
	}
	if e, got := c.request(cmdRead, 0, 6, 8192, 2048, nil, 2048); e != 0 ||
		!bytes.Equal(got[:1024], make([]byte, 1024)) || !bytes.Equal(got[1024:], data[1024:2048]) {
		t.Fatalf("read after write zeroes: errno %d", e)
	}
	if e, _ := c.request(cmdTrim, 0, 7, 0, 4096, nil, 0); e != 0 || dev.trims != 1 {
		t.Fatalf("trim: errno %d", e)
	}
	// refused, and the connection stays in step
	if e, _ := c.request(cmdRead, 0, 8, 1<<20-512, 1024, nil, 0); e != errInval {
		t.Fatalf("read past the end: errno %d", e)
	}
	if e, _ := c.request(cmdWrite, 0, 9, 1<<20, 512, data[:512], 0); e != errNoSpc {
		t.Fatalf("write past the end: errno %d", e)
	}
	if e, _ := c.request(cmdRead, cmdFlagFUA, 10, 0, 512, nil, 0); e != errInval {
		t.Fatalf("read with FUA: errno %d", e)
	}
	if e, _ := c.request(7, 0, 11, 0, 512, nil, 0); e != errInval {
		t.Fatalf("block status: errno %d", e)
	}
	if e, got := c.request(cmdRead, 0, 12, 0, 512, nil, 512); e != 0 || !bytes.Equal(got, data[:512]) {
		t.Fatalf("read after refusals: errno %d", e)
	}
	c.write(uint32(requestMagic), uint16(0), uint16(cmdDisc), uint64(13), uint64(0), uint32(0))
	if err := <-c.done; err != nil {
		t.Fatalf("serve after DISC: %v", err)
	}
}

func TestExportName(t *testing.T) {
	dev := &memDev{data: make([]byte, 65536)}
	c := start(t, dev)
	c.hello(clientFixedNewstyle) // without NO_ZEROES: 124 zero bytes follow
	c.write(uint64(optMagic), uint32(optExportName), uint32(4), []byte("disk"))
	b := c.read(10 + 124)
	if binary.BigEndian.Uint64(b) != 65536 || binary.BigEndian.Uint16(b[8:]) != transmitFlags || !bytes.Equal(b[10:], make([]byte, 124)) {
		t.Fatalf("export name reply %x", b[:10])
	}
	if e, _ := c.request(cmdWrite, 0, 1, 0, 512, make([]byte, 512), 0); e != 0 {
		t.Fatalf("write: errno %d", e)
	}
	c.c.Close() // a killed QEMU
	if err := <-c.done; !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("serve after the client went away: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	t.Run("old-style client", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(0)
		if err := <-c.done; !errors.Is(err, ErrRefused) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("option magic", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(clientFixedNewstyle)
		c.write(uint64(0x1234), uint32(optGo), uint32(0))
		if err := <-c.done; !errors.Is(err, ErrRefused) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("huge option", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(clientFixedNewstyle)
		c.write(uint64(optMagic), uint32(optGo), uint32(1<<30))
		if err := <-c.done; !errors.Is(err, ErrRefused) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("request magic", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(clientFixedNewstyle | clientNoZeroes)
		c.option(optGo, goData(""))
		c.write(uint32(0xdead), uint16(0), uint16(cmdRead), uint64(1), uint64(0), uint32(512))
		if err := <-c.done; !errors.Is(err, ErrRefused) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("huge write", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(clientFixedNewstyle | clientNoZeroes)
		c.option(optGo, goData("disk"))
		c.write(uint32(requestMagic), uint16(0), uint16(cmdWrite), uint64(1), uint64(0), uint32(MaxPayload+1))
		if err := <-c.done; !errors.Is(err, ErrRefused) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("abort", func(t *testing.T) {
		c := start(t, &memDev{data: make([]byte, 4096)})
		c.hello(clientFixedNewstyle | clientNoZeroes)
		if r := c.option(optAbort, nil); r[0].typ != repAck {
			t.Fatalf("abort: %+v", r)
		}
		if err := <-c.done; err != nil {
			t.Fatalf("serve after abort: %v", err)
		}
	})
}
