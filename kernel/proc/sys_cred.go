package proc

// User and group IDs. There is one user database entry, root, but the IDs
// are real per-process state with Linux's rules for changing them, and
// the VFS checks file permissions against them, so a program that drops
// privileges loses them. Root's powers are all-or-nothing (euid 0), as
// with a full capability set.

import (
	"encoding/binary"
	"slices"

	"shortbread/kernel/vfs"
)

// creds are a process's IDs; a fork copies them, exec keeps them (no
// set-user-ID files yet).
type creds struct {
	ruid, euid, suid, fsuid uint32
	rgid, egid, sgid, fsgid uint32
	groups                  []uint32
	// bsetDropped is what PR_CAPBSET_DROP took out of the capability
	// bounding set, and capLost what the last execve left out of the
	// permitted set as a result (sys_cap.go); zero: none.
	bsetDropped, capLost [2]uint32
}

// keep is the "-1" argument: leave that ID unchanged.
const keep = ^uint32(0)

const ngroupsMax = 65536

func (c creds) privileged() bool { return c.euid == 0 }

// vfsCred is the Cred file operations check with. Linux checks with the
// fsuid/fsgid, which follow the effective IDs unless setfsuid moved them.
func (c *creds) vfsCred() vfs.Cred {
	return vfs.Cred{UID: c.ruid, GID: c.rgid, EUID: c.fsuid, EGID: c.fsgid, Groups: c.groups}
}

// cred returns the thread's file-operation credentials.
func (t *Thread) cred() *vfs.Cred {
	p := t.Proc
	p.mu.Lock()
	c := p.cred.vfsCred()
	p.mu.Unlock()
	return &c
}

// setIDs applies setresuid/setresgid semantics to one triple: each new ID
// other than keep must, for an unprivileged caller, be one of the three
// current ones. fs follows the new effective ID.
func setIDs(priv bool, r, e, s, fs *uint32, nr, ne, ns uint32) int64 {
	if !priv {
		for _, v := range [...]uint32{nr, ne, ns} {
			if v != keep && v != *r && v != *e && v != *s {
				return -ePERM
			}
		}
	}
	if nr != keep {
		*r = nr
	}
	if ne != keep {
		*e = ne
	}
	if ns != keep {
		*s = ns
	}
	*fs = *e
	return 0
}

// changeCreds runs f on the process's IDs under its lock.
func (t *Thread) changeCreds(f func(c *creds) int64) int64 {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.cred
	c.groups = append([]uint32(nil), p.cred.groups...)
	ret := f(&c)
	if ret == 0 {
		old := p.cred
		if c.euid != old.euid || c.egid != old.egid || c.fsuid != old.fsuid || c.fsgid != old.fsgid {
			p.nonDumpable.Store(true) // as Linux's commit_creds does
		}
		p.cred = c
	}
	return ret
}

func (t *Thread) creds() creds {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cred
}

func sysGetuid(t *Thread, a *[6]uint64) (int64, bool)  { return int64(t.creds().ruid), false }
func sysGeteuid(t *Thread, a *[6]uint64) (int64, bool) { return int64(t.creds().euid), false }
func sysGetgid(t *Thread, a *[6]uint64) (int64, bool)  { return int64(t.creds().rgid), false }
func sysGetegid(t *Thread, a *[6]uint64) (int64, bool) { return int64(t.creds().egid), false }

// setuid(2): root sets all three IDs; others may set the effective ID to
// the real or saved one.
func sysSetuid(t *Thread, a *[6]uint64) (int64, bool) {
	id := uint32(a[0])
	if id == keep {
		return -eINVAL, false
	}
	r := t.changeCreds(func(c *creds) int64 {
		if c.privileged() {
			return setIDs(true, &c.ruid, &c.euid, &c.suid, &c.fsuid, id, id, id)
		}
		return setIDs(false, &c.ruid, &c.euid, &c.suid, &c.fsuid, keep, id, keep)
	})
	if r == 0 {
		t.flagNproc()
	}
	return r, false
}

func sysSetgid(t *Thread, a *[6]uint64) (int64, bool) {
	id := uint32(a[0])
	if id == keep {
		return -eINVAL, false
	}
	return t.changeCreds(func(c *creds) int64 {
		if c.privileged() {
			return setIDs(true, &c.rgid, &c.egid, &c.sgid, &c.fsgid, id, id, id)
		}
		return setIDs(false, &c.rgid, &c.egid, &c.sgid, &c.fsgid, keep, id, keep)
	}), false
}

// setreuid(2): an unprivileged caller may set the real ID to the real or
// effective one, and the effective ID to any of the three; the saved ID
// becomes the new effective one when the real ID is set or the effective
// one moves away from the old real ID.
func setRe(priv bool, r, e, s, fs *uint32, nr, ne uint32) int64 {
	if !priv {
		if nr != keep && nr != *r && nr != *e {
			return -ePERM
		}
		if ne != keep && ne != *r && ne != *e && ne != *s {
			return -ePERM
		}
	}
	oldR := *r
	if nr != keep {
		*r = nr
	}
	if ne != keep {
		*e = ne
	}
	if nr != keep || (ne != keep && ne != oldR) {
		*s = *e
	}
	*fs = *e
	return 0
}

func sysSetreuid(t *Thread, a *[6]uint64) (int64, bool) {
	r := t.changeCreds(func(c *creds) int64 {
		return setRe(c.privileged(), &c.ruid, &c.euid, &c.suid, &c.fsuid, uint32(a[0]), uint32(a[1]))
	})
	if r == 0 {
		t.flagNproc()
	}
	return r, false
}

func sysSetregid(t *Thread, a *[6]uint64) (int64, bool) {
	return t.changeCreds(func(c *creds) int64 {
		return setRe(c.privileged(), &c.rgid, &c.egid, &c.sgid, &c.fsgid, uint32(a[0]), uint32(a[1]))
	}), false
}

func sysSetresuid(t *Thread, a *[6]uint64) (int64, bool) {
	r := t.changeCreds(func(c *creds) int64 {
		return setIDs(c.privileged(), &c.ruid, &c.euid, &c.suid, &c.fsuid, uint32(a[0]), uint32(a[1]), uint32(a[2]))
	})
	if r == 0 {
		t.flagNproc()
	}
	return r, false
}

func sysSetresgid(t *Thread, a *[6]uint64) (int64, bool) {
	return t.changeCreds(func(c *creds) int64 {
		return setIDs(c.privileged(), &c.rgid, &c.egid, &c.sgid, &c.fsgid, uint32(a[0]), uint32(a[1]), uint32(a[2]))
	}), false
}

// putIDs writes three IDs for getresuid/getresgid.
func putIDs(t *Thread, a *[6]uint64, ids [3]uint32) int64 {
	s := t.Proc.Space()
	for i, id := range ids {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], id)
		if err := s.CopyOut(uintptr(a[i]), b[:]); err != nil {
			return errno(err)
		}
	}
	return 0
}

func sysGetresuid(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.creds()
	return putIDs(t, a, [3]uint32{c.ruid, c.euid, c.suid}), false
}

func sysGetresgid(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.creds()
	return putIDs(t, a, [3]uint32{c.rgid, c.egid, c.sgid}), false
}

// setfsuid/setfsgid return the old ID whether or not they change it.
func sysSetfsuid(t *Thread, a *[6]uint64) (int64, bool) {
	var old uint32
	id := uint32(a[0])
	t.changeCreds(func(c *creds) int64 {
		old = c.fsuid
		if id == keep { // not an ID: only asks for the current one
			return 0
		}
		if c.privileged() || id == c.ruid || id == c.euid || id == c.suid || id == c.fsuid {
			c.fsuid = id
		}
		return 0
	})
	return int64(old), false
}

func sysSetfsgid(t *Thread, a *[6]uint64) (int64, bool) {
	var old uint32
	id := uint32(a[0])
	t.changeCreds(func(c *creds) int64 {
		old = c.fsgid
		if id == keep {
			return 0
		}
		if c.privileged() || id == c.rgid || id == c.egid || id == c.sgid || id == c.fsgid {
			c.fsgid = id
		}
		return 0
	})
	return int64(old), false
}

func sysGetgroups(t *Thread, a *[6]uint64) (int64, bool) {
	n := int64(int32(a[0]))
	g := t.creds().groups
	switch {
	case n < 0:
		return -eINVAL, false
	case n == 0:
		return int64(len(g)), false
	case n < int64(len(g)):
		return -eINVAL, false
	}
	b := make([]byte, 4*len(g))
	for i, id := range g {
		binary.LittleEndian.PutUint32(b[4*i:], id)
	}
	if err := t.Proc.Space().CopyOut(uintptr(a[1]), b); err != nil {
		return errno(err), false
	}
	return int64(len(g)), false
}

// sysSetgroups checks as Linux does: the right first (EPERM), then the
// size, then each ID (EFAULT, EINVAL for -1). The list is kept sorted,
// as Linux's groups_sort leaves it, so getgroups returns it in order.
func sysSetgroups(t *Thread, a *[6]uint64) (int64, bool) {
	if !t.creds().privileged() {
		return -ePERM, false
	}
	n := uint64(uint32(a[0])) // a C int: negative sizes are huge
	if n > ngroupsMax {
		return -eINVAL, false
	}
	b := make([]byte, 4*n)
	if err := t.Proc.Space().CopyIn(uintptr(a[1]), b); err != nil {
		return errno(err), false
	}
	g := make([]uint32, n)
	for i := range g {
		g[i] = binary.LittleEndian.Uint32(b[4*i:])
		if g[i] == ^uint32(0) {
			return -eINVAL, false
		}
	}
	slices.Sort(g)
	return t.changeCreds(func(c *creds) int64 {
		if !c.privileged() {
			return -ePERM
		}
		c.groups = g
		return 0
	}), false
}
