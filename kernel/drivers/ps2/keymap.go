package ps2

// Scan code set 1 to the bytes a terminal sends. The i8042 translates the
// keyboard's set 2 into set 1 (its configuration bit 6, which firmware
// leaves on), so set 1 is what arrives: a make code per key pressed, the
// same code with bit 7 set when it is released, 0xE0 before the keys
// added by the 101-key keyboard, 0xE1 before Pause (IBM PS/2 hardware
// interface technical reference, keyboard scan code set 1). The layout is
// US; the sequences for the cursor and editing keys are the Linux
// console's.

// keys maps set-1 make codes to the unshifted and shifted characters.
var keys = [0x3a][2]byte{
	0x02: {'1', '!'}, 0x03: {'2', '@'}, 0x04: {'3', '#'}, 0x05: {'4', '$'},
	0x06: {'5', '%'}, 0x07: {'6', '^'}, 0x08: {'7', '&'}, 0x09: {'8', '*'},
	0x0a: {'9', '('}, 0x0b: {'0', ')'}, 0x0c: {'-', '_'}, 0x0d: {'=', '+'},
	0x10: {'q', 'Q'}, 0x11: {'w', 'W'}, 0x12: {'e', 'E'}, 0x13: {'r', 'R'},
	0x14: {'t', 'T'}, 0x15: {'y', 'Y'}, 0x16: {'u', 'U'}, 0x17: {'i', 'I'},
	0x18: {'o', 'O'}, 0x19: {'p', 'P'}, 0x1a: {'[', '{'}, 0x1b: {']', '}'},
	0x1e: {'a', 'A'}, 0x1f: {'s', 'S'}, 0x20: {'d', 'D'}, 0x21: {'f', 'F'},
	0x22: {'g', 'G'}, 0x23: {'h', 'H'}, 0x24: {'j', 'J'}, 0x25: {'k', 'K'},
	0x26: {'l', 'L'}, 0x27: {';', ':'}, 0x28: {'\'', '"'}, 0x29: {'`', '~'},
	0x2b: {'\\', '|'}, 0x2c: {'z', 'Z'}, 0x2d: {'x', 'X'}, 0x2e: {'c', 'C'},
	0x2f: {'v', 'V'}, 0x30: {'b', 'B'}, 0x31: {'n', 'N'}, 0x32: {'m', 'M'},
	0x33: {',', '<'}, 0x34: {'.', '>'}, 0x35: {'/', '?'}, 0x39: {' ', ' '},
}

// Set-1 make codes of the keys the translation treats specially.
const (
	scEsc       = 0x01
	scBackspace = 0x0e
	scTab       = 0x0f
	scEnter     = 0x1c
	scCtrl      = 0x1d
	scLShift    = 0x2a
	scRShift    = 0x36
	scKPStar    = 0x37
	scAlt       = 0x38
	scCapsLock  = 0x3a
	scF1        = 0x3b
	scNumLock   = 0x45
	scKP7       = 0x47
	scKPMinus   = 0x4a
	scKPPlus    = 0x4e
	scKPDot     = 0x53
	scF11       = 0x57
	scF12       = 0x58
	scKPSlash   = 0x35 // after 0xE0
)

// fkeys are F1-F12's sequences on the Linux console.
var fkeys = [12]string{
	"\x1b[[A", "\x1b[[B", "\x1b[[C", "\x1b[[D", "\x1b[[E",
	"\x1b[17~", "\x1b[18~", "\x1b[19~", "\x1b[20~", "\x1b[21~", "\x1b[23~", "\x1b[24~",
}

// editKeys are the cursor and editing keys (0xE0 codes, and the keypad's
// with Num Lock off), by make code.
var editKeys = map[byte]string{
	0x47: "\x1b[1~", 0x48: "\x1b[A", 0x49: "\x1b[5~",
	0x4b: "\x1b[D", 0x4c: "\x1b[G", 0x4d: "\x1b[C",
	0x4f: "\x1b[4~", 0x50: "\x1b[B", 0x51: "\x1b[6~",
	0x52: "\x1b[2~", 0x53: "\x1b[3~",
}

// keypad are the keypad's characters with Num Lock on, from 0x47 (7).
const keypad = "789-456+1230."

// Keymap turns scan codes into terminal input, keeping the modifier and
// lock state between calls. The zero value is a keyboard with nothing
// held and every lock off.
type Keymap struct {
	lshift, rshift, ctrl, rctrl, alt, ralt bool
	caps, num                              bool
	e0                                     bool // the previous byte was 0xE0
	skip                                   int  // bytes of a Pause sequence still to drop
}

// Translate takes one byte from the keyboard and returns what the
// terminal receives (nothing for modifiers, releases and keys with no
// character).
func (k *Keymap) Translate(sc byte) []byte {
	if k.skip > 0 {
		k.skip--
		return nil
	}
	switch sc {
	case 0xe0:
		k.e0 = true
		return nil
	case 0xe1: // Pause: E1 1D 45 E1 9D C5
		k.skip = 5
		return nil
	case 0x00, 0xaa, 0xee, 0xfa, 0xfc, 0xfd, 0xfe, 0xff:
		// Errors, the self-test result, echo and acknowledgements:
		// answers from the keyboard, not keys (0xAA is also Left Shift's
		// release, which then never sticks).
		if sc == 0xaa {
			k.lshift = false
		}
		k.e0 = false
		return nil
	}
	ext := k.e0
	k.e0 = false
	release := sc&0x80 != 0
	code := sc & 0x7f
	switch code {
	case scLShift:
		if !ext { // E0 2A is a fake shift around some keys
			k.lshift = !release
		}
		return nil
	case scRShift:
		if !ext {
			k.rshift = !release
		}
		return nil
	case scCtrl:
		if ext {
			k.rctrl = !release
		} else {
			k.ctrl = !release
		}
		return nil
	case scAlt:
		if ext {
			k.ralt = !release
		} else {
			k.alt = !release
		}
		return nil
	}
	if release {
		return nil
	}
	switch code {
	case scCapsLock:
		k.caps = !k.caps
		return nil
	case scNumLock:
		if !ext {
			k.num = !k.num
		}
		return nil
	}
	var out []byte
	if ext {
		switch code {
		case scEnter:
			out = []byte{'\r'}
		case scKPSlash:
			out = []byte{'/'}
		default:
			if s, ok := editKeys[code]; ok {
				return []byte(s)
			}
			return nil
		}
		return k.meta(out)
	}
	switch {
	case code == scEsc:
		out = []byte{0x1b}
	case code == scBackspace:
		out = []byte{0x7f}
	case code == scTab:
		out = []byte{'\t'}
	case code == scEnter:
		out = []byte{'\r'}
	case code == scKPStar:
		out = []byte{'*'}
	case code >= scF1 && code < scF1+10:
		return []byte(fkeys[code-scF1])
	case code == scF11 || code == scF12:
		return []byte(fkeys[10+code-scF11])
	case code >= scKP7 && code <= scKPDot:
		c := keypad[code-scKP7]
		if k.num || code == scKPMinus || code == scKPPlus {
			out = []byte{c}
		} else if s, ok := editKeys[code]; ok {
			return []byte(s)
		}
	case int(code) < len(keys) && keys[code][0] != 0:
		out = []byte{k.char(code)}
	}
	if out == nil {
		return nil
	}
	return k.meta(out)
}

// char is a printable key's character under Shift, Caps Lock and Ctrl.
func (k *Keymap) char(code byte) byte {
	shift := k.lshift || k.rshift
	c := keys[code][0]
	if c >= 'a' && c <= 'z' && k.caps {
		shift = !shift
	}
	if shift {
		c = keys[code][1]
	}
	if k.ctrl || k.rctrl {
		switch {
		case c >= 'a' && c <= 'z', c >= '@' && c <= '_':
			return c & 0x1f
		case c == ' ' || c == '2':
			return 0
		case c == '6':
			return 0x1e
		case c == '-' || c == '/':
			return 0x1f
		case c == '?':
			return 0x7f
		}
	}
	return c
}

// meta puts ESC before a character typed with Alt, as the Linux console
// does by default.
func (k *Keymap) meta(b []byte) []byte {
	if k.alt || k.ralt {
		return append([]byte{0x1b}, b...)
	}
	return b
}
