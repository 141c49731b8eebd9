package unix

import (
	"bytes"
	"fmt"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// address is a bound name: a file-system path or an abstract name.
type address struct {
	raw      []byte    // struct sockaddr_un as getsockname returns it, family included
	abstract bool      // sun_path[0] == 0
	inode    vfs.Inode // the socket node of a path name
}

// name is the key of an abstract name in the table: sun_path with its
// leading NUL.
func (a *address) name() string { return string(a.raw[2:]) }

// unnamed is the sockaddr of a socket with no name: the family alone.
var unnamed = []byte{linux.AF_UNIX, 0}

// sockaddr returns a's sockaddr, or the bare family for nil.
func (a *address) sockaddr() []byte {
	if a == nil {
		return unnamed
	}
	return a.raw
}

// The name tables: abstract names, and the socket bound to each socket
// node (Linux keeps it in the inode).
var (
	namesMu  sync.Mutex
	abstract = map[string]*sock{}    // protected by namesMu
	byInode  = map[vfs.Inode]*sock{} // protected by namesMu
	autoNext uint32                  // next autobind name to try; protected by namesMu
)

func unbind(a *address, s *sock) {
	namesMu.Lock()
	defer namesMu.Unlock()
	if a.abstract {
		if abstract[a.name()] == s {
			delete(abstract, a.name())
		}
	} else if byInode[a.inode] == s {
		delete(byInode, a.inode)
	}
}

// sockaddrKind is what a sockaddr_un names.
type sockaddrKind int

const (
	kindAuto     sockaddrKind = iota // the family alone: autobind
	kindPath                         // a file-system path
	kindAbstract                     // an abstract name
)

// parse checks a sockaddr_un as unix_validate_addr does (at least the
// family and one byte of sun_path, at most the struct, family AF_UNIX:
// else EINVAL; the family alone only where autobind allows it) and
// returns what it names: the path (cut at its first NUL) or the
// abstract name's table key, and the address as getsockname will give
// it back.
func parse(raw []byte, autoOK bool) (sockaddrKind, string, []byte, error) {
	if len(raw) < 2 || len(raw) > linux.SockaddrUnSize {
		return 0, "", nil, linux.EINVAL
	}
	if raw[0] != linux.AF_UNIX || raw[1] != 0 {
		return 0, "", nil, linux.EINVAL
	}
	if len(raw) == 2 {
		if !autoOK {
			return 0, "", nil, linux.EINVAL
		}
		return kindAuto, "", nil, nil
	}
	path := raw[2:]
	if path[0] == 0 {
		return kindAbstract, string(path), append([]byte(nil), raw...), nil
	}
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	// getsockname gives the path back with its terminating NUL.
	out := make([]byte, 2+len(path)+1)
	copy(out, raw[:2])
	copy(out[2:], path)
	return kindPath, string(path), out, nil
}

// Bind names the socket (bind(2)): a path makes a socket node there
// (EADDRINUSE if the name exists), an abstract name enters the table
// (EADDRINUSE if taken), the family alone picks an abstract name. A
// socket is named once: EINVAL after.
func (s *sock) Bind(c *vfs.Ctx, raw []byte) error {
	kind, name, out, err := parse(raw, true)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr != nil {
		// Linux makes the node before it looks at the socket: a taken
		// path is EADDRINUSE even for a bound socket.
		if kind == kindPath {
			if v := s.vfs(); v != nil && lookupOK(v, c, name) {
				return linux.EADDRINUSE
			}
		}
		return linux.EINVAL
	}
	switch kind {
	case kindAuto:
		return s.autobindLocked()
	case kindAbstract:
		namesMu.Lock()
		defer namesMu.Unlock()
		if abstract[name] != nil {
			return linux.EADDRINUSE
		}
		a := &address{raw: out, abstract: true}
		abstract[name] = s
		s.addr = a
		return nil
	}
	v := s.vfs()
	if v == nil {
		return linux.ENOENT // no file system to make the node in
	}
	ino, err := v.BindSocket(c, nil, name, 0o777)
	if err != nil {
		return err
	}
	namesMu.Lock()
	byInode[ino] = s
	namesMu.Unlock()
	s.addr = &address{raw: out, inode: ino}
	return nil
}

// lookupOK reports whether a path names something (not following a
// final symlink, as mknod does not).
func lookupOK(v *vfs.VFS, c *vfs.Ctx, path string) bool {
	_, err := v.Lookup(c, nil, path, linux.AT_SYMLINK_NOFOLLOW)
	return err == nil
}

// autobindLocked gives an unnamed socket an abstract name of five hex
// digits, as Linux does for bind with the family alone and for sockets
// that pass credentials.
// Preconditions: s.mu is held; s.addr is nil.
func (s *sock) autobindLocked() error {
	namesMu.Lock()
	defer namesMu.Unlock()
	for range 1 << 20 {
		n := autoNext
		autoNext = (autoNext + 1) & 0xfffff
		name := fmt.Sprintf("\x00%05x", n)
		if abstract[name] != nil {
			continue
		}
		raw := append([]byte{linux.AF_UNIX, 0}, name...)
		s.addr = &address{raw: raw, abstract: true}
		abstract[name] = s
		return nil
	}
	return linux.ENOSPC
}

// find returns the socket an address names, for connect and sendto:
// ECONNREFUSED when nothing is bound there, and the VFS's errors for a
// path (ENOENT, EACCES without write permission on the node).
func (s *sock) find(c *vfs.Ctx, raw []byte) (*sock, error) {
	kind, name, _, err := parse(raw, false)
	if err != nil {
		return nil, err
	}
	namesMu.Lock()
	if kind == kindAbstract {
		t := abstract[name]
		namesMu.Unlock()
		if t == nil {
			return nil, linux.ECONNREFUSED
		}
		return t, nil
	}
	namesMu.Unlock()
	v := s.vfs()
	if v == nil {
		return nil, linux.ENOENT
	}
	ino, err := v.FindSocket(c, nil, name)
	if err != nil {
		return nil, err
	}
	namesMu.Lock()
	t := byInode[ino]
	namesMu.Unlock()
	if t == nil {
		return nil, linux.ECONNREFUSED
	}
	return t, nil
}

// Name returns the socket's name (getsockname).
func (s *sock) Name() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr.sockaddr()
}

// Peer returns the peer's name (getpeername): ENOTCONN without one.
func (s *sock) Peer() ([]byte, error) {
	s.mu.Lock()
	p := s.peer
	s.mu.Unlock()
	if p == nil {
		return nil, linux.ENOTCONN
	}
	return p.Name(), nil
}
