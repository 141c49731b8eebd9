// Package cpuinfo writes /proc/cpuinfo as Linux does, from the
// processor's CPUID: vendor, family, model, stepping, brand string and
// the feature flags by Linux's names, which programs parse. CPUID is a
// parameter so that the formatting runs under go test.
package cpuinfo

import (
	"fmt"
	"strings"
)

// CPUID executes the instruction (arch.CPUID in the kernel).
type CPUID func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// flag names by register bit, in Linux's order (cpufeatures.h words 0, 1,
// 4, 6, 9, 16, 18); a bit Linux does not show is left out.
var (
	leaf1EDX = []string{0: "fpu", 1: "vme", 2: "de", 3: "pse", 4: "tsc", 5: "msr", 6: "pae", 7: "mce", 8: "cx8", 9: "apic",
		11: "sep", 12: "mtrr", 13: "pge", 14: "mca", 15: "cmov", 16: "pat", 17: "pse36", 18: "pn", 19: "clflush",
		21: "dts", 22: "acpi", 23: "mmx", 24: "fxsr", 25: "sse", 26: "sse2", 27: "ss", 28: "ht", 29: "tm", 30: "ia64", 31: "pbe"}
	ext1EDX = []string{11: "syscall", 19: "mp", 20: "nx", 22: "mmxext", 25: "fxsr_opt", 26: "pdpe1gb", 27: "rdtscp", 29: "lm",
		30: "3dnowext", 31: "3dnow"}
	leaf1ECX = []string{0: "pni", 1: "pclmulqdq", 2: "dtes64", 3: "monitor", 4: "ds_cpl", 5: "vmx", 6: "smx", 7: "est",
		8: "tm2", 9: "ssse3", 10: "cid", 11: "sdbg", 12: "fma", 13: "cx16", 14: "xtpr", 15: "pdcm", 17: "pcid", 18: "dca",
		19: "sse4_1", 20: "sse4_2", 21: "x2apic", 22: "movbe", 23: "popcnt", 24: "tsc_deadline_timer", 25: "aes",
		26: "xsave", 28: "avx", 29: "f16c", 30: "rdrand", 31: "hypervisor"}
	ext1ECX = []string{0: "lahf_lm", 1: "cmp_legacy", 2: "svm", 3: "extapic", 4: "cr8_legacy", 5: "abm", 6: "sse4a",
		7: "misalignsse", 8: "3dnowprefetch", 9: "osvw", 10: "ibs", 11: "xop", 12: "skinit", 13: "wdt", 15: "lwp",
		16: "fma4", 17: "tce", 19: "nodeid_msr", 21: "tbm", 22: "topoext", 23: "perfctr_core", 24: "perfctr_nb",
		26: "bpext", 27: "ptsc", 28: "perfctr_llc", 29: "mwaitx"}
	leaf7EBX = []string{0: "fsgsbase", 1: "tsc_adjust", 2: "sgx", 3: "bmi1", 4: "hle", 5: "avx2", 7: "smep", 8: "bmi2",
		9: "erms", 10: "invpcid", 11: "rtm", 12: "cqm", 14: "mpx", 15: "rdt_a", 16: "avx512f", 17: "avx512dq",
		18: "rdseed", 19: "adx", 20: "smap", 21: "avx512ifma", 23: "clflushopt", 24: "clwb", 25: "intel_pt",
		26: "avx512pf", 27: "avx512er", 28: "avx512cd", 29: "sha_ni", 30: "avx512bw", 31: "avx512vl"}
	leaf7ECX = []string{1: "avx512vbmi", 2: "umip", 3: "pku", 4: "ospke", 5: "waitpkg", 6: "avx512_vbmi2", 8: "gfni",
		9: "vaes", 10: "vpclmulqdq", 11: "avx512_vnni", 12: "avx512_bitalg", 13: "tme", 14: "avx512_vpopcntdq",
		16: "la57", 22: "rdpid", 25: "cldemote", 27: "movdiri", 28: "movdir64b", 30: "sgx_lc"}
	leaf7EDX = []string{2: "avx512_4vnniw", 3: "avx512_4fmaps", 4: "fsrm", 8: "avx512_vp2intersect", 10: "md_clear",
		14: "serialize", 16: "tsxldtrk", 18: "pconfig", 20: "ibt", 22: "amx_bf16", 23: "avx512_fp16", 24: "amx_tile",
		25: "amx_int8", 28: "flush_l1d", 29: "arch_capabilities"}
)

// Info is what CPUID says about the processor.
type Info struct {
	Vendor                  string
	Family, Model, Stepping uint32
	Brand                   string
	Level                   uint32 // the highest basic leaf (cpuid level)
	Flags                   []string
	PhysBits, VirtBits      uint32
	CLFlush                 uint32
}

func bits(names []string, reg uint32, out []string) []string {
	for i, n := range names {
		if n != "" && reg&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

func reg(v uint32) string {
	return string([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}

// Read decodes CPUID.
func Read(cpuid CPUID) Info {
	var in Info
	max, b, c, d := cpuid(0, 0)
	in.Level = max
	in.Vendor = reg(b) + reg(d) + reg(c)
	var e1a, e1b, e1c, e1d uint32
	if max >= 1 {
		e1a, e1b, e1c, e1d = cpuid(1, 0)
		fam := e1a >> 8 & 0xf
		model := e1a >> 4 & 0xf
		if fam == 0xf {
			fam += e1a >> 20 & 0xff
		}
		if fam >= 6 {
			model += (e1a >> 16 & 0xf) << 4
		}
		in.Family, in.Model, in.Stepping = fam, model, e1a&0xf
		in.CLFlush = (e1b >> 8 & 0xff) * 8
	}
	var s7b, s7c, s7d uint32
	if max >= 7 {
		_, s7b, s7c, s7d = cpuid(7, 0)
	}
	emax, _, _, _ := cpuid(0x80000000, 0)
	var x1c, x1d uint32
	if emax >= 0x80000001 {
		_, _, x1c, x1d = cpuid(0x80000001, 0)
	}
	if emax >= 0x80000004 {
		var sb strings.Builder
		for l := uint32(0x80000002); l <= 0x80000004; l++ {
			a, b, c, d := cpuid(l, 0)
			sb.WriteString(reg(a) + reg(b) + reg(c) + reg(d))
		}
		in.Brand = strings.TrimSpace(strings.TrimRight(sb.String(), "\x00"))
	}
	if emax >= 0x80000008 {
		a, _, _, _ := cpuid(0x80000008, 0)
		in.PhysBits, in.VirtBits = a&0xff, a>>8&0xff
	}
	f := bits(leaf1EDX, e1d, nil)
	f = bits(ext1EDX, x1d, f)
	f = bits(leaf1ECX, e1c, f)
	f = bits(ext1ECX, x1c, f)
	f = bits(leaf7EBX, s7b, f)
	f = bits(leaf7ECX, s7c, f)
	in.Flags = bits(leaf7EDX, s7d, f)
	return in
}

// Format writes /proc/cpuinfo for ncpu processors at mhz.
func Format(in Info, ncpu int, mhz uint64) []byte {
	var b strings.Builder
	brand := in.Brand
	if brand == "" {
		brand = "unknown"
	}
	for i := 0; i < ncpu; i++ {
		fmt.Fprintf(&b, "processor\t: %d\n", i)
		fmt.Fprintf(&b, "vendor_id\t: %s\n", in.Vendor)
		fmt.Fprintf(&b, "cpu family\t: %d\nmodel\t\t: %d\nmodel name\t: %s\nstepping\t: %d\n", in.Family, in.Model, brand, in.Stepping)
		fmt.Fprintf(&b, "cpu MHz\t\t: %d.000\n", mhz)
		fmt.Fprintf(&b, "physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\napicid\t\t: %d\ninitial apicid\t: %d\n", ncpu, i, ncpu, i, i)
		fmt.Fprintf(&b, "fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: %d\nwp\t\t: yes\n", in.Level)
		fmt.Fprintf(&b, "flags\t\t: %s\n", strings.Join(in.Flags, " "))
		fmt.Fprintf(&b, "bogomips\t: %d.00\n", 2*mhz)
		fmt.Fprintf(&b, "clflush size\t: %d\ncache_alignment\t: %d\n", in.CLFlush, in.CLFlush)
		fmt.Fprintf(&b, "address sizes\t: %d bits physical, %d bits virtual\npower management:\n\n", in.PhysBits, in.VirtBits)
	}
	return []byte(b.String())
}

// Optional features whose presence changes what Shortbread does, by
// Linux's flag names: the random source (rdrand, else a TSC-seeded
// generator), FPU state (xsave and avx, else FXSAVE), the timer
// (tsc_deadline_timer, else a one-shot LAPIC timer calibrated against the
// TSC). The rest are listed so a boot log tells what a machine offers:
// nothing requires them.
var optional = []string{"rdrand", "rdseed", "xsave", "avx", "tsc_deadline_timer", "x2apic",
	"rdtscp", "rdpid", "pcid", "invpcid", "pdpe1gb", "fsgsbase", "smep", "smap"}

// Summary is the boot log's line about the processor: its name and which
// of the optional features it has and lacks.
func Summary(in Info) string {
	has := make(map[string]bool, len(in.Flags))
	for _, f := range in.Flags {
		has[f] = true
	}
	var yes, no []string
	for _, f := range optional {
		if has[f] {
			yes = append(yes, f)
		} else {
			no = append(no, f)
		}
	}
	name := in.Brand
	if name == "" {
		name = in.Vendor
	}
	return fmt.Sprintf("%s (family %d model %d); has %s; lacks %s", name, in.Family, in.Model,
		orNone(yes), orNone(no))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}
