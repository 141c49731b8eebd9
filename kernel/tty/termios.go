package tty

import "encoding/binary"

// Termios flag bits and control-character indices (Linux
// include/uapi/asm-generic/termbits.h).
const (
	// c_iflag
	ISTRIP = 0o000040
	INLCR  = 0o000100
	IGNCR  = 0o000200
	ICRNL  = 0o000400
	IXON   = 0o002000

	// c_oflag
	OPOST = 0o000001
	ONLCR = 0o000004
	OCRNL = 0o000010

	// c_lflag
	ISIG    = 0o000001
	ICANON  = 0o000002
	ECHO    = 0o000010
	ECHOE   = 0o000020
	ECHOK   = 0o000040
	ECHONL  = 0o000100
	NOFLSH  = 0o000200
	TOSTOP  = 0o000400
	ECHOCTL = 0o001000
	ECHOKE  = 0o004000
	IEXTEN  = 0o100000

	// c_cc
	VINTR   = 0
	VQUIT   = 1
	VERASE  = 2
	VKILL   = 3
	VEOF    = 4
	VTIME   = 5
	VMIN    = 6
	VSTART  = 8
	VSTOP   = 9
	VSUSP   = 10
	VEOL    = 11
	VWERASE = 14
	VLNEXT  = 15
	VEOL2   = 16
	NCCS    = 19
)

// Signals the terminal raises.
const (
	SIGHUP   = 1
	SIGINT   = 2
	SIGQUIT  = 3
	SIGCONT  = 18
	SIGTSTP  = 20
	SIGWINCH = 28
)

// Termios is struct termios as the TCGETS/TCSETS ioctls pass it.
type Termios struct {
	Iflag, Oflag, Cflag, Lflag uint32
	Line                       uint8
	CC                         [NCCS]uint8
}

// flowControl reports whether ^S and ^Q stop and start output: IXON
// with the usual characters, as a packet-mode master is told.
func (t *Termios) flowControl() bool {
	return t.Iflag&IXON != 0 && t.CC[VSTOP] == 0x13 && t.CC[VSTART] == 0x11
}

// TermiosSize is the size of the encoded struct.
const TermiosSize = 36

// Encode returns the kernel's struct termios layout.
func (t Termios) Encode() [TermiosSize]byte {
	var b [TermiosSize]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], t.Iflag)
	le.PutUint32(b[4:], t.Oflag)
	le.PutUint32(b[8:], t.Cflag)
	le.PutUint32(b[12:], t.Lflag)
	b[16] = t.Line
	copy(b[17:], t.CC[:])
	return b
}

// DecodeTermios is the inverse of Encode.
func DecodeTermios(b []byte) Termios {
	le := binary.LittleEndian
	t := Termios{Iflag: le.Uint32(b[0:]), Oflag: le.Uint32(b[4:]), Cflag: le.Uint32(b[8:]), Lflag: le.Uint32(b[12:]), Line: b[16]}
	copy(t.CC[:], b[17:17+NCCS])
	return t
}

// DefaultTermios is what Linux gives a new terminal (tty_std_termios).
func DefaultTermios() Termios {
	t := Termios{
		Iflag: ICRNL | IXON,
		Oflag: OPOST | ONLCR,
		Cflag: 0o277, // B38400 | CS8 | CREAD | HUPCL
		Lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
	}
	t.CC = [NCCS]uint8{3, 0x1c, 0x7f, 0x15, 4, 0, 1, 0, 0x11, 0x13, 0x1a, 0, 0x12, 0xf, 0x17, 0x16, 0}
	return t
}

// Winsize is struct winsize (TIOCGWINSZ, TIOCSWINSZ).
type Winsize struct {
	Row, Col, Xpixel, Ypixel uint16
}

// WinsizeSize is the size of the encoded struct.
const WinsizeSize = 8

// Encode returns struct winsize's layout.
func (w Winsize) Encode() [WinsizeSize]byte {
	var b [WinsizeSize]byte
	le := binary.LittleEndian
	le.PutUint16(b[0:], w.Row)
	le.PutUint16(b[2:], w.Col)
	le.PutUint16(b[4:], w.Xpixel)
	le.PutUint16(b[6:], w.Ypixel)
	return b
}

// DecodeWinsize is the inverse of Encode.
func DecodeWinsize(b []byte) Winsize {
	le := binary.LittleEndian
	return Winsize{le.Uint16(b[0:]), le.Uint16(b[2:]), le.Uint16(b[4:]), le.Uint16(b[6:])}
}
