package cpuinfo

import (
	"os"
	"strings"
	"testing"

	"shortbread/kernel/arch"
)

// TestAgainstHost decodes this machine's CPUID and compares it with the
// host Linux's /proc/cpuinfo: the same identification, and every flag
// Linux shows that this package knows by name.
func TestAgainstHost(t *testing.T) {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	host := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" {
			break // the first processor only
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			host[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	in := Read(arch.CPUID)
	out := string(Format(in, 1, 1000))
	for _, k := range []string{"vendor_id", "cpu family", "model", "model name", "stepping"} {
		want := k + "\t"
		for len(want) < 16 {
			want += "\t"
		}
		if !strings.Contains(out, "\n"+k) && !strings.HasPrefix(out, k) {
			t.Errorf("no %q line", k)
		}
		if !strings.Contains(out, ": "+host[k]+"\n") {
			t.Errorf("%s: host says %q; ours:\n%s", k, host[k], out)
		}
	}
	// Flags that are plain CPUID bits Linux never sets on its own (it
	// may clear some, which is fine): one the host shows must be ours.
	plain := map[string]bool{"fpu": true, "sse": true, "sse2": true, "cx8": true, "cmov": true, "pni": true,
		"ssse3": true, "sse4_1": true, "sse4_2": true, "popcnt": true, "aes": true, "avx": true, "avx2": true,
		"bmi1": true, "bmi2": true, "lm": true, "nx": true}
	ours := map[string]bool{}
	for _, f := range in.Flags {
		ours[f] = true
	}
	for _, f := range strings.Fields(host["flags"]) {
		if plain[f] && !ours[f] {
			t.Errorf("host shows %s, CPUID here does not", f)
		}
	}
	if !ours["fpu"] || !ours["sse2"] || !ours["lm"] {
		t.Errorf("x86-64 basics missing: %v", in.Flags)
	}
}

func TestFormatFake(t *testing.T) {
	fake := func(leaf, sub uint32) (a, b, c, d uint32) {
		switch leaf {
		case 0:
			return 7, 0x756e6547, 0x6c65746e, 0x49656e69 // GenuineIntel
		case 1:
			return 0x00050654, 0x00080800, 1 << 20, 1<<0 | 1<<26 // family 6 model 0x55 stepping 4; sse4_2; fpu, sse2
		case 7:
			return 0, 1 << 5, 0, 0 // avx2
		case 0x80000000:
			return 0x80000001, 0, 0, 0
		case 0x80000001:
			return 0, 0, 0, 1 << 29 // lm
		}
		return
	}
	in := Read(fake)
	if in.Vendor != "GenuineIntel" || in.Family != 6 || in.Model != 0x55 || in.Stepping != 4 || in.CLFlush != 64 {
		t.Errorf("decoded %+v", in)
	}
	if got := strings.Join(in.Flags, " "); got != "fpu sse2 lm sse4_2 avx2" {
		t.Errorf("flags %q", got)
	}
	out := string(Format(in, 2, 2600))
	if strings.Count(out, "processor\t:") != 2 || !strings.Contains(out, "model\t\t: 85\n") {
		t.Errorf("format:\n%s", out)
	}
}

func TestSummary(t *testing.T) {
	in := Info{Vendor: "AuthenticAMD", Family: 15, Model: 107, Flags: []string{"fpu", "sse2", "rdrand", "pcid"}}
	want := "AuthenticAMD (family 15 model 107); has rdrand pcid; lacks rdseed xsave avx tsc_deadline_timer x2apic " +
		"rdtscp rdpid invpcid pdpe1gb fsgsbase smep smap"
	if got := Summary(in); got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	in.Brand = "QEMU Virtual CPU version 2.5+"
	in.Flags = nil
	if got := Summary(in); !strings.HasPrefix(got, in.Brand+" (") || !strings.Contains(got, "; has none;") {
		t.Errorf("Summary = %q", got)
	}
}
