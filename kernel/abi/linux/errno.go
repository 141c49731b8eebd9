// Package linux holds the constants and structures of the Linux x86-64
// system call ABI that the kernel's subsystems share: errno values, open
// and *at flags, file modes, fcntl commands, poll bits and the encodings of
// struct stat, struct statx and struct linux_dirent64. It has no behaviour
// beyond encoding; every value is the one Linux defines in its uapi
// headers (include/uapi/asm-generic/*.h, arch/x86/include/uapi/asm/*.h),
// and the tests compare them with the host's.
package linux

import "strconv"

// Errno is a Linux error number. It implements error; a system call
// returns its negation in RAX.
type Errno uintptr

// Error returns the text strerror(3) gives for e.
func (e Errno) Error() string {
	if e < Errno(len(errnoText)) && errnoText[e] != "" {
		return errnoText[e]
	}
	return "errno " + strconv.FormatUint(uint64(e), 10)
}

// Is lets errors.Is compare an Errno with another error holding the same number.
func (e Errno) Is(target error) bool {
	t, ok := target.(Errno)
	return ok && t == e
}

// Linux errno values (include/uapi/asm-generic/errno-base.h and errno.h).
const (
	EPERM           Errno = 1
	ENOENT          Errno = 2
	ESRCH           Errno = 3
	EINTR           Errno = 4
	EIO             Errno = 5
	ENXIO           Errno = 6
	E2BIG           Errno = 7
	ENOEXEC         Errno = 8
	EBADF           Errno = 9
	ECHILD          Errno = 10
	EAGAIN          Errno = 11
	ENOMEM          Errno = 12
	EACCES          Errno = 13
	EFAULT          Errno = 14
	ENOTBLK         Errno = 15
	EBUSY           Errno = 16
	EEXIST          Errno = 17
	EXDEV           Errno = 18
	ENODEV          Errno = 19
	ENOTDIR         Errno = 20
	EISDIR          Errno = 21
	EINVAL          Errno = 22
	ENFILE          Errno = 23
	EMFILE          Errno = 24
	ENOTTY          Errno = 25
	ETXTBSY         Errno = 26
	EFBIG           Errno = 27
	ENOSPC          Errno = 28
	ESPIPE          Errno = 29
	EROFS           Errno = 30
	EMLINK          Errno = 31
	EPIPE           Errno = 32
	EDOM            Errno = 33
	ERANGE          Errno = 34
	EDEADLK         Errno = 35
	ENAMETOOLONG    Errno = 36
	ENOLCK          Errno = 37
	ENOSYS          Errno = 38
	ENOTEMPTY       Errno = 39
	ELOOP           Errno = 40
	ENOMSG          Errno = 42
	EIDRM           Errno = 43
	ECHRNG          Errno = 44
	EL2NSYNC        Errno = 45
	EL3HLT          Errno = 46
	EL3RST          Errno = 47
	ELNRNG          Errno = 48
	EUNATCH         Errno = 49
	ENOCSI          Errno = 50
	EL2HLT          Errno = 51
	EBADE           Errno = 52
	EBADR           Errno = 53
	EXFULL          Errno = 54
	ENOANO          Errno = 55
	EBADRQC         Errno = 56
	EBADSLT         Errno = 57
	EBFONT          Errno = 59
	ENOSTR          Errno = 60
	ENODATA         Errno = 61
	ETIME           Errno = 62
	ENOSR           Errno = 63
	ENONET          Errno = 64
	ENOPKG          Errno = 65
	EREMOTE         Errno = 66
	ENOLINK         Errno = 67
	EADV            Errno = 68
	ESRMNT          Errno = 69
	ECOMM           Errno = 70
	EPROTO          Errno = 71
	EMULTIHOP       Errno = 72
	EDOTDOT         Errno = 73
	EBADMSG         Errno = 74
	EOVERFLOW       Errno = 75
	ENOTUNIQ        Errno = 76
	EBADFD          Errno = 77
	EREMCHG         Errno = 78
	ELIBACC         Errno = 79
	ELIBBAD         Errno = 80
	ELIBSCN         Errno = 81
	ELIBMAX         Errno = 82
	ELIBEXEC        Errno = 83
	EILSEQ          Errno = 84
	ERESTART        Errno = 85
	ESTRPIPE        Errno = 86
	EUSERS          Errno = 87
	ENOTSOCK        Errno = 88
	EDESTADDRREQ    Errno = 89
	EMSGSIZE        Errno = 90
	EPROTOTYPE      Errno = 91
	ENOPROTOOPT     Errno = 92
	EPROTONOSUPPORT Errno = 93
	ESOCKTNOSUPPORT Errno = 94
	EOPNOTSUPP      Errno = 95
	EPFNOSUPPORT    Errno = 96
	EAFNOSUPPORT    Errno = 97
	EADDRINUSE      Errno = 98
	EADDRNOTAVAIL   Errno = 99
	ENETDOWN        Errno = 100
	ENETUNREACH     Errno = 101
	ENETRESET       Errno = 102
	ECONNABORTED    Errno = 103
	ECONNRESET      Errno = 104
	ENOBUFS         Errno = 105
	EISCONN         Errno = 106
	ENOTCONN        Errno = 107
	ESHUTDOWN       Errno = 108
	ETOOMANYREFS    Errno = 109
	ETIMEDOUT       Errno = 110
	ECONNREFUSED    Errno = 111
	EHOSTDOWN       Errno = 112
	EHOSTUNREACH    Errno = 113
	EALREADY        Errno = 114
	EINPROGRESS     Errno = 115
	ESTALE          Errno = 116
	EUCLEAN         Errno = 117
	ENOTNAM         Errno = 118
	ENAVAIL         Errno = 119
	EISNAM          Errno = 120
	EREMOTEIO       Errno = 121
	EDQUOT          Errno = 122
	ENOMEDIUM       Errno = 123
	EMEDIUMTYPE     Errno = 124
	ECANCELED       Errno = 125
	ENOKEY          Errno = 126
	EKEYEXPIRED     Errno = 127
	EKEYREVOKED     Errno = 128
	EKEYREJECTED    Errno = 129
	EOWNERDEAD      Errno = 130
	ENOTRECOVERABLE Errno = 131
	ERFKILL         Errno = 132
	EHWPOISON       Errno = 133
	EWOULDBLOCK           = EAGAIN
	EDEADLOCK             = EDEADLK
)

// errnoText is strerror(3) by number, as glibc words it.
var errnoText = [...]string{
	EPERM:           "Operation not permitted",
	ENOENT:          "No such file or directory",
	ESRCH:           "No such process",
	EINTR:           "Interrupted system call",
	EIO:             "Input/output error",
	ENXIO:           "No such device or address",
	E2BIG:           "Argument list too long",
	ENOEXEC:         "Exec format error",
	EBADF:           "Bad file descriptor",
	ECHILD:          "No child processes",
	EAGAIN:          "Resource temporarily unavailable",
	ENOMEM:          "Cannot allocate memory",
	EACCES:          "Permission denied",
	EFAULT:          "Bad address",
	ENOTBLK:         "Block device required",
	EBUSY:           "Device or resource busy",
	EEXIST:          "File exists",
	EXDEV:           "Invalid cross-device link",
	ENODEV:          "No such device",
	ENOTDIR:         "Not a directory",
	EISDIR:          "Is a directory",
	EINVAL:          "Invalid argument",
	ENFILE:          "Too many open files in system",
	EMFILE:          "Too many open files",
	ENOTTY:          "Inappropriate ioctl for device",
	ETXTBSY:         "Text file busy",
	EFBIG:           "File too large",
	ENOSPC:          "No space left on device",
	ESPIPE:          "Illegal seek",
	EROFS:           "Read-only file system",
	EMLINK:          "Too many links",
	EPIPE:           "Broken pipe",
	EDOM:            "Numerical argument out of domain",
	ERANGE:          "Numerical result out of range",
	EDEADLK:         "Resource deadlock avoided",
	ENAMETOOLONG:    "File name too long",
	ENOLCK:          "No locks available",
	ENOSYS:          "Function not implemented",
	ENOTEMPTY:       "Directory not empty",
	ELOOP:           "Too many levels of symbolic links",
	ENOMSG:          "No message of desired type",
	EIDRM:           "Identifier removed",
	ECHRNG:          "Channel number out of range",
	EL2NSYNC:        "Level 2 not synchronized",
	EL3HLT:          "Level 3 halted",
	EL3RST:          "Level 3 reset",
	ELNRNG:          "Link number out of range",
	EUNATCH:         "Protocol driver not attached",
	ENOCSI:          "No CSI structure available",
	EL2HLT:          "Level 2 halted",
	EBADE:           "Invalid exchange",
	EBADR:           "Invalid request descriptor",
	EXFULL:          "Exchange full",
	ENOANO:          "No anode",
	EBADRQC:         "Invalid request code",
	EBADSLT:         "Invalid slot",
	EBFONT:          "Bad font file format",
	ENOSTR:          "Device not a stream",
	ENODATA:         "No data available",
	ETIME:           "Timer expired",
	ENOSR:           "Out of streams resources",
	ENONET:          "Machine is not on the network",
	ENOPKG:          "Package not installed",
	EREMOTE:         "Object is remote",
	ENOLINK:         "Link has been severed",
	EADV:            "Advertise error",
	ESRMNT:          "Srmount error",
	ECOMM:           "Communication error on send",
	EPROTO:          "Protocol error",
	EMULTIHOP:       "Multihop attempted",
	EDOTDOT:         "RFS specific error",
	EBADMSG:         "Bad message",
	EOVERFLOW:       "Value too large for defined data type",
	ENOTUNIQ:        "Name not unique on network",
	EBADFD:          "File descriptor in bad state",
	EREMCHG:         "Remote address changed",
	ELIBACC:         "Can not access a needed shared library",
	ELIBBAD:         "Accessing a corrupted shared library",
	ELIBSCN:         ".lib section in a.out corrupted",
	ELIBMAX:         "Attempting to link in too many shared libraries",
	ELIBEXEC:        "Cannot exec a shared library directly",
	EILSEQ:          "Invalid or incomplete multibyte or wide character",
	ERESTART:        "Interrupted system call should be restarted",
	ESTRPIPE:        "Streams pipe error",
	EUSERS:          "Too many users",
	ENOTSOCK:        "Socket operation on non-socket",
	EDESTADDRREQ:    "Destination address required",
	EMSGSIZE:        "Message too long",
	EPROTOTYPE:      "Protocol wrong type for socket",
	ENOPROTOOPT:     "Protocol not available",
	EPROTONOSUPPORT: "Protocol not supported",
	ESOCKTNOSUPPORT: "Socket type not supported",
	EOPNOTSUPP:      "Operation not supported",
	EPFNOSUPPORT:    "Protocol family not supported",
	EAFNOSUPPORT:    "Address family not supported by protocol",
	EADDRINUSE:      "Address already in use",
	EADDRNOTAVAIL:   "Cannot assign requested address",
	ENETDOWN:        "Network is down",
	ENETUNREACH:     "Network is unreachable",
	ENETRESET:       "Network dropped connection on reset",
	ECONNABORTED:    "Software caused connection abort",
	ECONNRESET:      "Connection reset by peer",
	ENOBUFS:         "No buffer space available",
	EISCONN:         "Transport endpoint is already connected",
	ENOTCONN:        "Transport endpoint is not connected",
	ESHUTDOWN:       "Cannot send after transport endpoint shutdown",
	ETOOMANYREFS:    "Too many references: cannot splice",
	ETIMEDOUT:       "Connection timed out",
	ECONNREFUSED:    "Connection refused",
	EHOSTDOWN:       "Host is down",
	EHOSTUNREACH:    "No route to host",
	EALREADY:        "Operation already in progress",
	EINPROGRESS:     "Operation now in progress",
	ESTALE:          "Stale file handle",
	EUCLEAN:         "Structure needs cleaning",
	ENOTNAM:         "Not a XENIX named type file",
	ENAVAIL:         "No XENIX semaphores available",
	EISNAM:          "Is a named type file",
	EREMOTEIO:       "Remote I/O error",
	EDQUOT:          "Disk quota exceeded",
	ENOMEDIUM:       "No medium found",
	EMEDIUMTYPE:     "Wrong medium type",
	ECANCELED:       "Operation canceled",
	ENOKEY:          "Required key not available",
	EKEYEXPIRED:     "Key has expired",
	EKEYREVOKED:     "Key has been revoked",
	EKEYREJECTED:    "Key was rejected by service",
	EOWNERDEAD:      "Owner died",
	ENOTRECOVERABLE: "State not recoverable",
	ERFKILL:         "Operation not possible due to RF-kill",
	EHWPOISON:       "Memory page has hardware error",
}
