package cmdline

import (
	"reflect"
	"strings"
	"testing"

	"shortbread/kernel/klog"
)

func TestApplyDefault(t *testing.T) {
	tests := []struct {
		in    string
		want  map[string]string
		warns []string // substrings, one per expected warning, in order
	}{
		{in: "", want: map[string]string{}},
		{
			in:   `loglevel=debug test init="/bin/sh -c x"`,
			want: map[string]string{"loglevel": "debug", "test": "all", "init": "/bin/sh -c x"},
		},
		{in: "loglevel=2", want: map[string]string{"loglevel": "info"}},
		{in: "loglevel=0", want: map[string]string{"loglevel": "error"}},
		{in: "loglevel=WARN", want: map[string]string{"loglevel": "warn"}},
		{in: "test=vm", want: map[string]string{"test": "vm"}},
		{in: "loglevel=abc", want: map[string]string{}, warns: []string{`loglevel=abc: invalid value (want one of error, warn, info, debug, or 0-3)`}},
		{in: "loglevel=4", want: map[string]string{}, warns: []string{"loglevel=4: invalid value"}},
		{in: "loglevel=02", want: map[string]string{}, warns: []string{"loglevel=02: invalid value"}},
		{in: "loglevel=-1", want: map[string]string{}, warns: []string{"invalid value"}},
		{in: "loglevel", want: map[string]string{}, warns: []string{"option loglevel: requires a value"}},
		{in: "init", want: map[string]string{}, warns: []string{"option init: requires a value"}},
		{in: "quiet splash", want: map[string]string{}, warns: []string{`unknown option "quiet"`, `unknown option "splash"`}},
		{
			in:    "loglevel=info loglevel=debug",
			want:  map[string]string{"loglevel": "debug"},
			warns: []string{`duplicate option "loglevel"`},
		},
		{
			in:    "loglevel=info loglevel=bogus",
			want:  map[string]string{"loglevel": "info"},
			warns: []string{`duplicate option "loglevel"`, "loglevel=bogus: invalid value"},
		},
		{
			in:    `init="/bin/sh -c x`,
			want:  map[string]string{"init": "/bin/sh -c x"},
			warns: []string{"unterminated quote"},
		},
		{in: "init= -- a", want: map[string]string{"init": ""}},
	}
	for _, tt := range tests {
		got, warns := Parse(tt.in).Apply(Default)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: values = %v, want %v", tt.in, got, tt.want)
		}
		if len(warns) != len(tt.warns) {
			t.Errorf("%q: warnings = %q, want %d matching %q", tt.in, warns, len(tt.warns), tt.warns)
			continue
		}
		for i, w := range tt.warns {
			if !strings.Contains(warns[i], w) {
				t.Errorf("%q: warning %d = %q, want it to contain %q", tt.in, i, warns[i], w)
			}
		}
	}
}

func TestKinds(t *testing.T) {
	specs := []Spec{
		{Name: "b", Kind: Bool},
		{Name: "n", Kind: Int},
		{Name: "e", Kind: Enum, Enum: []string{"Low", "High"}},
		{Name: "s", Kind: String},
		{Name: "bad", Kind: Kind(42)},
	}
	good := map[string]map[string]string{
		"b":        {"b": "true"},
		"b=1":      {"b": "true"},
		"b=YES":    {"b": "true"},
		"b=on":     {"b": "true"},
		"b=false":  {"b": "false"},
		"b=0":      {"b": "false"},
		"b=Off":    {"b": "false"},
		"n=42":     {"n": "42"},
		"n=-7":     {"n": "-7"},
		"n=0x10":   {"n": "16"},
		"n=0b101":  {"n": "5"},
		"e=high":   {"e": "High"},
		"s=":       {"s": ""},
		`s="a b"`:  {"s": "a b"},
		"s=x b=no": {"s": "x", "b": "false"},
	}
	for in, want := range good {
		got, warns := Parse(in).Apply(specs)
		if !reflect.DeepEqual(got, want) || len(warns) != 0 {
			t.Errorf("%q: got %v %q, want %v and no warnings", in, got, warns, want)
		}
	}
	bad := []string{"b=2", "b=", "n", "n=", "n=1.5", "n=99999999999999999999", "e=0", "e=mid", "s", "bad=1"}
	for _, in := range bad {
		got, warns := Parse(in).Apply(specs)
		if len(got) != 0 || len(warns) != 1 {
			t.Errorf("%q: got %v %q, want no values and one warning", in, got, warns)
		}
	}
}

func TestFirstSpecWins(t *testing.T) {
	specs := append(append([]Spec(nil), Default...), Spec{Name: "loglevel", Kind: Int})
	got, warns := Parse("loglevel=debug").Apply(specs)
	if got["loglevel"] != "debug" || len(warns) != 0 {
		t.Errorf("a later duplicate spec overrode the first: %v %q", got, warns)
	}
}

func TestDefaultIsExtensible(t *testing.T) {
	specs := append(append([]Spec(nil), Default...), Spec{Name: "smp", Kind: Int, Help: "number of CPUs"})
	got, warns := Parse("smp=4 loglevel=1").Apply(specs)
	want := map[string]string{"smp": "4", "loglevel": "warn"}
	if !reflect.DeepEqual(got, want) || len(warns) != 0 {
		t.Errorf("got %v %q, want %v", got, warns, want)
	}
}

func TestDefaultSpecsWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, sp := range Default {
		if sp.Name == "" || sp.Help == "" {
			t.Errorf("spec %+v lacks a name or help", sp)
		}
		if names[sp.Name] {
			t.Errorf("duplicate spec %q", sp.Name)
		}
		names[sp.Name] = true
		if (sp.Kind == Enum) != (len(sp.Enum) > 0) {
			t.Errorf("spec %q: Enum list does not match kind %v", sp.Name, sp.Kind)
		}
	}
	for _, n := range []string{"loglevel", "test", "init"} {
		if !names[n] {
			t.Errorf("Default lacks %q", n)
		}
	}
}

// The kernel feeds the loglevel value straight into klog.ParseLevel,
// so every accepted spelling, including indices, must agree with klog.
func TestLoglevelMatchesKlog(t *testing.T) {
	var spec Spec
	for _, sp := range Default {
		if sp.Name == "loglevel" {
			spec = sp
		}
	}
	for i, name := range spec.Enum {
		lvl, err := klog.ParseLevel(name)
		if err != nil || int(lvl) != i {
			t.Errorf("enum %q at index %d: klog.ParseLevel = %v, %v", name, i, lvl, err)
		}
		vals, _ := Parse("loglevel=" + lvl.String()).Apply(Default)
		if vals["loglevel"] != name {
			t.Errorf("klog level %v does not map back to %q", lvl, name)
		}
	}
}

func TestUsage(t *testing.T) {
	u := Usage(Default)
	for _, want := range []string{
		"init=<string>\n",
		"loglevel=<one of error, warn, info, debug, or 0-3>\n",
		"test[=<string>]\n",
		"console verbosity",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("Usage lacks %q:\n%s", want, u)
		}
	}
	if strings.Index(u, "init") > strings.Index(u, "loglevel") || strings.Index(u, "loglevel") > strings.Index(u, "test") {
		t.Errorf("Usage not sorted:\n%s", u)
	}
	if got := Usage([]Spec{{Name: "v", Kind: Bool, Help: "h"}}); got != "v[=<bool: 1/0, true/false, yes/no, on/off>]\n\th\n" {
		t.Errorf("bool usage = %q", got)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{String: "string", Bool: "bool", Int: "int", Enum: "enum", Kind(9): "kind(9)"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestRepeatedOption(t *testing.T) {
	cl := Parse("console=ttyS0,115200 loglevel=info console=tty0 loglevel=warn")
	vals, warns := cl.Apply(Default)
	if len(warns) != 1 {
		t.Errorf("warnings %q, want one (the duplicate loglevel, not console)", warns)
	}
	if vals["console"] != "tty0" {
		t.Errorf("console = %q, want the last", vals["console"])
	}
	if got := cl.Values("console"); len(got) != 2 || got[0] != "ttyS0,115200" || got[1] != "tty0" {
		t.Errorf("Values(console) = %q", got)
	}
}
