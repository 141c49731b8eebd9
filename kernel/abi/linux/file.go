package linux

// Flags of open(2), openat(2) and fcntl(F_GETFL) (include/uapi/asm-generic/fcntl.h).
const (
	O_ACCMODE   = 0o3
	O_RDONLY    = 0o0
	O_WRONLY    = 0o1
	O_RDWR      = 0o2
	O_CREAT     = 0o100
	O_EXCL      = 0o200
	O_NOCTTY    = 0o400
	O_TRUNC     = 0o1000
	O_APPEND    = 0o2000
	O_NONBLOCK  = 0o4000
	O_DSYNC     = 0o10000
	O_ASYNC     = 0o20000 // FASYNC
	O_DIRECT    = 0o40000
	O_LARGEFILE = 0o100000 // the kernel sets it on every open on 64-bit
	O_DIRECTORY = 0o200000
	O_NOFOLLOW  = 0o400000
	O_NOATIME   = 0o1000000
	O_CLOEXEC   = 0o2000000
	O_SYNC      = 0o4000000 | O_DSYNC
	O_PATH      = 0o10000000
	O_TMPFILE   = 0o20000000 | O_DIRECTORY
	O_NDELAY    = O_NONBLOCK
)

// Flags and the special directory descriptor of the *at calls (include/uapi/linux/fcntl.h).
const (
	AT_FDCWD            = -100
	AT_SYMLINK_NOFOLLOW = 0x100
	AT_EACCESS          = 0x200 // faccessat: use the effective IDs
	AT_REMOVEDIR        = 0x200 // unlinkat: act like rmdir
	AT_SYMLINK_FOLLOW   = 0x400 // linkat: follow a final symlink
	AT_NO_AUTOMOUNT     = 0x800
	AT_EMPTY_PATH       = 0x1000
	AT_STATX_SYNC_TYPE  = 0x6000
	AT_STATX_FORCE_SYNC = 0x2000
	AT_STATX_DONT_SYNC  = 0x4000
	AT_RECURSIVE        = 0x8000
)

// access(2) modes (include/linux/fs.h MAY_* agree with these bits).
const (
	F_OK = 0
	X_OK = 1
	W_OK = 2
	R_OK = 4
)

// fcntl(2) commands (include/uapi/asm-generic/fcntl.h, include/uapi/linux/fcntl.h).
const (
	F_DUPFD         = 0
	F_GETFD         = 1
	F_SETFD         = 2
	F_GETFL         = 3
	F_SETFL         = 4
	F_GETLK         = 5
	F_SETLK         = 6
	F_SETLKW        = 7
	F_SETOWN        = 8
	F_GETOWN        = 9
	F_SETSIG        = 10
	F_GETSIG        = 11
	F_SETOWN_EX     = 15
	F_GETOWN_EX     = 16
	F_OFD_GETLK     = 36
	F_OFD_SETLK     = 37
	F_OFD_SETLKW    = 38
	F_SETLEASE      = 1024
	F_GETLEASE      = 1025
	F_NOTIFY        = 1026
	F_DUPFD_CLOEXEC = 1030
	F_SETPIPE_SZ    = 1031
	F_GETPIPE_SZ    = 1032
	F_ADD_SEALS     = 1033
	F_GET_SEALS     = 1034

	FD_CLOEXEC = 1 // the only file descriptor flag
)

// File seals, F_ADD_SEALS and F_GET_SEALS (include/uapi/linux/fcntl.h).
const (
	F_SEAL_SEAL         = 0x0001 // no more seals may be added
	F_SEAL_SHRINK       = 0x0002 // the size may not shrink
	F_SEAL_GROW         = 0x0004 // the size may not grow
	F_SEAL_WRITE        = 0x0008 // the data may not be written
	F_SEAL_FUTURE_WRITE = 0x0010 // no new writers; existing mappings may write
)

// F_SETOWN_EX owner types (include/uapi/asm-generic/fcntl.h).
const (
	F_OWNER_TID  = 0
	F_OWNER_PID  = 1
	F_OWNER_PGRP = 2
)

// si_code values of SIGIO and F_SETSIG signals
// (include/uapi/asm-generic/siginfo.h).
const (
	POLL_IN  = 1
	POLL_OUT = 2
	POLL_MSG = 3
	POLL_ERR = 4
	POLL_PRI = 5
	POLL_HUP = 6
)

// fallocate(2) modes (include/uapi/linux/falloc.h).
const (
	FALLOC_FL_KEEP_SIZE      = 0x01
	FALLOC_FL_PUNCH_HOLE     = 0x02
	FALLOC_FL_NO_HIDE_STALE  = 0x04
	FALLOC_FL_COLLAPSE_RANGE = 0x08
	FALLOC_FL_ZERO_RANGE     = 0x10
	FALLOC_FL_INSERT_RANGE   = 0x20
	FALLOC_FL_UNSHARE_RANGE  = 0x40
)

// flock(2) operations (include/uapi/asm-generic/fcntl.h).
const (
	LOCK_SH   = 1
	LOCK_EX   = 2
	LOCK_NB   = 4
	LOCK_UN   = 8
	LOCK_MAND = 32 // ignored since Linux 5.15
)

// Record lock types of struct flock.
const (
	F_RDLCK = 0
	F_WRLCK = 1
	F_UNLCK = 2
)

// lseek(2) whences (include/uapi/linux/fs.h).
const (
	SEEK_SET  = 0
	SEEK_CUR  = 1
	SEEK_END  = 2
	SEEK_DATA = 3
	SEEK_HOLE = 4
)

// renameat2(2) flags (include/uapi/linux/fs.h).
const (
	RENAME_NOREPLACE = 1 << 0
	RENAME_EXCHANGE  = 1 << 1
	RENAME_WHITEOUT  = 1 << 2
)

// utimensat(2) special nanosecond values (include/uapi/linux/stat.h).
const (
	UTIME_NOW  = (1 << 30) - 1
	UTIME_OMIT = (1 << 30) - 2
)

// File type and permission bits of st_mode (include/uapi/linux/stat.h).
const (
	S_IFMT   = 0o170000
	S_IFSOCK = 0o140000
	S_IFLNK  = 0o120000
	S_IFREG  = 0o100000
	S_IFBLK  = 0o060000
	S_IFDIR  = 0o040000
	S_IFCHR  = 0o020000
	S_IFIFO  = 0o010000
	S_ISUID  = 0o4000
	S_ISGID  = 0o2000
	S_ISVTX  = 0o1000
	S_IRWXU  = 0o700
	S_IRUSR  = 0o400
	S_IWUSR  = 0o200
	S_IXUSR  = 0o100
	S_IRWXG  = 0o070
	S_IRGRP  = 0o040
	S_IWGRP  = 0o020
	S_IXGRP  = 0o010
	S_IRWXO  = 0o007
	S_IROTH  = 0o004
	S_IWOTH  = 0o002
	S_IXOTH  = 0o001
)

// Limits (include/uapi/linux/limits.h, include/linux/namei.h, fs/pipe.c).
const (
	PATH_MAX      = 4096 // bytes in a path, including the NUL
	NAME_MAX      = 255  // bytes in one path component
	PIPE_BUF      = 4096 // writes up to this size are atomic on a pipe
	MAXSYMLINKS   = 40   // symlinks followed in one path walk
	PipeDefSize   = 65536
	PipeMaxSize   = 1 << 20 // /proc/sys/fs/pipe-max-size default
	NR_OPEN       = 1 << 20 // /proc/sys/fs/nr_open default: the largest RLIMIT_NOFILE
	RLIMIT_NOFILE = 7
)

// poll(2) event bits (include/uapi/asm-generic/poll.h); epoll uses the same values.
const (
	POLLIN     = 0x1
	POLLPRI    = 0x2
	POLLOUT    = 0x4
	POLLERR    = 0x8
	POLLHUP    = 0x10
	POLLNVAL   = 0x20
	POLLRDNORM = 0x40
	POLLRDBAND = 0x80
	POLLWRNORM = 0x100
	POLLWRBAND = 0x200
	POLLMSG    = 0x400
	POLLRDHUP  = 0x2000
)

// eventfd2(2) flags (include/uapi/linux/eventfd.h).
const (
	EFD_SEMAPHORE = 1
	EFD_CLOEXEC   = O_CLOEXEC
	EFD_NONBLOCK  = O_NONBLOCK
)

// mount(2) flags and umount2(2) flags (include/uapi/linux/mount.h).
const (
	MS_RDONLY       = 0x1
	MS_NOSUID       = 0x2
	MS_NODEV        = 0x4
	MS_NOEXEC       = 0x8
	MS_REMOUNT      = 0x20
	MS_BIND         = 0x1000
	MNT_FORCE       = 0x1
	MNT_DETACH      = 0x2
	UMOUNT_NOFOLLOW = 0x8
)

// Terminal and file ioctl requests (include/uapi/asm-generic/ioctls.h).
const (
	TCGETS     = 0x5401
	TCSETS     = 0x5402
	TCSETSW    = 0x5403
	TCSETSF    = 0x5404
	TIOCSCTTY  = 0x540E
	TIOCGPGRP  = 0x540F
	TIOCSPGRP  = 0x5410
	TIOCGWINSZ = 0x5413
	TIOCSWINSZ = 0x5414
	FIONREAD   = 0x541B
	FIONBIO    = 0x5421
	TIOCNOTTY  = 0x5422
	FIONCLEX   = 0x5450
	FIOCLEX    = 0x5451
	FIOASYNC   = 0x5452
)
