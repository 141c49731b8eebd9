package vdso

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"shortbread/kernel/wallclock"
)

// TestLayout checks c/vdso.h's offsets against wallclock.Data and the
// Go side of the data page: the C library reads what the kernel writes.
func TestLayout(t *testing.T) {
	f, err := os.Open("c/vdso.h")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defs := map[string]uintptr{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) >= 3 && w[0] == "#define" && (strings.HasPrefix(w[1], "VVAR_") || strings.HasPrefix(w[1], "VCPU_")) {
			if n, err := strconv.ParseUint(w[2], 0, 64); err == nil {
				defs[w[1]] = uintptr(n)
			}
		}
	}
	var d wallclock.Data
	for name, off := range map[string]uintptr{
		"VVAR_OFF_SEQ": unsafe.Offsetof(d.Seq), "VVAR_OFF_MODE": unsafe.Offsetof(d.Mode),
		"VVAR_OFF_COUNTER0": unsafe.Offsetof(d.Counter0), "VVAR_OFF_HZ": unsafe.Offsetof(d.Hz),
		"VVAR_OFF_OFFSET": unsafe.Offsetof(d.Offset), "VVAR_OFF_ADJAT": unsafe.Offsetof(d.AdjAt),
		"VVAR_OFF_SLEW": unsafe.Offsetof(d.Slew), "VVAR_OFF_FREQ": unsafe.Offsetof(d.Freq),
		"VVAR_CPU_OFF": cpuOff, "VVAR_MODE_COUNTER": wallclock.ModeCounter,
		"VCPU_RDPID": CPURdpid, "VCPU_RDTSCP": CPURdtscp, "VVAR_COARSE_NS": wallclock.CoarseTick,
	} {
		if got, ok := defs[name]; !ok || got != off {
			t.Errorf("%s: vdso.h says %d (found %v), Go has %d", name, got, ok, off)
		}
	}
	if unsafe.Sizeof(d) > cpuOff {
		t.Errorf("wallclock.Data is %d bytes, past struct vcpu at %d", unsafe.Sizeof(d), cpuOff)
	}
}

// TestCPUMode: RDPID only where RDTSCP says the MSR exists (and so is
// written), RDTSCP without RDPID, the system call without RDTSCP.
func TestCPUMode(t *testing.T) {
	for _, c := range []struct {
		ext1, leaf7, want uint32
	}{
		{0, 0, 0},
		{0, 1 << 22, 0},
		{1 << 27, 0, CPURdtscp},
		{1 << 27, 1 << 22, CPURdpid},
		{^uint32(1 << 27), ^uint32(0), 0},
		{1 << 27, ^uint32(1 << 22), CPURdtscp},
	} {
		if got := CPUMode(c.ext1, c.leaf7); got != c.want {
			t.Errorf("CPUMode(%#x, %#x) = %d, want %d", c.ext1, c.leaf7, got, c.want)
		}
	}
}
