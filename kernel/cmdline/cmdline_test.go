package cmdline

import (
	"reflect"
	"strings"
	"testing"
)

func opt(k, v string) Option { return Option{Key: k, Value: v, HasValue: true} }
func flag(k string) Option   { return Option{Key: k} }

func TestParse(t *testing.T) {
	tests := []struct {
		in       string
		opts     []Option
		initArgs []string
		warns    int
	}{
		{in: "", opts: nil},
		{in: "   \t\n ", opts: nil},
		{in: "quiet", opts: []Option{flag("quiet")}},
		{in: "loglevel=debug", opts: []Option{opt("loglevel", "debug")}},
		{in: "a= b", opts: []Option{opt("a", ""), flag("b")}},
		{in: "a=b=c", opts: []Option{opt("a", "b=c")}},
		{in: "  test   loglevel=2\t\ninit=/bin/sh\n", opts: []Option{flag("test"), opt("loglevel", "2"), opt("init", "/bin/sh")}},
		{in: `init="/bin/sh -c x"`, opts: []Option{opt("init", "/bin/sh -c x")}},
		{in: `"init=/bin/sh -c x"`, opts: []Option{flag("init=/bin/sh -c x")}},
		{in: `in"it=/bin/"sh`, opts: []Option{flag("init=/bin/sh")}},
		{in: `a="" b`, opts: []Option{opt("a", ""), flag("b")}},
		{in: `a="x"y"z w"`, opts: []Option{opt("a", "xyz w")}},
		{in: `path=C:\dir\file`, opts: []Option{opt("path", `C:\dir\file`)}},
		{in: "init=/sbin/init -- -v --single", opts: []Option{opt("init", "/sbin/init")}, initArgs: []string{"-v", "--single"}},
		{in: `-- "a b" c -- d=e ""`, initArgs: []string{"a b", "c", "--", "d=e", ""}},
		{in: "a --", opts: []Option{flag("a")}},
		{in: `a "--" b`, opts: []Option{flag("a"), flag("--"), flag("b")}},
		{in: `init="/bin/sh -c`, opts: []Option{opt("init", "/bin/sh -c")}, warns: 1},
		{in: `-- "unterminated arg`, initArgs: []string{"unterminated arg"}, warns: 1},
		{in: `=x b`, opts: []Option{flag("b")}, warns: 1},
		{in: `"" b`, opts: []Option{flag("b")}, warns: 1},
		{in: "caf\xc3\xa9=\xff", opts: []Option{opt("caf\u00e9", "\xff")}},
	}
	for _, tt := range tests {
		c := Parse(tt.in)
		if !reflect.DeepEqual(c.Opts, tt.opts) {
			t.Errorf("Parse(%q).Opts = %#v, want %#v", tt.in, c.Opts, tt.opts)
		}
		if !reflect.DeepEqual(c.InitArgs, tt.initArgs) {
			t.Errorf("Parse(%q).InitArgs = %q, want %q", tt.in, c.InitArgs, tt.initArgs)
		}
		if len(c.Warnings) != tt.warns {
			t.Errorf("Parse(%q).Warnings = %q, want %d", tt.in, c.Warnings, tt.warns)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	inputs := []string{
		`init="/bin/sh -c x" test loglevel=3 -- a "b c" "" --`,
		`"k=ey"=v a= b`,
		`x="tab	and newline
" -- "-- "`,
	}
	for _, in := range inputs {
		c := Parse(in)
		again := Parse(c.String())
		if !reflect.DeepEqual(c.Opts, again.Opts) || !reflect.DeepEqual(c.InitArgs, again.InitArgs) {
			t.Errorf("round trip of %q via %q:\n got %#v %q\nwant %#v %q",
				in, c.String(), again.Opts, again.InitArgs, c.Opts, c.InitArgs)
		}
	}
}

func TestLookupLastWins(t *testing.T) {
	c := Parse("a=1 b a=2 a")
	o, ok := c.Lookup("a")
	if !ok || o != flag("a") {
		t.Errorf("Lookup(a) = %#v, %v", o, ok)
	}
	if _, ok := c.Lookup("zz"); ok {
		t.Error("Lookup found a missing key")
	}
}

// FuzzParse checks that Parse never panics and that its output always
// survives a String/Parse round trip when no value contains a quote.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", `init="/bin/sh -c x" -- a b`, `"`, `=`, "a=b=c", "--", `"--"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Parse(s)
		for _, o := range c.Opts {
			if o.Key == "" {
				t.Fatalf("empty key in %q", s)
			}
		}
		if strings.Contains(s, `"`) {
			return
		}
		again := Parse(c.String())
		if !reflect.DeepEqual(c.Opts, again.Opts) || !reflect.DeepEqual(c.InitArgs, again.InitArgs) {
			t.Fatalf("round trip of %q via %q changed the result", s, c.String())
		}
	})
}
