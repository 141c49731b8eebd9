package netlink

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
)

// Message framing (linux/netlink.h): a 16-byte header, the payload, and
// padding to 4 bytes; attributes inside payloads are (length, type,
// value) padded the same way.

// HeaderLen is sizeof(struct nlmsghdr).
const HeaderLen = 16

// Header flags.
const (
	FlagRequest = 0x1
	FlagMulti   = 0x2
	FlagAck     = 0x4
	FlagRoot    = 0x100
	FlagMatch   = 0x200
	FlagDump    = FlagRoot | FlagMatch
	FlagReplace = 0x100 // NEW requests
	FlagExcl    = 0x200
	FlagCreate  = 0x400
	FlagAppend  = 0x800
	// FlagCapped on an error message: the request's payload is left out.
	FlagCapped = 0x100
)

// Control message types every protocol shares.
const (
	MsgNoop  = 1
	MsgError = 2
	MsgDone  = 3
	// MinType is the first type a protocol defines (NLMSG_MIN_TYPE).
	MinType = 0x10
)

// Header is struct nlmsghdr.
type Header struct {
	Len    uint32
	Type   uint16
	Flags  uint16
	Seq    uint32
	PortID uint32
}

func align(n int) int { return (n + 3) &^ 3 }

// Request is one message a program sent: its header and payload.
type Request struct {
	Header
	Payload []byte
}

// Split cuts a sendmsg buffer into its messages as netlink_rcv_skb
// walks it: a header whose length is below the header's size or past
// the buffer's end ends the walk silently, as Linux drops the rest.
func Split(b []byte) []Request {
	var out []Request
	for len(b) >= HeaderLen {
		h := Header{
			Len:    binary.LittleEndian.Uint32(b),
			Type:   binary.LittleEndian.Uint16(b[4:]),
			Flags:  binary.LittleEndian.Uint16(b[6:]),
			Seq:    binary.LittleEndian.Uint32(b[8:]),
			PortID: binary.LittleEndian.Uint32(b[12:]),
		}
		if h.Len < HeaderLen || int(h.Len) > len(b) {
			break
		}
		out = append(out, Request{h, b[HeaderLen:h.Len]})
		next := align(int(h.Len))
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	return out
}

// Attr is one attribute of a payload.
type Attr struct {
	Type  uint16 // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
	Value []byte
}

// Attrs parses the attributes in b; a malformed one (a length below the
// attribute header or past the end) is EINVAL, as nla_validate says.
func Attrs(b []byte) ([]Attr, error) {
	var out []Attr
	for len(b) >= 4 {
		n := int(binary.LittleEndian.Uint16(b))
		t := binary.LittleEndian.Uint16(b[2:]) & 0x3fff
		if n < 4 || n > len(b) {
			return nil, linux.EINVAL
		}
		out = append(out, Attr{t, b[4:n]})
		if align(n) >= len(b) {
			return out, nil
		}
		b = b[align(n):]
	}
	if len(b) != 0 {
		return nil, linux.EINVAL
	}
	return out, nil
}

// Builder appends one message: its fixed payload and attributes.
type Builder struct {
	b []byte
}

// Bytes appends raw payload bytes, padded.
func (m *Builder) Bytes(p []byte) {
	m.b = append(m.b, p...)
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

// Attr appends an attribute.
func (m *Builder) Attr(typ uint16, v []byte) {
	m.b = binary.LittleEndian.AppendUint16(m.b, uint16(4+len(v)))
	m.b = binary.LittleEndian.AppendUint16(m.b, typ)
	m.Bytes(v)
}

// U32 appends a 32-bit attribute in host (little-endian) order.
func (m *Builder) U32(typ uint16, v uint32) {
	m.Attr(typ, binary.LittleEndian.AppendUint32(nil, v))
}

// U8 appends a one-byte attribute.
func (m *Builder) U8(typ uint16, v uint8) { m.Attr(typ, []byte{v}) }

// String appends a NUL-terminated string attribute.
func (m *Builder) String(typ uint16, s string) { m.Attr(typ, append([]byte(s), 0)) }

// encode frames payload as one message.
func encode(h Header, payload []byte) []byte {
	b := make([]byte, HeaderLen, HeaderLen+align(len(payload)))
	binary.LittleEndian.PutUint32(b, uint32(HeaderLen+len(payload)))
	binary.LittleEndian.PutUint16(b[4:], h.Type)
	binary.LittleEndian.PutUint16(b[6:], h.Flags)
	binary.LittleEndian.PutUint32(b[8:], h.Seq)
	binary.LittleEndian.PutUint32(b[12:], h.PortID)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// errorMsg is NLMSG_ERROR for req: the negative errno (0 for an
// acknowledgement) and the request's header, with its payload when it
// failed (Linux leaves the payload out of a plain acknowledgement).
func errorMsg(req Request, portID uint32, errno int32) []byte {
	p := binary.LittleEndian.AppendUint32(nil, uint32(errno))
	hdr := req.Header
	p = binary.LittleEndian.AppendUint32(p, hdr.Len)
	p = binary.LittleEndian.AppendUint16(p, hdr.Type)
	p = binary.LittleEndian.AppendUint16(p, hdr.Flags)
	p = binary.LittleEndian.AppendUint32(p, hdr.Seq)
	p = binary.LittleEndian.AppendUint32(p, hdr.PortID)
	var flags uint16 = FlagCapped
	if errno != 0 {
		p = append(p, req.Payload...)
		flags = 0
	}
	return encode(Header{Type: MsgError, Flags: flags, Seq: hdr.Seq, PortID: portID}, p)
}
