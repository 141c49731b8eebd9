// Package cmdline parses the kernel command line handed over by the
// boot loader in the Multiboot2 "boot command line" tag (Multiboot2
// specification §3.6.5) and validates it against a schema of known
// options.
//
// The syntax deliberately mirrors the Linux kernel's
// (Documentation/admin-guide/kernel-parameters.rst) so that GRUB
// entries written for Linux carry over: whitespace-separated words,
// "key" or "key=value", double quotes to protect spaces, and a bare
// "--" after which everything is passed to init untouched. There are
// no backslash escapes, again as in Linux, so a path containing a
// backslash survives unchanged.
//
// Nothing here returns an error: a typo on the command line must never
// stop the machine from booting, so problems are reported as warnings
// for the caller to log, and the offending option is dropped.
package cmdline

import (
	"fmt"
	"strings"
)

// Option is one key or key=value word from the command line.
type Option struct {
	Key   string
	Value string
	// HasValue distinguishes "key" from "key=" (empty value).
	HasValue bool
}

func (o Option) String() string {
	if !o.HasValue {
		return quoteIfNeeded(o.Key)
	}
	return quoteIfNeeded(o.Key) + "=" + quoteIfNeeded(o.Value)
}

// Cmdline is a parsed command line.
type Cmdline struct {
	// Opts holds the options before "--", in command line order,
	// including duplicates; Apply decides what duplicates mean.
	Opts []Option
	// InitArgs holds the words after "--", destined for init's argv.
	InitArgs []string
	// Warnings holds syntax problems found while splitting, such as an
	// unterminated quote. Apply includes them in its own warnings.
	Warnings []string
}

// Parse splits s into options and init arguments. It never fails:
// an unterminated quote extends to the end of the line (as in Linux)
// and is reported in Warnings, and empty option names are dropped with
// a warning.
func Parse(s string) Cmdline {
	var c Cmdline
	words, unterminated := split(s)
	if unterminated {
		c.Warnings = append(c.Warnings, "unterminated quote at end of command line")
	}
	afterDashes := false
	for _, w := range words {
		if afterDashes {
			c.InitArgs = append(c.InitArgs, w.text)
			continue
		}
		// A quoted "--" is an ordinary word, which gives users a way to
		// pass a literal "--" as an option value or key.
		if w.text == "--" && !w.quoted {
			afterDashes = true
			continue
		}
		o := Option{Key: w.text}
		if w.eq >= 0 {
			o = Option{Key: w.text[:w.eq], Value: w.text[w.eq+1:], HasValue: true}
		}
		if o.Key == "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("ignoring option with empty name: %s", quoteIfNeeded(w.text)))
			continue
		}
		c.Opts = append(c.Opts, o)
	}
	return c
}

// Values returns the value of every key=value occurrence of key, in order.
func (c Cmdline) Values(key string) []string {
	var v []string
	for _, o := range c.Opts {
		if o.Key == key && o.HasValue {
			v = append(v, o.Value)
		}
	}
	return v
}

// word is one whitespace-delimited token with its quotes removed.
type word struct {
	text   string
	eq     int  // index in text of the first unquoted '=', or -1
	quoted bool // whether any part of the word was quoted
}

// split tokenises s. Quotes may start anywhere inside a word and only
// group characters; they are not part of the result. Because the
// key/value split happens at the first '=' outside quotes, "a=b" in
// quotes is a key containing '=' rather than an assignment.
func split(s string) (words []word, unterminated bool) {
	var b strings.Builder
	inWord, inQuote, quoted := false, false, false
	eq := -1
	flush := func() {
		if inWord {
			words = append(words, word{text: b.String(), eq: eq, quoted: quoted})
		}
		b.Reset()
		inWord, quoted, eq = false, false, -1
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"':
			inWord, quoted = true, true
			inQuote = !inQuote
		case !inQuote && isSpace(ch):
			flush()
		default:
			if ch == '=' && !inQuote && eq < 0 {
				eq = b.Len()
			}
			inWord = true
			b.WriteByte(ch)
		}
	}
	flush()
	return words, inQuote
}

// isSpace matches C isspace in the "C" locale, the set the Linux
// parser uses; GRUB can leave a trailing newline or tab in the string.
func isSpace(ch byte) bool {
	return ch == ' ' || (ch >= '\t' && ch <= '\r')
}

// quoteIfNeeded renders a value so that Parse would read it back,
// which keeps warnings unambiguous and lets String round-trip.
func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	if strings.ContainsAny(s, " \t\n\v\f\r=") {
		return `"` + s + `"`
	}
	return s
}

// String reassembles the command line in a form Parse reads back to
// the same options and init arguments. Values containing a double quote
// cannot be represented and are written as-is.
func (c Cmdline) String() string {
	parts := make([]string, 0, len(c.Opts)+1+len(c.InitArgs))
	for _, o := range c.Opts {
		parts = append(parts, o.String())
	}
	if len(c.InitArgs) > 0 {
		parts = append(parts, "--")
		for _, a := range c.InitArgs {
			parts = append(parts, quoteIfNeeded(a))
		}
	}
	return strings.Join(parts, " ")
}

// Lookup returns the last occurrence of key, matching the
// last-one-wins rule Apply uses for duplicates.
func (c Cmdline) Lookup(key string) (Option, bool) {
	for i := len(c.Opts) - 1; i >= 0; i-- {
		if c.Opts[i].Key == key {
			return c.Opts[i], true
		}
	}
	return Option{}, false
}
