package socket

import (
	"encoding/binary"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Buffer sizes (net.core.wmem_default/rmem_default and the _max sysctls,
// SOCK_MIN_SNDBUF/SOCK_MIN_RCVBUF): setsockopt doubles what it is given,
// as Linux does to leave room for its bookkeeping, within these bounds.
const (
	DefaultBuf = 212992
	MaxBuf     = 212992
	MinSndBuf  = 4608
	MinRcvBuf  = 2304
)

// Options is the SOL_SOCKET state every socket has, whatever its
// family: buffer sizes, timeouts and flags. The family reads what
// applies to it (SndBuf for back-pressure, PassCred, the timeouts).
type Options struct {
	mu       sync.Mutex
	sndBuf   int           // protected by mu
	rcvBuf   int           // protected by mu
	sndSet   bool          // SO_SNDBUF was set; protected by mu
	rcvSet   bool          // SO_RCVBUF was set; protected by mu
	rcvTimeo time.Duration // 0: wait forever; protected by mu
	sndTimeo time.Duration // protected by mu
	rcvLowat int           // protected by mu
	linger   [8]byte       // struct linger as set; protected by mu
	flags    map[int]bool  // boolean options; protected by mu
}

// boolOpts are the boolean options stored and reported back; only
// SO_PASSCRED changes what an AF_UNIX socket does.
var boolOpts = map[int]bool{
	linux.SO_DEBUG: true, linux.SO_REUSEADDR: true, linux.SO_DONTROUTE: true,
	linux.SO_BROADCAST: true, linux.SO_KEEPALIVE: true, linux.SO_OOBINLINE: true,
	linux.SO_REUSEPORT: true, linux.SO_PASSCRED: true,
}

// InitOptions returns the options of a new socket.
func InitOptions() Options {
	return InitOptionsBuf(DefaultBuf, DefaultBuf)
}

// InitOptionsBuf returns the options of a new socket whose protocol has
// its own default buffer sizes (TCP: net.ipv4.tcp_wmem and tcp_rmem).
func InitOptionsBuf(snd, rcv int) Options {
	return Options{sndBuf: snd, rcvBuf: rcv, rcvLowat: 1}
}

// Clone returns a copy of the options for a connection accepted from a
// listener: Linux makes the new socket as a copy of the listening one
// (sk_clone_lock), so whatever the listener was given, the connection
// starts with.
func (o *Options) Clone() Options {
	o.mu.Lock()
	defer o.mu.Unlock()
	var flags map[int]bool
	if o.flags != nil {
		flags = make(map[int]bool, len(o.flags))
		for k, v := range o.flags {
			flags[k] = v
		}
	}
	return Options{sndBuf: o.sndBuf, rcvBuf: o.rcvBuf, sndSet: o.sndSet, rcvSet: o.rcvSet,
		rcvTimeo: o.rcvTimeo, sndTimeo: o.sndTimeo, rcvLowat: o.rcvLowat, linger: o.linger, flags: flags}
}

// Buffers returns the buffer sizes and whether the program set each
// (a set size fixes the buffer; an unset one leaves the protocol to
// size it, as Linux's TCP auto-tuning does).
func (o *Options) Buffers() (snd, rcv int, sndSet, rcvSet bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sndBuf, o.rcvBuf, o.sndSet, o.rcvSet
}

// BufferSetter is a socket that applies SO_SNDBUF and SO_RCVBUF as they
// are set (a netstack endpoint's buffers).
type BufferSetter interface{ SetBuffers() }

// SndBuf returns the send buffer size.
func (o *Options) SndBuf() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sndBuf
}

// Flag reports a boolean option (SO_PASSCRED, ...).
func (o *Options) Flag(name int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.flags[name]
}

// SetFlag sets a boolean option from the kernel (a socket inherits
// SO_PASSCRED from its listener at accept).
func (o *Options) SetFlag(name int, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flags == nil {
		o.flags = map[int]bool{}
	}
	o.flags[name] = on
}

// Timeouts returns SO_RCVTIMEO and SO_SNDTIMEO (0: none).
func (o *Options) Timeouts() (rcv, snd time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rcvTimeo, o.sndTimeo
}

func putInt(v int) []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(int32(v)))
	return b[:]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// getInt decodes an int option value: shorter than an int is EINVAL.
func getInt(val []byte) (int, error) {
	if len(val) < 4 {
		return 0, linux.EINVAL
	}
	return int(int32(binary.LittleEndian.Uint32(val))), nil
}

func timeval(d time.Duration) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(d/time.Second))
	binary.LittleEndian.PutUint64(b[8:], uint64(d%time.Second/time.Microsecond))
	return b[:]
}

// parseTimeval decodes a struct timeval for SO_RCVTIMEO/SO_SNDTIMEO as
// sock_set_timeout does: too short is EINVAL, microseconds out of range
// EDOM, zero means no timeout and a negative time is treated as zero.
func parseTimeval(val []byte) (time.Duration, error) {
	if len(val) < 16 {
		return 0, linux.EINVAL
	}
	sec, usec := int64(binary.LittleEndian.Uint64(val)), int64(binary.LittleEndian.Uint64(val[8:]))
	if usec < 0 || usec >= 1e6 {
		return 0, linux.EDOM
	}
	if sec < 0 {
		return 0, nil
	}
	if sec > 1<<32 {
		sec = 1 << 32
	}
	return time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond, nil
}

// bufSize caps a requested buffer size at MaxBuf; Linux compares it as
// unsigned, so a negative size asks for the most.
func bufSize(v int) int {
	if v < 0 || v > MaxBuf {
		return MaxBuf
	}
	return v
}

// GetOption answers getsockopt(2) for s: the SOL_SOCKET options every
// socket has here, the rest by the family.
func GetOption(c *vfs.Ctx, s Socket, level, name int) ([]byte, error) {
	if level != linux.SOL_SOCKET {
		return s.GetOption(c, level, name)
	}
	o := s.Options()
	switch name {
	case linux.SO_TYPE:
		return putInt(s.Type()), nil
	case linux.SO_DOMAIN:
		return putInt(s.Family()), nil
	case linux.SO_PROTOCOL:
		return putInt(s.Protocol()), nil
	case linux.SO_SNDLOWAT:
		return putInt(1), nil
	}
	if v, ok := o.get(name); ok {
		return v, nil
	}
	return s.GetOption(c, level, name)
}

// get returns the value of an option kept here.
func (o *Options) get(name int) ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch name {
	case linux.SO_SNDBUF:
		return putInt(o.sndBuf), true
	case linux.SO_RCVBUF:
		return putInt(o.rcvBuf), true
	case linux.SO_RCVTIMEO:
		return timeval(o.rcvTimeo), true
	case linux.SO_SNDTIMEO:
		return timeval(o.sndTimeo), true
	case linux.SO_RCVLOWAT:
		return putInt(o.rcvLowat), true
	case linux.SO_LINGER:
		return append([]byte(nil), o.linger[:]...), true
	}
	if boolOpts[name] {
		return putInt(boolInt(o.flags[name])), true
	}
	return nil, false
}

// SetOption answers setsockopt(2) for s, like GetOption.
func SetOption(c *vfs.Ctx, s Socket, level, name int, val []byte) error {
	if level != linux.SOL_SOCKET {
		return s.SetOption(c, level, name, val)
	}
	o := s.Options()
	switch name {
	case linux.SO_RCVTIMEO, linux.SO_SNDTIMEO:
		d, err := parseTimeval(val)
		if err != nil {
			return err
		}
		o.mu.Lock()
		if name == linux.SO_RCVTIMEO {
			o.rcvTimeo = d
		} else {
			o.sndTimeo = d
		}
		o.mu.Unlock()
		return nil
	case linux.SO_LINGER:
		if len(val) < 8 {
			return linux.EINVAL
		}
		o.mu.Lock()
		copy(o.linger[:], val)
		o.mu.Unlock()
		return nil
	case linux.SO_TYPE, linux.SO_DOMAIN, linux.SO_PROTOCOL, linux.SO_ERROR, linux.SO_PEERCRED, linux.SO_ACCEPTCONN, linux.SO_SNDLOWAT:
		if _, err := getInt(val); err != nil && name != linux.SO_PEERCRED {
			return err
		}
		return linux.ENOPROTOOPT
	}
	v, err := getInt(val)
	if err != nil {
		return err
	}
	switch name {
	case linux.SO_SNDBUF, linux.SO_SNDBUFFORCE, linux.SO_RCVBUF, linux.SO_RCVBUFFORCE:
		o.mu.Lock()
		if name == linux.SO_SNDBUF || name == linux.SO_SNDBUFFORCE {
			o.sndBuf, o.sndSet = max(bufSize(v)*2, MinSndBuf), true
		} else {
			o.rcvBuf, o.rcvSet = max(bufSize(v)*2, MinRcvBuf), true
		}
		o.mu.Unlock()
		if bs, ok := s.(BufferSetter); ok {
			bs.SetBuffers()
		}
		return nil
	}
	switch {
	case name == linux.SO_RCVLOWAT:
		o.mu.Lock()
		o.rcvLowat = max(v, 1)
		o.mu.Unlock()
		return nil
	case boolOpts[name]:
		o.mu.Lock()
		if o.flags == nil {
			o.flags = map[int]bool{}
		}
		o.flags[name] = v != 0
		o.mu.Unlock()
		return nil
	}
	// The rest belong to the family (SO_TIMESTAMP on datagrams), as
	// GetOption also asks it.
	return s.SetOption(c, level, name, val)
}

// Linger is struct linger as SO_LINGER set it.
type Linger struct{ OnOff, Secs int32 }

// Linger returns SO_LINGER's setting and whether it was ever set.
func (o *Options) Linger() (l Linger, set bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l.OnOff = int32(binary.LittleEndian.Uint32(o.linger[:]))
	l.Secs = int32(binary.LittleEndian.Uint32(o.linger[4:]))
	return l, o.linger != [8]byte{}
}
