// Package dhcp is the kernel's DHCP client (RFC 2131, with the options
// of RFC 2132): what Linux's ip=dhcp does at boot, an address, netmask,
// router, name servers and host name for one interface, acquired once
// and not renewed (Linux's in-kernel client does not renew either: a
// system that needs renewal runs a DHCP client in user space).
//
// The package knows nothing of the network stack: it speaks through
// Conn, whole IPv4 datagrams broadcast on the link and received from it,
// so the client runs under go test against a simulated server, and the
// stack sends its frames before the interface has an address.
package dhcp

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Ports and the fixed part of a message (RFC 2131 section 2).
const (
	ServerPort = 67
	ClientPort = 68

	opRequest = 1 // BOOTREQUEST
	opReply   = 2 // BOOTREPLY

	htypeEthernet = 1
	flagBroadcast = 0x8000 // replies to us broadcast: we cannot take unicast yet

	fixedLen = 236        // op through file
	magic    = 0x63825363 // the options' cookie
	minLen   = fixedLen + 4
)

// Option codes used here (RFC 2132).
const (
	optPad        = 0
	optSubnetMask = 1
	optRouter     = 3
	optDNS        = 6
	optHostName   = 12
	optDomainName = 15
	optRequested  = 50
	optLeaseTime  = 51
	optOverload   = 52
	optMsgType    = 53
	optServerID   = 54
	optParams     = 55
	optMessage    = 56
	optMaxSize    = 57
	optClientID   = 61
	optEnd        = 255
)

// Message types (option 53).
const (
	msgDiscover = 1
	msgOffer    = 2
	msgRequest  = 3
	msgDecline  = 4
	msgAck      = 5
	msgNak      = 6
)

// message is a DHCP message with its options by code. Options that
// appear more than once are concatenated, as RFC 3396 says.
type message struct {
	op     byte
	xid    uint32
	secs   uint16
	flags  uint16
	ciaddr [4]byte
	yiaddr [4]byte
	siaddr [4]byte
	giaddr [4]byte
	chaddr [6]byte
	opts   map[byte][]byte
	order  []byte // option codes in the order marshal writes them
}

func (m *message) set(code byte, v []byte) {
	if m.opts == nil {
		m.opts = map[byte][]byte{}
	}
	if _, ok := m.opts[code]; !ok {
		m.order = append(m.order, code)
	}
	m.opts[code] = v
}

// marshal encodes m, padded to the 300 bytes of a BOOTP message some
// servers still expect.
func (m *message) marshal() []byte {
	b := make([]byte, minLen, 300)
	b[0], b[1], b[2] = m.op, htypeEthernet, 6
	binary.BigEndian.PutUint32(b[4:], m.xid)
	binary.BigEndian.PutUint16(b[8:], m.secs)
	binary.BigEndian.PutUint16(b[10:], m.flags)
	copy(b[12:], m.ciaddr[:])
	copy(b[16:], m.yiaddr[:])
	copy(b[20:], m.siaddr[:])
	copy(b[24:], m.giaddr[:])
	copy(b[28:], m.chaddr[:])
	binary.BigEndian.PutUint32(b[fixedLen:], magic)
	for _, code := range m.order {
		v := m.opts[code]
		for len(v) > 255 { // long options are split (RFC 3396)
			b = append(append(b, code, 255), v[:255]...)
			v = v[255:]
		}
		b = append(append(b, code, byte(len(v))), v...)
	}
	b = append(b, optEnd)
	for len(b) < 300 {
		b = append(b, optPad)
	}
	return b
}

var errMalformed = errors.New("dhcp: malformed message")

// parse decodes a message, checking every length against the bytes
// there: a reply is input from the network.
func parse(b []byte) (*message, error) {
	if len(b) < minLen {
		return nil, fmt.Errorf("%w: %d bytes", errMalformed, len(b))
	}
	if b[1] != htypeEthernet || b[2] != 6 {
		return nil, fmt.Errorf("%w: hardware type %d length %d", errMalformed, b[1], b[2])
	}
	if binary.BigEndian.Uint32(b[fixedLen:]) != magic {
		return nil, fmt.Errorf("%w: no options cookie", errMalformed)
	}
	m := &message{op: b[0], xid: binary.BigEndian.Uint32(b[4:]), secs: binary.BigEndian.Uint16(b[8:]),
		flags: binary.BigEndian.Uint16(b[10:]), opts: map[byte][]byte{}}
	copy(m.ciaddr[:], b[12:])
	copy(m.yiaddr[:], b[16:])
	copy(m.siaddr[:], b[20:])
	copy(m.giaddr[:], b[24:])
	copy(m.chaddr[:], b[28:])
	if err := m.parseOptions(b[minLen:]); err != nil {
		return nil, err
	}
	// Option overload (52) moves options into the file and sname
	// fields; parsed after the main area, as the RFC orders them.
	if ov, ok := m.opts[optOverload]; ok {
		if len(ov) != 1 || ov[0] < 1 || ov[0] > 3 {
			return nil, fmt.Errorf("%w: option overload %v", errMalformed, ov)
		}
		if ov[0]&1 != 0 {
			if err := m.parseOptions(b[108:236]); err != nil { // file
				return nil, err
			}
		}
		if ov[0]&2 != 0 {
			if err := m.parseOptions(b[44:108]); err != nil { // sname
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *message) parseOptions(b []byte) error {
	for i := 0; i < len(b); {
		code := b[i]
		switch code {
		case optPad:
			i++
			continue
		case optEnd:
			return nil
		}
		if i+2 > len(b) || i+2+int(b[i+1]) > len(b) {
			return fmt.Errorf("%w: option %d runs past the message", errMalformed, code)
		}
		v := b[i+2 : i+2+int(b[i+1])]
		m.opts[code] = append(m.opts[code], v...)
		i += 2 + len(v)
	}
	return nil // a missing end option is tolerated, as by most clients
}

// msgType is option 53, or 0 when absent or malformed.
func (m *message) msgType() byte {
	if v := m.opts[optMsgType]; len(v) == 1 {
		return v[0]
	}
	return 0
}

// addr4 is a single-address option.
func (m *message) addr4(code byte) ([4]byte, bool) {
	var a [4]byte
	v := m.opts[code]
	if len(v) != 4 {
		return a, false
	}
	copy(a[:], v)
	return a, true
}
