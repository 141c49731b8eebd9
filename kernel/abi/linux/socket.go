package linux

// Socket constants (include/linux/socket.h, include/linux/net.h,
// include/uapi/asm-generic/socket.h, include/uapi/linux/un.h).

// Address families.
const (
	AF_UNSPEC  = 0
	AF_UNIX    = 1
	AF_INET    = 2
	AF_INET6   = 10
	AF_NETLINK = 16
)

// Socket types and the flags socket(2), socketpair(2) and accept4(2)
// take in the type argument.
const (
	SOCK_STREAM    = 1
	SOCK_DGRAM     = 2
	SOCK_RAW       = 3
	SOCK_RDM       = 4
	SOCK_SEQPACKET = 5
	SOCK_TYPE_MASK = 0xf
	SOCK_NONBLOCK  = O_NONBLOCK
	SOCK_CLOEXEC   = O_CLOEXEC
)

// shutdown(2) how values.
const (
	SHUT_RD   = 0
	SHUT_WR   = 1
	SHUT_RDWR = 2
)

// send and recv flags.
const (
	MSG_OOB          = 0x1
	MSG_PEEK         = 0x2
	MSG_DONTROUTE    = 0x4
	MSG_CTRUNC       = 0x8
	MSG_TRUNC        = 0x20
	MSG_DONTWAIT     = 0x40
	MSG_EOR          = 0x80
	MSG_WAITALL      = 0x100
	MSG_NOSIGNAL     = 0x4000
	MSG_MORE         = 0x8000
	MSG_WAITFORONE   = 0x10000
	MSG_CMSG_CLOEXEC = 0x40000000
)

// Socket option levels and SOL_SOCKET options.
const (
	SOL_SOCKET = 1

	SO_DEBUG       = 1
	SO_REUSEADDR   = 2
	SO_TYPE        = 3
	SO_ERROR       = 4
	SO_DONTROUTE   = 5
	SO_BROADCAST   = 6
	SO_SNDBUF      = 7
	SO_RCVBUF      = 8
	SO_KEEPALIVE   = 9
	SO_OOBINLINE   = 10
	SO_LINGER      = 13
	SO_REUSEPORT   = 15
	SO_PASSCRED    = 16
	SO_PEERCRED    = 17
	SO_RCVLOWAT    = 18
	SO_SNDLOWAT    = 19
	SO_RCVTIMEO    = 20
	SO_SNDTIMEO    = 21
	SO_ACCEPTCONN  = 30
	SO_SNDBUFFORCE = 32
	SO_RCVBUFFORCE = 33
	SO_PROTOCOL    = 38
	SO_DOMAIN      = 39
)

// Control message types at SOL_SOCKET.
const (
	SCM_RIGHTS      = 1
	SCM_CREDENTIALS = 2
)

// SCM_MAX_FD is the most descriptors one SCM_RIGHTS message carries.
const SCM_MAX_FD = 253

// UNIX_PATH_MAX is the size of sockaddr_un's sun_path; SockaddrUnSize the
// whole struct.
const (
	UNIX_PATH_MAX  = 108
	SockaddrUnSize = 2 + UNIX_PATH_MAX
)

// Socket ioctls (include/uapi/linux/sockios.h).
const (
	SIOCINQ  = 0x541B // FIONREAD
	SIOCOUTQ = 0x5411 // TIOCOUTQ
)

// SOMAXCONN is the listen backlog cap (net.core.somaxconn's default).
const SOMAXCONN = 4096
