/* System call fuzzer: several processes issue random system calls with
 * random arguments (small numbers, flags, pointers to their own memory,
 * NULL, unmapped and kernel addresses, huge values) for a bounded time.
 * The kernel must survive and keep working; the fuzzer itself may crash,
 * and its children may die of signals. Calls that would reach outside the
 * fuzzer (kill, reboot, module and mount calls), never return (exit,
 * execve, fork bombs) or would disarm the alarm that bounds each child
 * (alarm, setitimer, sigaction, sigprocmask) are skipped.
 *
 * Then the same again as an unprivileged user (uid/gid 65534): root first
 * prepares files of its own (0644, 0600, a set-user-ID program, a 0755
 * directory) and opens some of them read-only and O_PATH; the children
 * inherit those descriptors, drop to nobody, and their random arguments
 * often name those descriptors and paths. Calls that only root may make
 * are no longer skipped: they must fail. Afterwards root checks that no
 * file changed (contents by checksum, mode, owner) and every child checks,
 * before it exits, that it still has only nobody's IDs.
 * Each child first opens sockets of every kind (TCP listening and
 * connected, UDP, IPv6, unix pairs) and random pointers sometimes name
 * its listeners' addresses, so socket calls meet live sockets.
 *
 * Purely random arguments rarely get past a call's argument checks, so
 * arguments are often valid-looking instead: the child's own descriptors,
 * names of files it made in its working directory, small lengths; and one
 * step in eight is a sequence of related calls (create, write, map,
 * truncate, punch, sync, rename, unlink; pipes and splice; epoll; socket
 * options, bind, listen, connect and accept over TCP, UDP and unix
 * sockets, messages with descriptors and credentials passed) whose
 * arguments are sometimes replaced by random ones. Each child works in a
 * directory of its own, DIR/fz/cN for one of the DIRS (colon-separated,
 * /tmp by default; an ext4 mount point fuzzes ext4), removed afterwards;
 * as root it is chrooted in DIR/fz, so what its names reach stays there.
 * Booted
 * with sysstat, /proc/shortbread/syscalls shows which calls and outcomes
 * the run reached. FUZZ_KEEP=1 in the environment keeps the directories
 * (tools/fuzz-soak.sh then checks the ext4 image they are on with e2fsck);
 * FUZZ_FILL=DIR makes the children in DIR fill its disk now and then.
 * usage: fuzz [processes [calls-per-process [seed [DIRS]]]] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char scratch[65536];

/* the unprivileged phase: root's files, by path and by descriptor */
static int as_user;
static const char *const paths[] = {"/tmp/fz_root644", "/tmp/fz_root600", "/tmp/fz_suid", "/tmp/fz_dir",
				    "/tmp/fz_dir/f", "/bin/busybox", "/tmp", "/proc/1/environ"};
#define NPATHS (sizeof paths / sizeof *paths)
static int fds[6];

/* a listener's address on 127.0.0.1 (and ::1), so random connects,
 * sendtos and binds sometimes name a live socket */
static struct sockaddr_in lo4;
static struct sockaddr_in6 lo6;

/* the child's own descriptors (sockets, files its sequences opened) and
 * names in its working directory, some made before the calls start */
static int myfds[24], nmyfds;
static const char *const names[] = {"a", "b", "c", "d", "d/a", "d/e", "d/e/f", "l", "../c1/a", ".", "..",
				    "d/../b", "", "a/"};
#define NNAMES (sizeof names / sizeof *names)

static void keep_fd(int fd)
{
	if (fd < 0)
		return;
	if (nmyfds < (int)(sizeof myfds / sizeof *myfds))
		myfds[nmyfds++] = fd;
	else
		myfds[next() % nmyfds] = fd;
}

static long arg(void)
{
	if (next() % 16 == 0)
		return next() % 2 ? (long)&lo4 : (long)&lo6;
	switch (next() % 16) {
	case 0:
		if (nmyfds)
			return myfds[next() % nmyfds];
		break;
	case 1:
		return (long)names[next() % NNAMES];
	case 2:
		return (long)(next() % 4097);
	}
	if (as_user && next() % 3 == 0) {
		if (next() % 2)
			return fds[next() % 6];
		return (long)paths[next() % NPATHS];
	}
	switch (next() % 10) {
	case 0: return 0;
	case 1: return (long)(next() % 64);
	case 2: return -(long)(next() % 4096);
	case 3: return (long)(scratch + next() % sizeof scratch);
	case 4: return (long)0xffffffff81001000ULL;  /* the kernel image */
	case 5: return (long)0xffff800000000000ULL;  /* the kernel half */
	case 6: return (long)(next() << 12);        /* some page, likely unmapped */
	case 7: return (long)(1UL << (next() % 64));
	case 8: return (long)next();
	default: return (long)(scratch + sizeof scratch - next() % 64);
	}
}

/* calls only root may make: as nobody, they must fail, so they are fuzzed */
static int root_only(long nr)
{
	switch (nr) {
	case SYS_reboot: case SYS_mount: case SYS_umount2: case SYS_chroot: case SYS_sethostname:
	case SYS_setdomainname: case SYS_settimeofday: case SYS_clock_settime: case SYS_adjtimex:
	case SYS_clock_adjtime: case SYS_setrlimit: case SYS_prlimit64: case SYS_iopl: case SYS_ioperm:
	case SYS_swapon: case SYS_swapoff: case SYS_acct: case SYS_vhangup: case SYS_init_module:
	case SYS_delete_module: case SYS_kexec_load: case SYS_pivot_root:
		return 1;
	}
	return 0;
}

static int skipped(long nr)
{
	if (as_user && root_only(nr))
		return 0;
	switch (nr) {
	case SYS_exit: case SYS_exit_group: case SYS_execve: case SYS_execveat:
	case SYS_fork: case SYS_vfork: case SYS_clone: case SYS_clone3:
	case SYS_kill: case SYS_tkill: case SYS_tgkill: case SYS_rt_sigqueueinfo:
	case SYS_rt_tgsigqueueinfo: case SYS_reboot: case SYS_kexec_load:
	case SYS_kexec_file_load: case SYS_init_module: case SYS_finit_module:
	case SYS_delete_module: case SYS_mount: case SYS_umount2: case SYS_swapon:
	case SYS_swapoff: case SYS_pivot_root: case SYS_chroot: case SYS_ptrace:
	case SYS_process_vm_writev: case SYS_pidfd_send_signal: case SYS_rt_sigreturn:
	case SYS_setsid: case SYS_setpgid: case SYS_unshare: case SYS_setns:
	/* Names are relative to the child's directory: the child stays in it. */
	case SYS_chdir:
	case SYS_acct: case SYS_quotactl: case SYS_sethostname: case SYS_setdomainname:
	case SYS_iopl: case SYS_ioperm: case SYS_syslog: case SYS_vhangup:
	case SYS_settimeofday: case SYS_clock_settime: case SYS_adjtimex:
	case SYS_clock_adjtime: case SYS_setrlimit: case SYS_prlimit64:
	case SYS_pause: case SYS_rt_sigsuspend:
	/* The SIGALRM that bounds each child must stay armed and deliverable. */
	case SYS_alarm: case SYS_setitimer: case SYS_timer_create: case SYS_rt_sigaction:
	case SYS_rt_sigprocmask:
		return 1;
	}
	return 0;
}

/* Sockets of every kind the kernel has, on the low descriptors random
 * arguments name most: a TCP listener with a connection in both its
 * states, UDP, IPv6, a unix pair and netlink. */
static void sockets(void)
{
	lo4 = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	lo6 = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t len = sizeof lo4;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (bind(l, (void *)&lo4, sizeof lo4) == 0 && listen(l, 4) == 0)
		getsockname(l, (void *)&lo4, &len);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	connect(c, (void *)&lo4, sizeof lo4);
	accept4(l, NULL, NULL, SOCK_NONBLOCK);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	bind(u, (void *)&(struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)},
	     sizeof lo4);
	int l6 = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	len = sizeof lo6;
	if (bind(l6, (void *)&lo6, sizeof lo6) == 0 && listen(l6, 4) == 0)
		getsockname(l6, (void *)&lo6, &len);
	int sp[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sp);
	/* NETLINK_ROUTE with a link dump waiting to be read. */
	int nl = socket(16 /* AF_NETLINK */, SOCK_RAW, 0);
	struct {
		uint32_t len;
		uint16_t type, flags;
		uint32_t seq, pid;
		unsigned char ifi[16];
	} dump = {.len = sizeof dump, .type = 18 /* RTM_GETLINK */, .flags = 0x301 /* NLM_F_REQUEST|NLM_F_DUMP */};
	send(nl, &dump, sizeof dump, 0);
}

/* FUZZ_FILL=DIR (tools/fuzz-soak.sh): the children working in DIR, one
 * of the DIRS, sometimes write a file until the disk is full or the file
 * is 32 MiB, and keep it, so that the rest of their calls meet a full
 * file system (its out-of-space paths) and not only the odd ENOSPC. */
static int fill_here;

/* writes fd 64 KiB at a time until the disk is full or 32 MiB went */
static void fill(int fd)
{
	for (int i = 0; i < 512; i++)
		if (syscall(SYS_write, fd, scratch, sizeof scratch) <= 0)
			break;
}

/* v is what a sequence means to pass; one time in eight it is random */
static long maybe(long v)
{
	return next() % 8 ? v : arg();
}

static const char *name(void)
{
	return names[next() % NNAMES];
}

/* a socket option the kernel knows, at its level, most of the time */
static void sockopt(int fd)
{
	static const int opts[][2] = {
		{SOL_SOCKET, SO_REUSEADDR}, {SOL_SOCKET, SO_RCVBUF}, {SOL_SOCKET, SO_SNDBUF},
		{SOL_SOCKET, SO_KEEPALIVE}, {SOL_SOCKET, SO_LINGER}, {SOL_SOCKET, SO_RCVTIMEO},
		{SOL_SOCKET, SO_SNDTIMEO}, {SOL_SOCKET, SO_PASSCRED}, {SOL_SOCKET, SO_RCVLOWAT},
		{SOL_SOCKET, SO_BROADCAST}, {SOL_SOCKET, SO_REUSEPORT}, {SOL_SOCKET, SO_ERROR},
		{IPPROTO_TCP, TCP_NODELAY}, {IPPROTO_TCP, TCP_CORK}, {IPPROTO_TCP, TCP_MAXSEG},
		{IPPROTO_TCP, TCP_KEEPIDLE}, {IPPROTO_TCP, TCP_INFO}, {IPPROTO_TCP, TCP_USER_TIMEOUT},
		{IPPROTO_IP, IP_TTL}, {IPPROTO_IP, IP_TOS}, {IPPROTO_IP, IP_RECVERR},
		{IPPROTO_IPV6, IPV6_V6ONLY}, {IPPROTO_IPV6, IPV6_UNICAST_HOPS},
	};
	const int *o = opts[next() % (sizeof opts / sizeof *opts)];
	long len = (long)(next() % 3 ? sizeof(int) : next() % 300);
	*(int *)scratch = (int)(next() % 3 ? next() % 2 : next());
	if (next() % 2)
		syscall(SYS_setsockopt, fd, maybe(o[0]), maybe(o[1]), maybe((long)scratch), maybe(len));
	socklen_t *lp = (socklen_t *)(scratch + 4096);
	*lp = (socklen_t)len;
	syscall(SYS_getsockopt, fd, maybe(o[0]), maybe(o[1]), maybe((long)scratch), maybe((long)lp));
}

/* a message of up to three pieces from scratch, with a control message
 * (SCM_RIGHTS naming the child's descriptors, or SCM_CREDENTIALS) */
static void message(struct msghdr *m, struct iovec *iov, char *ctl, size_t ctlsize)
{
	int n = 1 + (int)(next() % 3);
	for (int i = 0; i < n; i++)
		iov[i] = (struct iovec){scratch + next() % 32768, next() % 5000};
	*m = (struct msghdr){.msg_iov = iov, .msg_iovlen = (size_t)n};
	if (next() % 2 == 0)
		return;
	memset(ctl, 0, ctlsize);
	struct cmsghdr *c = (struct cmsghdr *)ctl;
	c->cmsg_level = SOL_SOCKET;
	if (next() % 3) {
		int k = 1 + (int)(next() % 4);
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(k * sizeof(int));
		for (int i = 0; i < k; i++)
			((int *)CMSG_DATA(c))[i] = nmyfds ? myfds[next() % nmyfds] : (int)(next() % 64);
	} else {
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
		*(struct ucred *)CMSG_DATA(c) = (struct ucred){getpid(), (uid_t)(next() % 2 ? getuid() : 0), getgid()};
	}
	m->msg_control = ctl;
	m->msg_controllen = next() % 8 ? c->cmsg_len : (size_t)(next() % ctlsize);
}

/* flags for a send or receive that should not block the child */
static long msgflags(void)
{
	static const long f[] = {MSG_PEEK, MSG_TRUNC, MSG_WAITALL, MSG_OOB, MSG_CMSG_CLOEXEC, MSG_NOSIGNAL, MSG_MORE, MSG_EOR};
	long v = MSG_DONTWAIT;
	for (int i = (int)(next() % 3); i > 0; i--)
		v |= f[next() % (sizeof f / sizeof *f)];
	return maybe(v);
}

static void sendrecv(int a, int b)
{
	struct msghdr m;
	struct iovec iov[3];
	char ctl[CMSG_SPACE(4 * sizeof(int)) + 64];
	message(&m, iov, ctl, sizeof ctl);
	syscall(SYS_sendmsg, maybe(a), maybe((long)&m), msgflags());
	syscall(SYS_sendto, a, scratch, maybe((long)(next() % 9000)), msgflags(), 0, 0);
	message(&m, iov, ctl, sizeof ctl);
	m.msg_control = ctl, m.msg_controllen = next() % sizeof ctl;
	m.msg_name = next() % 2 ? scratch + 8192 : NULL, m.msg_namelen = (socklen_t)(next() % 200);
	long mp = maybe((long)&m);
	if (syscall(SYS_recvmsg, maybe(b), mp, msgflags()) >= 0 && mp == (long)&m && m.msg_control == ctl &&
	    m.msg_controllen <= sizeof ctl) {
		/* descriptors received are the child's to use or close */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (int *fd = (int *)CMSG_DATA(c);
			     (char *)(fd + 1) <= (char *)c + c->cmsg_len && (char *)(fd + 1) <= ctl + sizeof ctl; fd++) {
				if (next() % 2)
					keep_fd(*fd);
				else
					close(*fd);
			}
		}
	}
	socklen_t alen = (socklen_t)(next() % 200);
	syscall(SYS_recvfrom, b, scratch, maybe((long)(next() % 9000)), msgflags(), maybe((long)(scratch + 8192)),
		maybe((long)&alen));
	if (next() % 4 == 0) {
		struct mmsghdr mm[2];
		for (int i = 0; i < 2; i++) {
			message(&mm[i].msg_hdr, iov, ctl, sizeof ctl);
			mm[i].msg_len = 0;
		}
		syscall(next() % 2 ? SYS_sendmmsg : SYS_recvmmsg, maybe(next() % 2 ? a : b), mm, maybe(2), msgflags(), 0);
	}
}

static void unix_pair(void)
{
	static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};
	int sv[2];
	if (syscall(SYS_socketpair, AF_UNIX, maybe(types[next() % 3] | SOCK_NONBLOCK), 0, sv) != 0)
		return;
	if (next() % 2)
		syscall(SYS_setsockopt, sv[1], SOL_SOCKET, SO_PASSCRED, &(int){1}, sizeof(int));
	for (int i = (int)(next() % 4); i >= 0; i--) {
		int d = (int)(next() % 2);
		sendrecv(sv[d], sv[!d]);
		if (next() % 4 == 0)
			sockopt(sv[next() % 2]);
	}
	syscall(SYS_shutdown, sv[next() % 2], maybe((long)(next() % 3)));
	sendrecv(sv[0], sv[1]);
	/* sometimes one end stays, with messages (and descriptors) queued */
	syscall(SYS_close, sv[0]);
	if (next() % 2)
		keep_fd(sv[1]);
	else
		syscall(SYS_close, sv[1]);
}

static void inet_life(void)
{
	int six = (int)(next() % 2), stream = (int)(next() % 3 != 0);
	long fd = syscall(SYS_socket, six ? AF_INET6 : AF_INET, maybe((stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK), 0);
	if (fd < 0)
		return;
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	void *addr = six ? (void *)&a6 : (void *)&a4;
	socklen_t alen = six ? sizeof a6 : sizeof a4;
	for (int i = (int)(next() % 3); i >= 0; i--)
		sockopt((int)fd);
	if (next() % 2)
		syscall(SYS_bind, fd, maybe((long)addr), maybe(alen));
	if (stream && next() % 3 == 0) {
		/* a listener: the child connects to itself and accepts */
		socklen_t l = alen;
		syscall(SYS_listen, fd, maybe((long)(next() % 8)));
		syscall(SYS_getsockname, fd, addr, &l);
		long c = syscall(SYS_socket, six ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		syscall(SYS_connect, c, maybe((long)addr), alen);
		long s = syscall(SYS_accept4, fd, maybe(0), maybe(0), maybe(SOCK_NONBLOCK));
		if (s >= 0) {
			sendrecv((int)c, (int)s);
			sendrecv((int)s, (int)c);
			syscall(SYS_getpeername, s, scratch + 8192, &l);
			keep_fd((int)s);
		}
		keep_fd((int)c);
		syscall(SYS_close, fd);
		return;
	}
	/* a client of the child's listeners, or UDP to itself */
	if (stream)
		syscall(SYS_connect, fd, maybe((long)(six ? (void *)&lo6 : (void *)&lo4)), alen);
	else {
		socklen_t l = alen;
		syscall(SYS_getsockname, fd, addr, &l);
		syscall(SYS_connect, fd, maybe((long)addr), maybe(alen));
	}
	sendrecv((int)fd, (int)fd);
	if (next() % 2)
		syscall(SYS_shutdown, fd, maybe((long)(next() % 3)));
	if (next() % 2)
		keep_fd((int)fd);
	else
		syscall(SYS_close, fd);
}

static void unix_named(void)
{
	static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET};
	int type = types[next() % 3];
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	/* a path in the working directory, or an abstract name */
	if (next() % 2)
		snprintf(a.sun_path, sizeof a.sun_path, "s%d", (int)(next() % 3));
	else
		snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "fz%d", (int)(next() % 3));
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + (a.sun_path[0] == 0)));
	long s = syscall(SYS_socket, AF_UNIX, maybe(type | SOCK_NONBLOCK), 0);
	if (s < 0)
		return;
	if (a.sun_path[0])
		syscall(SYS_unlinkat, AT_FDCWD, a.sun_path, 0);
	syscall(SYS_bind, s, maybe((long)&a), maybe(alen));
	if (type != SOCK_DGRAM)
		syscall(SYS_listen, s, maybe((long)(next() % 4)));
	long c = syscall(SYS_socket, AF_UNIX, type | SOCK_NONBLOCK, 0);
	syscall(SYS_connect, c, maybe((long)&a), maybe(alen));
	if (type == SOCK_DGRAM) {
		sendrecv((int)c, (int)s);
	} else {
		long t = syscall(SYS_accept4, s, maybe(0), maybe(0), maybe(SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (t >= 0) {
			sendrecv((int)c, (int)t);
			sendrecv((int)t, (int)c);
			keep_fd((int)t);
		}
	}
	keep_fd((int)c);
	if (next() % 2)
		keep_fd((int)s);
	else
		syscall(SYS_close, s);
}

/* one sequence of related calls, the kind real programs make */
static void sequence(void)
{
	long fd, fd2, n = (long)(next() % 20000);
	void *p;
	int pfd[2];
	switch (next() % 11) {
	case 8: /* a unix pair passing descriptors and credentials */
		unix_pair();
		break;
	case 9: /* an inet socket's life: options, bind, listen or connect, data, shutdown */
		inet_life();
		break;
	case 10: /* a named unix socket: bind, listen, connect, accept */
		unix_named();
		break;
	case 0: /* a file's life: create, write, read back, grow, shrink, sync */
		fd = syscall(SYS_openat, AT_FDCWD, maybe((long)name()), maybe(O_CREAT | O_RDWR | (next() % 2 ? O_APPEND : 0)),
			     0644);
		keep_fd((int)fd);
		syscall(SYS_write, fd, scratch, maybe(n));
		syscall(SYS_pwrite64, fd, scratch, maybe(n % 5000), maybe((long)(next() % (4 << 20))));
		syscall(SYS_pread64, fd, scratch, maybe(n), maybe((long)(next() % 8192)));
		syscall(SYS_ftruncate, fd, maybe((long)(next() % (1 << 20))));
		syscall(SYS_fallocate, fd, maybe((long)(next() % 2 ? 0 : 3 /* PUNCH_HOLE|KEEP_SIZE */)),
			maybe((long)(next() % 65536)), maybe((long)(next() % 65536 + 1)));
		syscall(next() % 2 ? SYS_fsync : SYS_fdatasync, fd);
		if (fill_here && next() % 8 == 0)
			fill((int)fd);
		if (next() % 2)
			syscall(SYS_close, fd);
		break;
	case 1: /* names: rename over, link, symlink, unlink, directories */
		syscall(SYS_renameat2, AT_FDCWD, maybe((long)name()), AT_FDCWD, maybe((long)name()),
			maybe((long)(next() % 8)));
		syscall(SYS_linkat, AT_FDCWD, maybe((long)name()), AT_FDCWD, maybe((long)name()), 0);
		syscall(SYS_symlinkat, maybe((long)name()), AT_FDCWD, maybe((long)name()));
		syscall(SYS_mkdirat, AT_FDCWD, maybe((long)name()), 0755);
		syscall(SYS_unlinkat, AT_FDCWD, maybe((long)name()), maybe((long)(next() % 2 ? 0 : AT_REMOVEDIR)));
		break;
	case 2: /* a shared mapping of a file, written and synced */
		fd = syscall(SYS_openat, AT_FDCWD, maybe((long)name()), O_CREAT | O_RDWR, 0644);
		keep_fd((int)fd);
		syscall(SYS_ftruncate, fd, 16384);
		p = (void *)syscall(SYS_mmap, 0, maybe(16384), PROT_READ | PROT_WRITE, maybe(MAP_SHARED), fd, maybe(0));
		if (p != MAP_FAILED && (unsigned long)p < 0x800000000000UL && next() % 4) {
			((volatile char *)p)[next() % 16384] = 1;
			syscall(SYS_msync, p, 16384, maybe(MS_SYNC));
			syscall(SYS_mprotect, p, 4096, maybe(PROT_READ));
			syscall(SYS_ftruncate, fd, maybe(4096)); /* the file shrinks under its mapping */
			syscall(SYS_munmap, p, 16384);
		}
		break;
	case 3: /* anonymous memory reshaped */
		p = (void *)syscall(SYS_mmap, 0, maybe(65536), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED && (unsigned long)p < 0x800000000000UL) {
			((volatile char *)p)[next() % 65536] = 1;
			syscall(SYS_madvise, p, maybe(8192), maybe((long)(next() % 24)));
			p = (void *)syscall(SYS_mremap, p, 65536, maybe(131072), maybe(1 /* MREMAP_MAYMOVE */), 0);
			if (p != MAP_FAILED && (unsigned long)p < 0x800000000000UL)
				syscall(SYS_munmap, p, 131072);
		}
		break;
	case 4: /* pipes, splice and tee between them and files */
		if (syscall(SYS_pipe2, pfd, maybe(O_NONBLOCK)) == 0) {
			syscall(SYS_write, pfd[1], scratch, maybe(n % 65536));
			fd = syscall(SYS_openat, AT_FDCWD, maybe((long)name()), O_CREAT | O_RDWR, 0644);
			syscall(SYS_splice, pfd[0], 0, fd, 0, maybe(n), maybe(1 /* SPLICE_F_MOVE */));
			syscall(SYS_sendfile, pfd[1], fd, 0, maybe(n));
			syscall(SYS_tee, pfd[0], pfd[1], maybe(n), maybe(2 /* SPLICE_F_NONBLOCK */));
			syscall(SYS_close, fd);
			keep_fd(pfd[0]);
			keep_fd(pfd[1]);
		}
		break;
	case 5: /* epoll over the child's descriptors */
		fd = syscall(SYS_epoll_create1, maybe(0));
		for (int i = 0; i < 4 && nmyfds; i++) {
			uint32_t ev[3] = {(uint32_t)next(), 0, 0};
			syscall(SYS_epoll_ctl, fd, maybe(1 /* ADD */), maybe(myfds[next() % nmyfds]), ev);
		}
		syscall(SYS_epoll_wait, fd, scratch, maybe(8), 0);
		keep_fd((int)fd);
		break;
	case 6: /* a directory read while it changes */
		fd = syscall(SYS_openat, AT_FDCWD, maybe((long)(next() % 2 ? "." : "d")), O_RDONLY | O_DIRECTORY);
		syscall(SYS_getdents64, fd, scratch, maybe(n % 4096));
		syscall(SYS_lseek, fd, maybe(0), maybe(0));
		syscall(SYS_getdents64, fd, scratch, maybe(sizeof scratch));
		syscall(SYS_close, fd);
		break;
	default: /* attributes: mode, times, size by path and descriptor, xattrs */
		syscall(SYS_fchmodat, AT_FDCWD, maybe((long)name()), maybe((long)(next() % 07777)), 0);
		syscall(SYS_utimensat, AT_FDCWD, maybe((long)name()), maybe(0), maybe(0));
		syscall(SYS_truncate, maybe((long)name()), maybe((long)(next() % 100000)));
		syscall(SYS_statx, AT_FDCWD, maybe((long)name()), maybe(0), maybe(0xfff), scratch);
		fd2 = nmyfds ? myfds[next() % nmyfds] : -1;
		syscall(SYS_fsetxattr, fd2, maybe((long)"user.fz"), scratch, maybe(n % 300), maybe(0));
		syscall(SYS_fgetxattr, fd2, maybe((long)"user.fz"), scratch, maybe(n % 300));
		break;
	}
}

/* the working directories: BASE/fz/cN for child N, BASE one of dirs.
 * As root a child works chrooted in BASE/fz: its names (".." among them)
 * and anything its random calls make of them stay inside, so a random
 * chmod of ".." cannot close /tmp to the tests that run after it. */
static const char *dirs = "/tmp";

static void jaildir(const char *base, char *out, size_t size)
{
	snprintf(out, size, "%s/fz", base);
}

static void workdir(const char *base, int idx, char *out, size_t size)
{
	snprintf(out, size, "%s/fz/c%d", base, idx);
}

/* picks this child's base directory from dirs */
static const char *base_of(int idx)
{
	static char buf[256];
	int n = 1;
	for (const char *c = dirs; *c; c++)
		n += *c == ':';
	int want = idx % n;
	const char *start = dirs;
	for (int i = 0; i < want; i++)
		start = strchr(start, ':') + 1;
	size_t len = strcspn(start, ":");
	if (len >= sizeof buf)
		len = sizeof buf - 1;
	memcpy(buf, start, len);
	buf[len] = 0;
	return buf;
}

/* makes each child's directory, world-writable so the unprivileged
 * phase can work in it too */
static void make_workdirs(int procs)
{
	for (int p = 0; p < procs; p++) {
		char d[300];
		jaildir(base_of(p), d, sizeof d);
		mkdir(d, 0777);
		chmod(d, 0777);
		workdir(base_of(p), p, d, sizeof d);
		mkdir(d, 0777);
		chmod(d, 0777);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	chmod(path, 0700); /* a random chmod may have locked a directory */
	remove(path);
	return 0;
}

static void remove_workdirs(int procs)
{
	for (int p = 0; p < procs; p++) {
		char d[300];
		jaildir(base_of(p), d, sizeof d);
		nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

/* enters the child's directory and makes a few files there for names[] */
static void enter_workdir(int idx)
{
	char d[300];
	if (!as_user) {
		jaildir(base_of(idx), d, sizeof d);
		if (chroot(d) != 0)
			_exit(5); /* never fuzz as root outside the jail */
		snprintf(d, sizeof d, "/c%d", idx);
	} else {
		workdir(base_of(idx), idx, d, sizeof d);
	}
	if (chdir(d) != 0)
		_exit(5);
	int fd = open("a", O_CREAT | O_RDWR, 0666);
	if (fd >= 0) {
		write(fd, "fuzz\n", 5);
		keep_fd(fd);
	}
	mkdir("d", 0777);
	mkdir("d/e", 0777);
	symlink("a", "l");
	keep_fd(open(".", O_RDONLY | O_DIRECTORY));
}

static void child(long calls, uint64_t seed, int idx)
{
	rng = seed | 1;
	signal(SIGALRM, SIG_DFL); /* not the parent's watchdog handler */
	alarm(3);
	/* Stay out of the console: no terminal output from random writes. */
	close(0);
	close(1);
	close(2);
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGALRM)
			signal(s, SIG_IGN);
	sockets();
	for (int fd = 3; fd < 16; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			keep_fd(fd);
	const char *fillenv = getenv("FUZZ_FILL");
	fill_here = fillenv && strcmp(fillenv, base_of(idx)) == 0;
	enter_workdir(idx);
	if (fill_here && next() % 2) {
		/* half of them start on a full disk */
		int fd = open("full", O_CREAT | O_WRONLY | O_APPEND, 0644);
		fill(fd);
		keep_fd(fd);
	}
	for (long i = 0; i < calls; i++) {
		if (next() % 8 == 0) {
			sequence();
			continue;
		}
		long nr = (long)(next() % 335);
		if (skipped(nr))
			continue;
		syscall(nr, arg(), arg(), arg(), arg(), arg(), arg());
	}
	if (as_user) {
		uid_t r, e, s;
		gid_t gr, ge, gs;
		if (syscall(SYS_getresuid, &r, &e, &s) || syscall(SYS_getresgid, &gr, &ge, &gs))
			_exit(0); /* the fuzzer may have unmapped its own stack: not a verdict */
		if (r != 65534 || e != 65534 || s != 65534 || gr != 65534 || ge != 65534 || gs != 65534)
			_exit(3);
	}
	_exit(0);
}

static volatile sig_atomic_t woke;
static void on_alarm(int s) { (void)s; woke = 1; }

static void show(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	char b[4096];
	for (ssize_t n; (n = read(fd, b, sizeof b)) > 0;)
		fwrite(b, 1, n, stdout);
	close(fd);
	fflush(stdout);
}

/* reaps n children. Each ends itself after 3 s by SIGALRM, unless its
 * random calls blocked SIGALRM (a ppoll or pselect mask, say) while it
 * sleeps: so a child alive after 30 s is sent SIGKILL, and only one that
 * SIGKILL cannot end within 15 s more is a hang in the kernel: what the
 * kernel says of it is printed. Returns the number of hangs; *finished,
 * *crashed and *gained count the others (exit 3: gained IDs). */
static int reap(pid_t *pids, int n, int *finished, int *crashed, int *gained)
{
	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	woke = 0;
	alarm(30);
	int left = n, hangs = 0, killed = 0;
	while (left > 0) {
		int st;
		pid_t pid = waitpid(-1, &st, 0);
		if (pid < 0 && errno == EINTR && woke) {
			woke = 0;
			if (!killed) {
				for (int i = 0; i < n; i++)
					if (pids[i])
						kill(pids[i], SIGKILL);
				killed = 1;
				alarm(15);
				continue;
			}
			for (int i = 0; i < n; i++) {
				if (pids[i] == 0)
					continue;
				char path[64];
				printf("fuzz: child %d hangs: SIGKILL did not end it\n", pids[i]);
				snprintf(path, sizeof path, "/proc/%d/status", pids[i]);
				show(path);
				snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
				show(path);
				hangs++;
			}
			show("/proc/shortbread/goroutines");
			break;
		}
		if (pid < 0)
			break;
		for (int i = 0; i < n; i++)
			if (pids[i] == pid)
				pids[i] = 0;
		left--;
		if (WIFSIGNALED(st))
			(*crashed)++;
		else if (WEXITSTATUS(st) == 3)
			(*gained)++;
		else
			(*finished)++;
	}
	alarm(0);
	return hangs;
}

static uint32_t checksum(const char *path, struct stat *st)
{
	uint32_t h = 2166136261u;
	memset(st, 0, sizeof *st);
	if (lstat(path, st))
		return 0;
	/* O_NONBLOCK: a FIFO put in a file's place must not block the
	 * parent (the mode in st already tells it changed). */
	if (S_ISFIFO(st->st_mode))
		printf("fuzz: %s is a FIFO\n", path);
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return 1;
	unsigned char b[4096];
	for (ssize_t n; (n = read(fd, b, sizeof b)) > 0;)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ b[i]) * 16777619u;
	close(fd);
	return h;
}

static void put_file(const char *path, mode_t mode, const char *data)
{
	unlink(path);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd >= 0) {
		write(fd, data, strlen(data));
		fchmod(fd, mode);
		close(fd);
	}
}

/* runs the children as nobody; returns the number of integrity failures */
static int user_phase(int procs, long calls, uint64_t seed)
{
	make_workdirs(procs); /* the root phase's random chmods may have closed them */
	/* Root's children may have made anything of these names (a FIFO
	 * /tmp/fz_dir, directories for files: seen in the soak): start
	 * from nothing. */
	static const char *const fresh[] = {"/tmp/fz_root644", "/tmp/fz_root600", "/tmp/fz_suid", "/tmp/fz_dir"};
	for (unsigned i = 0; i < sizeof fresh / sizeof *fresh; i++)
		nftw(fresh[i], rm_one, 16, FTW_DEPTH | FTW_PHYS);
	mkdir("/tmp/fz_dir", 0755);
	chmod("/tmp/fz_dir", 0755);
	put_file("/tmp/fz_root644", 0644, "root's file\n");
	put_file("/tmp/fz_root600", 0600, "root's secret\n");
	put_file("/tmp/fz_suid", 04755, "#!/bin/sh\nid\n");
	put_file("/tmp/fz_dir/f", 0644, "in a 0755 dir\n");
	/* O_NONBLOCK, and each name reported if it is not what root made:
	 * the fuzz soak once saw this parent block for minutes in an
	 * open(O_RDONLY) of what had become a FIFO. */
	fds[0] = open("/tmp/fz_root644", O_RDONLY | O_NONBLOCK);
	fds[1] = open("/tmp/fz_suid", O_RDONLY | O_NONBLOCK);
	fds[2] = open("/tmp/fz_root644", O_PATH);
	fds[3] = open("/tmp/fz_dir", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	fds[4] = open("/bin/busybox", O_RDONLY | O_NONBLOCK);
	for (int i = 0; i < 5; i++) {
		struct stat fs;
		if (fds[i] < 0 || fstat(fds[i], &fs) != 0 || !(S_ISREG(fs.st_mode) || S_ISDIR(fs.st_mode)))
			printf("fuzz-user: root's file %d is missing or not a file (fd %d, mode %o)\n", i, fds[i],
			       fds[i] < 0 ? 0 : fs.st_mode);
	}
	fds[5] = open("/tmp/fz_root600", O_PATH);
	struct stat before[NPATHS], after;
	uint32_t sum[NPATHS];
	for (unsigned i = 0; i < NPATHS; i++)
		sum[i] = checksum(paths[i], &before[i]);
	int bad = 0, crashed = 0, finished = 0, gained = 0;
	pid_t pids[64];
	procs = procs > 64 ? 64 : procs;
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid == 0) {
			as_user = 1;
			if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(4);
			child(calls, seed + (uint64_t)p * 0x9e3779b97f4a7c15ULL, p);
		}
		pids[p] = pid < 0 ? 0 : pid;
	}
	bad += reap(pids, procs, &finished, &crashed, &gained);
	if (gained)
		printf("fuzz-user: %d children gained IDs\n", gained);
	bad += gained;
	for (unsigned i = 0; i < NPATHS; i++) {
		if (i == 6 || i == 7) /* /tmp changes under everyone; /proc/1 is generated */
			continue;
		uint32_t h = checksum(paths[i], &after);
		if (h != sum[i] || after.st_mode != before[i].st_mode || after.st_uid != before[i].st_uid ||
		    after.st_gid != before[i].st_gid) {
			printf("fuzz-user: %s changed (mode %o -> %o, uid %d -> %d, sum %08x -> %08x)\n", paths[i],
			       before[i].st_mode, after.st_mode, before[i].st_uid, after.st_uid, sum[i], h);
			bad++;
		}
	}
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	printf("fuzz-user: %d processes x %ld calls as uid 65534: %d finished, %d ended by signals, %d hangs or integrity failures\n",
	       procs, calls, finished, crashed, bad);
	unlink("/tmp/fz_dir/f");
	rmdir("/tmp/fz_dir");
	unlink("/tmp/fz_root644");
	unlink("/tmp/fz_root600");
	unlink("/tmp/fz_suid");
	return bad;
}

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 4;
	long calls = argc > 2 ? atol(argv[2]) : 3000;
	uint64_t seed = argc > 3 ? strtoull(argv[3], 0, 0) : 0x5eed;
	if (argc > 4)
		dirs = argv[4];
	int crashed = 0, finished = 0, gained = 0;
	pid_t pids[64];
	procs = procs > 64 ? 64 : procs;
	make_workdirs(procs);
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid == 0)
			child(calls, seed + (uint64_t)p * 0x9e3779b97f4a7c15ULL, p);
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		pids[p] = pid;
	}
	int hangs = reap(pids, procs, &finished, &crashed, &gained);
	printf("fuzz: %d processes x %ld calls: %d finished, %d ended by signals, %d hung\n", procs, calls, finished + gained,
	       crashed, hangs);
	if (hangs)
		return 1;
	if (geteuid() == 0 && user_phase(procs, calls, seed ^ 0xabad1dea) != 0)
		return 1;
	if (!getenv("FUZZ_KEEP")) /* kept: the host checks the file system they are on */
		remove_workdirs(procs);
	return 0;
}
