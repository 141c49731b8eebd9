package proc

// capget(2), capset(2) and personality(2). Capabilities are not kept per
// process: they follow the IDs as Linux's do for a process that never
// changed them (root's effective set is full, and its permitted set
// while any of its user IDs is 0; others have none), less what an execve
// left out when the bounding set (PR_CAPBSET_DROP) had been reduced or
// SECURE_NOROOT was set. They are reported (capget, /proc/PID/status),
// while permission checks still go by the effective user ID alone.
// capset therefore accepts only the sets a process has (gaining is
// EPERM, as on Linux; dropping, which Linux allows, is EPERM too:
// partial support).

import "encoding/binary"

// Capability header versions (include/uapi/linux/capability.h).
const (
	capVersion1 = 0x19980330
	capVersion2 = 0x20071026
	capVersion3 = 0x20080522
	// capLast is CAP_LAST_CAP of Linux 6.1 (CAP_CHECKPOINT_RESTORE).
	capLast = 40
)

// capFull is every capability, as the two 32-bit words of a v3 set.
var capFull = [2]uint32{0xffffffff, 1<<(capLast-31) - 1}

// capHeader reads and checks the header: the words to copy (1 for v1,
// 2 after) and its pid. An unknown version is EINVAL, and the kernel's
// version is written back for the caller to retry with.
func (t *Thread) capHeader(at uint64) (words int, pid int32, e int64) {
	s := t.Proc.Space()
	var h [8]byte
	if err := s.CopyIn(uintptr(at), h[:]); err != nil {
		return 0, 0, errno(err)
	}
	switch binary.LittleEndian.Uint32(h[:]) {
	case capVersion1:
		words = 1
	case capVersion2, capVersion3:
		words = 2
	default:
		var v [4]byte
		binary.LittleEndian.PutUint32(v[:], capVersion3)
		if err := s.CopyOut(uintptr(at), v[:]); err != nil {
			return 0, 0, errno(err)
		}
		return 0, 0, -eINVAL
	}
	return words, int32(binary.LittleEndian.Uint32(h[4:])), 0
}

// capSets returns the effective and permitted sets of a process with
// credentials c: what its IDs give, less what an execve under a reduced
// bounding set (or SECURE_NOROOT) left out.
func capSets(c creds) (eff, perm [2]uint32) {
	if c.euid == 0 {
		eff = capFull
	}
	if c.ruid == 0 || c.euid == 0 || c.suid == 0 {
		perm = capFull
	}
	for i := range eff {
		eff[i] &^= c.capLost[i]
		perm[i] &^= c.capLost[i]
	}
	return eff, perm
}

// capBounding is the bounding set of credentials c.
func capBounding(c creds) [2]uint32 {
	return [2]uint32{capFull[0] &^ c.bsetDropped[0], capFull[1] &^ c.bsetDropped[1]}
}

// execCaps is the capability part of execve: a program run as root
// (real or effective ID 0) gets the bounding set as its permitted set,
// as Linux gives root a file's full sets masked by the bounding set;
// under SECURE_NOROOT root gets nothing. Others have no capabilities
// either way.
func execCaps(c *creds, securebits uint32) {
	if securebits&(1<<secureNoRoot) != 0 {
		c.capLost = capFull
		return
	}
	c.capLost = c.bsetDropped
}

// sysCapget implements capget(2): a NULL data pointer with a bad
// version only reports the version (0), as libcap probes it.
func sysCapget(t *Thread, a *[6]uint64) (int64, bool) {
	words, pid, e := t.capHeader(a[0])
	if e != 0 || a[1] == 0 {
		if a[1] == 0 && e == -eINVAL {
			return 0, false
		}
		return e, false
	}
	if pid < 0 {
		return -eINVAL, false
	}
	p := t.Proc
	if pid != 0 && int(pid) != p.PID {
		if p = lookup(int(pid)); p == nil {
			return -eSRCH, false
		}
	}
	p.mu.Lock()
	eff, perm := capSets(p.cred)
	p.mu.Unlock()
	// struct __user_cap_data_struct { effective, permitted, inheritable }
	b := make([]byte, 12*words)
	for i := 0; i < words; i++ {
		binary.LittleEndian.PutUint32(b[12*i:], eff[i])
		binary.LittleEndian.PutUint32(b[12*i+4:], perm[i])
	}
	return errno(t.Proc.Space().CopyOut(uintptr(a[1]), b)), false
}

// sysCapset implements capset(2) for the caller only (another pid is
// EPERM); it accepts the sets the caller has and refuses any change.
func sysCapset(t *Thread, a *[6]uint64) (int64, bool) {
	words, pid, e := t.capHeader(a[0])
	if e != 0 {
		return e, false
	}
	if pid != 0 && int(pid) != t.Proc.PID {
		return -ePERM, false
	}
	b := make([]byte, 12*words)
	if err := t.Proc.Space().CopyIn(uintptr(a[1]), b); err != nil {
		return errno(err), false
	}
	p := t.Proc
	p.mu.Lock()
	eff, perm := capSets(p.cred)
	p.mu.Unlock()
	for i := 0; i < words; i++ {
		e, pm, inh := binary.LittleEndian.Uint32(b[12*i:]), binary.LittleEndian.Uint32(b[12*i+4:]), binary.LittleEndian.Uint32(b[12*i+8:])
		if e != eff[i] || pm != perm[i] || inh != 0 {
			return -ePERM, false
		}
	}
	return 0, false
}

// personalityQuery asks personality(2) for the persona without changing it.
const personalityQuery = 0xffffffff

// sysPersonality implements personality(2): it returns the persona and,
// unless asked only to query, sets a new one (PER_LINUX, 0, is the
// default; flags like ADDR_NO_RANDOMIZE are kept and reported, not acted
// on). Fork keeps it.
func sysPersonality(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.persona
	if uint32(a[0]) != personalityQuery {
		p.persona = uint32(a[0])
	}
	return int64(old), false
}
