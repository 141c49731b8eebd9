// Package nbd is the server side of the Network Block Device protocol,
// as much of it as QEMU's nbd block driver uses: the fixed-newstyle
// handshake with NBD_OPT_GO, NBD_OPT_INFO, NBD_OPT_EXPORT_NAME,
// NBD_OPT_LIST and NBD_OPT_ABORT (other options are answered
// NBD_REP_ERR_UNSUP, so structured replies and extended headers are
// declined), then simple replies to READ, WRITE (with FUA), FLUSH, TRIM,
// WRITE_ZEROES and DISC. The specification is
// https://github.com/NetworkBlockDevice/nbd/blob/master/doc/proto.md;
// section names below are its headings.
//
// Requests are served one at a time in arrival order, so a FLUSH covers
// every write received before it (more than the protocol asks).
package nbd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Device is the disk an export serves. Offsets and lengths are checked
// against Size before a call.
type Device interface {
	Size() int64
	ReadAt(p []byte, off int64) error
	Write(p []byte, off int64, fua bool) error
	WriteZeroes(off, n int64, fua bool) error
	Trim(off, n int64) error
	Flush() error
}

// Magic numbers and codes ("Protocol phases", "Values").
const (
	nbdMagic     = 0x4e42444d41474943 // "NBDMAGIC"
	optMagic     = 0x49484156454f5054 // "IHAVEOPT"
	repMagic     = 0x3e889045565a9
	requestMagic = 0x25609513
	replyMagic   = 0x67446698

	flagFixedNewstyle = 1 << 0 // handshake flags
	flagNoZeroes      = 1 << 1

	clientFixedNewstyle = 1 << 0 // client flags
	clientNoZeroes      = 1 << 1

	optExportName = 1
	optAbort      = 2
	optList       = 3
	optInfo       = 6
	optGo         = 7

	repAck          = 1
	repServer       = 2
	repInfo         = 3
	repErrUnsup     = 1<<31 | 1
	repErrInvalid   = 1<<31 | 3
	repErrUnknown   = 1<<31 | 6
	repErrTooBig    = 1<<31 | 9
	infoExport      = 0
	infoBlockSize   = 3
	maxOptionLength = 64 << 10

	// transmission flags
	tHasFlags        = 1 << 0
	tSendFlush       = 1 << 2
	tSendFUA         = 1 << 3
	tSendTrim        = 1 << 5
	tSendWriteZeroes = 1 << 6
	transmitFlags    = tHasFlags | tSendFlush | tSendFUA | tSendTrim | tSendWriteZeroes

	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdWriteZeroes = 6

	cmdFlagFUA    = 1 << 0
	cmdFlagNoHole = 1 << 1

	// MaxPayload is the largest READ or WRITE served, the maximum block
	// size advertised (the protocol's usual 32 MiB).
	MaxPayload = 32 << 20
	minBlock   = 512
	prefBlock  = 4096

	errIO    = 5
	errInval = 22
	errNoSpc = 28
)

// Server serves one export.
type Server struct {
	Name string // the export's name; "" is also accepted as the default
	Dev  Device
	// Log, if set, is told about refused requests and options.
	Log func(format string, args ...any)
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

// ErrRefused is returned when the client broke the protocol and the
// connection was closed on it.
var ErrRefused = errors.New("nbd: protocol violation")

// Serve runs the handshake and then serves requests on conn until the
// client disconnects (nil on NBD_CMD_DISC or NBD_OPT_ABORT; io.EOF if it
// just went away, as a killed QEMU does). It does not close conn.
func (s *Server) Serve(conn io.ReadWriter) error {
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	done, err := s.handshake(r, w)
	if err != nil || done {
		return err
	}
	return s.transmit(r, w)
}

type option struct {
	code uint32
	data []byte
}

// handshake runs the fixed-newstyle negotiation ("Fixed newstyle
// negotiation"); done means the client aborted.
func (s *Server) handshake(r *bufio.Reader, w *bufio.Writer) (done bool, err error) {
	var hello [18]byte
	binary.BigEndian.PutUint64(hello[0:], nbdMagic)
	binary.BigEndian.PutUint64(hello[8:], optMagic)
	binary.BigEndian.PutUint16(hello[16:], flagFixedNewstyle|flagNoZeroes)
	if _, err := w.Write(hello[:]); err != nil {
		return false, err
	}
	if err := w.Flush(); err != nil {
		return false, err
	}
	var cf [4]byte
	if _, err := io.ReadFull(r, cf[:]); err != nil {
		return false, err
	}
	flags := binary.BigEndian.Uint32(cf[:])
	if flags&^(clientFixedNewstyle|clientNoZeroes) != 0 || flags&clientFixedNewstyle == 0 {
		s.logf("nbd: client flags %#x refused (fixed newstyle only)", flags)
		return false, ErrRefused
	}
	noZeroes := flags&clientNoZeroes != 0
	for {
		opt, err := readOption(r)
		if err != nil {
			if errors.Is(err, ErrRefused) {
				s.logf("nbd: %v", err)
			}
			return false, err
		}
		switch opt.code {
		case optExportName:
			if string(opt.data) != s.Name && len(opt.data) != 0 {
				// This option cannot answer an error: the
				// specification says to close.
				s.logf("nbd: export %q unknown", opt.data)
				return false, ErrRefused
			}
			var b [10 + 124]byte
			binary.BigEndian.PutUint64(b[0:], uint64(s.Dev.Size()))
			binary.BigEndian.PutUint16(b[8:], transmitFlags)
			n := len(b)
			if noZeroes {
				n = 10
			}
			if _, err := w.Write(b[:n]); err != nil {
				return false, err
			}
			return false, w.Flush()
		case optAbort:
			reply(w, opt.code, repAck, nil)
			return true, w.Flush()
		case optList:
			if len(opt.data) != 0 {
				reply(w, opt.code, repErrInvalid, []byte("NBD_OPT_LIST takes no data"))
				break
			}
			d := binary.BigEndian.AppendUint32(nil, uint32(len(s.Name)))
			reply(w, opt.code, repServer, append(d, s.Name...))
			reply(w, opt.code, repAck, nil)
		case optInfo, optGo:
			ok, err := s.info(w, opt)
			if err != nil {
				return false, err
			}
			if ok && opt.code == optGo {
				return false, w.Flush()
			}
		default:
			// QEMU asks for structured replies and extended
			// headers; declining is part of the protocol.
			reply(w, opt.code, repErrUnsup, nil)
		}
		if err := w.Flush(); err != nil {
			return false, err
		}
	}
}

func readOption(r *bufio.Reader) (option, error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return option{}, err
	}
	if m := binary.BigEndian.Uint64(h[0:]); m != optMagic {
		return option{}, fmt.Errorf("%w: option magic %#x", ErrRefused, m)
	}
	opt := option{code: binary.BigEndian.Uint32(h[8:])}
	n := binary.BigEndian.Uint32(h[12:])
	if n > maxOptionLength {
		return option{}, fmt.Errorf("%w: option %d of %d bytes", ErrRefused, opt.code, n)
	}
	opt.data = make([]byte, n)
	if _, err := io.ReadFull(r, opt.data); err != nil {
		return option{}, err
	}
	return opt, nil
}

// reply queues an option reply ("Option reply").
func reply(w *bufio.Writer, opt, typ uint32, data []byte) {
	var h [20]byte
	binary.BigEndian.PutUint64(h[0:], repMagic)
	binary.BigEndian.PutUint32(h[8:], opt)
	binary.BigEndian.PutUint32(h[12:], typ)
	binary.BigEndian.PutUint32(h[16:], uint32(len(data)))
	w.Write(h[:])
	w.Write(data)
}

// info answers NBD_OPT_INFO and NBD_OPT_GO: ok means the export was
// described and, for GO, transmission starts.
func (s *Server) info(w *bufio.Writer, opt option) (ok bool, err error) {
	d := opt.data
	if len(d) < 4 {
		reply(w, opt.code, repErrInvalid, []byte("short request"))
		return false, nil
	}
	n := binary.BigEndian.Uint32(d)
	if uint64(len(d)) < 4+uint64(n)+2 {
		reply(w, opt.code, repErrInvalid, []byte("name length past the data"))
		return false, nil
	}
	name := string(d[4 : 4+n])
	d = d[4+n:]
	nreq := int(binary.BigEndian.Uint16(d))
	d = d[2:]
	if len(d) != 2*nreq {
		reply(w, opt.code, repErrInvalid, []byte("information requests do not fill the data"))
		return false, nil
	}
	if name != s.Name && name != "" {
		reply(w, opt.code, repErrUnknown, []byte("no such export"))
		return false, nil
	}
	wantBlock := false
	for i := 0; i < nreq; i++ {
		if binary.BigEndian.Uint16(d[2*i:]) == infoBlockSize {
			wantBlock = true
		}
	}
	var e [12]byte
	binary.BigEndian.PutUint16(e[0:], infoExport)
	binary.BigEndian.PutUint64(e[2:], uint64(s.Dev.Size()))
	binary.BigEndian.PutUint16(e[10:], transmitFlags)
	reply(w, opt.code, repInfo, e[:])
	if wantBlock {
		var b [14]byte
		binary.BigEndian.PutUint16(b[0:], infoBlockSize)
		binary.BigEndian.PutUint32(b[2:], minBlock)
		binary.BigEndian.PutUint32(b[6:], prefBlock)
		binary.BigEndian.PutUint32(b[10:], MaxPayload)
		reply(w, opt.code, repInfo, b[:])
	}
	reply(w, opt.code, repAck, nil)
	return true, w.Flush()
}

// transmit serves requests ("Transmission phase") until DISC or an error.
func (s *Server) transmit(r *bufio.Reader, w *bufio.Writer) error {
	var h [28]byte
	buf := make([]byte, 0, 1<<20)
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return err
		}
		if m := binary.BigEndian.Uint32(h[0:]); m != requestMagic {
			s.logf("nbd: request magic %#x", m)
			return ErrRefused
		}
		flags := binary.BigEndian.Uint16(h[4:])
		typ := binary.BigEndian.Uint16(h[6:])
		handle := h[8:16]
		off := binary.BigEndian.Uint64(h[16:])
		n := binary.BigEndian.Uint32(h[24:])
		var payload []byte
		if typ == cmdWrite {
			// The payload follows whatever the request's faults: read it
			// to stay in step, unless it is too long to be real.
			if n > MaxPayload {
				s.logf("nbd: write of %d bytes", n)
				return ErrRefused
			}
			if cap(buf) < int(n) {
				buf = make([]byte, n)
			}
			payload = buf[:n]
			if _, err := io.ReadFull(r, payload); err != nil {
				return err
			}
		}
		if typ == cmdDisc {
			return nil
		}
		errno, data := s.serve(typ, flags, off, n, payload, buf)
		var rh [16]byte
		binary.BigEndian.PutUint32(rh[0:], replyMagic)
		binary.BigEndian.PutUint32(rh[4:], errno)
		copy(rh[8:], handle)
		w.Write(rh[:])
		if errno == 0 {
			w.Write(data)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// commandFlags are the commands served and the flags each may carry.
var commandFlags = map[uint16]uint16{
	cmdRead:        0,
	cmdWrite:       cmdFlagFUA,
	cmdFlush:       0,
	cmdTrim:        cmdFlagFUA,
	cmdWriteZeroes: cmdFlagFUA | cmdFlagNoHole,
}

// serve does one request; it answers an errno (0 for success) and, for
// READ, the data.
func (s *Server) serve(typ, flags uint16, off uint64, n uint32, payload, buf []byte) (uint32, []byte) {
	mask, known := commandFlags[typ]
	if !known {
		s.logf("nbd: command %d not supported", typ)
		return errInval, nil
	}
	if flags&^mask != 0 {
		s.logf("nbd: command %d with flags %#x", typ, flags)
		return errInval, nil
	}
	size := uint64(s.Dev.Size())
	if typ != cmdFlush && (off > size || uint64(n) > size-off) {
		s.logf("nbd: command %d at [%d, +%d) past the end (%d)", typ, off, n, size)
		if typ == cmdWrite || typ == cmdWriteZeroes {
			return errNoSpc, nil
		}
		return errInval, nil
	}
	fua := flags&cmdFlagFUA != 0
	var err error
	switch typ {
	case cmdRead:
		if n > MaxPayload {
			s.logf("nbd: read of %d bytes", n)
			return errInval, nil
		}
		data := buf[:0]
		if cap(data) < int(n) {
			data = make([]byte, n)
		}
		data = data[:n]
		if err := s.Dev.ReadAt(data, int64(off)); err != nil {
			s.logf("nbd: read: %v", err)
			return errIO, nil
		}
		return 0, data
	case cmdWrite:
		err = s.Dev.Write(payload, int64(off), fua)
	case cmdFlush:
		err = s.Dev.Flush()
	case cmdTrim:
		err = s.Dev.Trim(int64(off), int64(n))
		if err == nil && fua {
			err = s.Dev.Flush()
		}
	case cmdWriteZeroes:
		err = s.Dev.WriteZeroes(int64(off), int64(n), fua)
	}
	if err != nil {
		s.logf("nbd: command %d: %v", typ, err)
		return errIO, nil
	}
	return 0, nil
}
