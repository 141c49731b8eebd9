/*
 * t_efile: the error table of the file calls (issue 22's audit, files).
 * Each check is one condition that the call's Linux man page documents,
 * made to happen, with the errno Linux returns; where Linux tests one
 * condition before another (EINVAL of an argument before the path is
 * looked up, EBADF before EINVAL, ...), a check gives both at once and
 * pins which one wins. Conditions that need something a test guest lacks
 * (a full disk, quotas, a device in use) are listed in the support notes
 * of kernel/proc/support.go instead. t_file, t_badinput, t_at, t_falloc
 * and t_errors hold the conditions checked before this audit; this
 * program does not repeat them.
 *
 * Runs as root; the permission conditions run in a child dropped to
 * uid/gid 65534 (probe.h). A tmpfs mounted on "m" gives a second mount
 * (EXDEV, EBUSY), and, remounted read-only, EROFS.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ftw.h>
#include <time.h>

#include "probe.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif
#ifndef AT_EACCESS
#define AT_EACCESS 0x200
#endif
#ifndef SYS_faccessat2
#define SYS_faccessat2 439
#endif
#ifndef STATX__RESERVED
#define STATX__RESERVED 0x80000000u
#endif
#ifndef AT_STATX_FORCE_SYNC
#define AT_STATX_FORCE_SYNC 0x2000
#define AT_STATX_DONT_SYNC 0x4000
#endif

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static void touch(const char *path, mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
	if (fd >= 0) {
		if (write(fd, "data", 4) != 4)
			printf("# write %s failed\n", path);
		close(fd);
	}
	chmod(path, mode);
}

static void on_alarm(int s) { (void)s; }

/* open/openat/creat */
static void test_open(void)
{
	char *bad = unmapped();
	CHECK_ERR("open.excl_on_dangling_symlink", (symlink("nowhere", "dangle"), open("dangle", O_CREAT | O_EXCL | O_WRONLY, 0600)), EEXIST);
	CHECK_ERR("open.excl_does_not_follow", access("nowhere", F_OK), ENOENT);
	CHECK_ERR("open.nofollow_symlink", (symlink("file", "sym"), open("sym", O_RDONLY | O_NOFOLLOW)), ELOOP);
	int fd = open("sym", O_PATH | O_NOFOLLOW);
	CHECK_SYS("open.nofollow_opath_ok", fd);
	close(fd);
	CHECK_ERR("open.creat_dir_missing", open("nodir/x", O_CREAT | O_WRONLY, 0600), ENOENT);
	CHECK_ERR("open.creat_trailing_slash", open("newfile/", O_CREAT | O_WRONLY, 0600), EISDIR);
	CHECK_ERR("open.trailing_slash_on_file", open("file/", O_RDONLY), ENOTDIR);
	CHECK_ERR("open.directory_creat_excl_existing_dir", open("d", O_CREAT | O_EXCL | O_RDONLY, 0600), EEXIST);
	CHECK_ERR("open.creat_on_dir", open("d", O_CREAT | O_WRONLY, 0600), EISDIR);
	CHECK_ERR("open.tmpfile_rdonly", open("d", O_TMPFILE | O_RDONLY, 0600), EINVAL);
	CHECK_ERR("open.tmpfile_on_file", open("file", O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	CHECK_ERR("open.tmpfile_missing", open("nodir", O_TMPFILE | O_RDWR, 0600), ENOENT);
	CHECK_ERR("open.tmpfile_through_file", open("file/x", O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	CHECK_ERR("openat.efault_before_ebadf", syscall(SYS_openat, 9999, bad, O_RDONLY), EFAULT);
	CHECK_ERR("openat.ebadf_relative", syscall(SYS_openat, 9999, "file", O_RDONLY), EBADF);
	CHECK_ERR("creat.on_dir", creat("d", 0600), EISDIR);

	/* FIFOs: no reader for a non-blocking writer; interrupted by a signal */
	CHECK_SYS("open.mkfifo", mkfifo("fifo", 0600));
	CHECK_ERR("open.fifo_wronly_nonblock_no_reader", open("fifo", O_WRONLY | O_NONBLOCK), ENXIO);
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART */
	alarm(1);
	CHECK_ERR("open.fifo_blocked_eintr", open("fifo", O_RDONLY), EINTR);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);

	/* a socket's name is not a file to open */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX, .sun_path = "sock" };
	CHECK_SYS("open.bind_socket", bind(s, (struct sockaddr *)&sun, sizeof sun));
	CHECK_ERR("open.socket_node", open("sock", O_RDONLY), ENXIO);
	close(s);

	/* a device number no driver has */
	CHECK_SYS("open.mknod_nodriver", mknod("nodev", S_IFCHR | 0600, makedev(240, 77)));
	CHECK_ERR("open.char_device_no_driver", open("nodev", O_RDONLY), ENXIO);
	CHECK_SYS("open.opath_no_driver_ok", fd = open("nodev", O_PATH));
	close(fd);

	/* RLIMIT_NOFILE */
	struct rlimit rl, low;
	getrlimit(RLIMIT_NOFILE, &rl);
	int top = dup(0);
	low = rl;
	low.rlim_cur = top + 1;
	close(top);
	setrlimit(RLIMIT_NOFILE, &low);
	fd = open("file", O_RDONLY);
	CHECK_SYS("open.last_below_limit", fd);
	CHECK_ERR("open.emfile", open("file", O_RDONLY), EMFILE);
	CHECK_ERR("open.emfile_before_enoent", open("missing", O_RDONLY), EMFILE);
	CHECK_ERR("dup.emfile", dup(0), EMFILE);
	CHECK_ERR("fcntl.dupfd_emfile", fcntl(0, F_DUPFD, 0), EMFILE);
	CHECK_ERR("dup2.newfd_at_limit", dup2(0, (int)low.rlim_cur), EBADF);
	CHECK_ERR("fcntl.dupfd_at_limit", fcntl(0, F_DUPFD, (int)low.rlim_cur), EINVAL);
	close(fd);
	setrlimit(RLIMIT_NOFILE, &rl);
}

/* read/write/pread/pwrite/readv/writev/lseek */
static void test_rw(void)
{
	char buf[64];
	int fd = open("file", O_RDWR), dfd = open("d", O_RDONLY | O_DIRECTORY), p[2];
	CHECK_ERR("read.eisdir", read(dfd, buf, sizeof buf), EISDIR);
	CHECK_ERR("pread.eisdir", pread(dfd, buf, sizeof buf, 0), EISDIR);
	int ep = epoll_create1(0);
	CHECK_ERR("read.epoll_einval", read(ep, buf, sizeof buf), EINVAL);
	CHECK_ERR("write.epoll_einval", write(ep, buf, 1), EINVAL);
	close(ep);
	CHECK_SYS("pipe", pipe2(p, O_NONBLOCK));
	CHECK_ERR("pread.pipe_espipe", pread(p[0], buf, 1, 0), ESPIPE);
	CHECK_ERR("pwrite.pipe_espipe", pwrite(p[1], buf, 1, 0), ESPIPE);
	CHECK_ERR("lseek.pipe_espipe", lseek(p[0], 0, SEEK_CUR), ESPIPE);
	CHECK_ERR("pread.espipe_on_write_end", pread(p[1], buf, 1, 0), ESPIPE);
	CHECK_ERR("pread.negative_offset", pread(fd, buf, 1, -1), EINVAL);
	CHECK_ERR("pwrite.negative_offset", pwrite(fd, buf, 1, -1), EINVAL);
	CHECK_ERR("pread.einval_before_ebadf", pread(-1, buf, 1, -1), EINVAL);
	CHECK_ERR("pread.einval_before_espipe", pread(p[0], buf, 1, -1), EINVAL);
	CHECK_ERR("pwrite.end_overflows", pwrite(fd, "x", 1, LLONG_MAX), EINVAL);
	CHECK_EQ("pwrite.zero_at_max", pwrite(fd, "x", 0, LLONG_MAX), 0);
	/* a full non-blocking pipe */
	static char chunk[65536];
	while (write(p[1], chunk, sizeof chunk) > 0)
		;
	CHECK_ERR("write.pipe_full_eagain", write(p[1], "x", 1), EAGAIN);
	close(p[0]);
	close(p[1]);

	struct iovec iov[2] = { { buf, 8 }, { buf, 8 } };
	CHECK_ERR("readv.negative_count", readv(fd, iov, -1), EINVAL);
	CHECK_ERR("writev.count_past_iov_max", writev(fd, iov, 1025), EINVAL);
	CHECK_EQ("writev.count_zero", writev(fd, iov, 0), 0);
	struct iovec neg[1] = { { buf, (size_t)-1 } };
	CHECK_ERR("readv.negative_len", readv(fd, neg, 1), EINVAL);
	CHECK_ERR("readv.ebadf_before_einval", readv(-1, iov, -1), EBADF);
	CHECK_ERR("preadv.negative_offset", preadv(fd, iov, 1, -1), EINVAL);
	CHECK_ERR("preadv2.ebadf_before_flags", syscall(SYS_preadv2, -1, iov, 1, 0, 0, 0x80000000u), EBADF);
	CHECK_ERR("pwritev2.einval_count_before_flags", syscall(SYS_pwritev2, fd, iov, -1, 0, 0, 0x80000000u), EINVAL);
	CHECK_ERR("preadv2.unknown_flag", syscall(SYS_preadv2, fd, iov, 1, 0, 0, 0x80000000u), EOPNOTSUPP);
	CHECK_ERR("pwritev2.unknown_flag", syscall(SYS_pwritev2, fd, iov, 1, 0, 0, 0x80000000u), EOPNOTSUPP);

	/* lseek */
	CHECK_ERR("lseek.data_past_eof", lseek(fd, 100, SEEK_DATA), ENXIO);
	CHECK_ERR("lseek.hole_past_eof", lseek(fd, 100, SEEK_HOLE), ENXIO);
	CHECK_ERR("lseek.data_negative", lseek(fd, -1, SEEK_DATA), ENXIO);
	CHECK_EQ("lseek.to_max", lseek(fd, LLONG_MAX, SEEK_SET), LLONG_MAX);
	CHECK_ERR("lseek.cur_overflow", lseek(fd, 1, SEEK_CUR), EINVAL);
	CHECK_ERR("lseek.end_negative", lseek(fd, -100, SEEK_END), EINVAL);
	CHECK_ERR("lseek.ebadf_before_einval", lseek(-1, 0, 99), EBADF);
	close(fd);
	close(dfd);

	/* memfd seals: EPERM for the sealed operation */
	int m = memfd_create("seal", MFD_ALLOW_SEALING);
	CHECK_EQ("write.memfd", write(m, "abcd", 4), 4);
	CHECK_SYS("fcntl.add_seals", fcntl(m, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW));
	CHECK_ERR("write.sealed_eperm", write(m, "x", 1), EPERM);
	CHECK_ERR("ftruncate.seal_shrink", ftruncate(m, 1), EPERM);
	CHECK_ERR("ftruncate.seal_grow", ftruncate(m, 100), EPERM);
	CHECK_SYS("ftruncate.sealed_same_size", ftruncate(m, 4));
	CHECK_SYS("fcntl.seal_seal", fcntl(m, F_ADD_SEALS, F_SEAL_SEAL));
	CHECK_ERR("fcntl.add_seals_after_seal", fcntl(m, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(m);
	CHECK_SYS("pipe.again", pipe(p));
	CHECK_ERR("fcntl.add_seals_pipe", fcntl(p[1], F_ADD_SEALS, F_SEAL_WRITE), EINVAL);
	CHECK_ERR("fcntl.get_seals_pipe", fcntl(p[1], F_GET_SEALS), EINVAL);
	close(p[0]);
	close(p[1]);
}

/* truncate/ftruncate */
static void test_truncate(void)
{
	char *bad = unmapped();
	CHECK_ERR("truncate.eisdir", truncate("d", 0), EISDIR);
	CHECK_ERR("truncate.negative", truncate("file", -1), EINVAL);
	CHECK_ERR("truncate.einval_before_enoent", truncate("missing", -1), EINVAL);
	CHECK_ERR("truncate.enoent", truncate("missing", 0), ENOENT);
	CHECK_ERR("truncate.enotdir", truncate("file/x", 0), ENOTDIR);
	CHECK_ERR("truncate.efault", syscall(SYS_truncate, bad, 0), EFAULT);
	CHECK_ERR("truncate.eloop", (symlink("loop_a", "loop_b"), symlink("loop_b", "loop_a"), truncate("loop_a", 0)), ELOOP);
	CHECK_ERR("truncate.fifo", truncate("fifo", 0), EINVAL);
	int p[2];
	pipe(p);
	CHECK_ERR("ftruncate.pipe", ftruncate(p[1], 0), EINVAL);
	close(p[0]);
	close(p[1]);
	int dfd = open("d", O_RDONLY);
	CHECK_ERR("ftruncate.dir", ftruncate(dfd, 0), EINVAL);
	close(dfd);
	CHECK_ERR("ftruncate.ebadf", ftruncate(-1, 0), EBADF);
	CHECK_ERR("ftruncate.einval_before_ebadf", ftruncate(-1, -1), EINVAL);
	int op = open("file", O_PATH);
	CHECK_ERR("ftruncate.opath", ftruncate(op, 0), EBADF);
	close(op);
}

/* link/unlink/rename/mkdir/rmdir/mknod/symlink/readlink */
static void test_names(void)
{
	char *bad = unmapped();
	char buf[64];
	touch("x1", 0644);
	CHECK_ERR("link.enoent_old", link("missing", "n1"), ENOENT);
	CHECK_ERR("link.enoent_new_dir", link("x1", "nodir/n1"), ENOENT);
	CHECK_ERR("link.enotdir", link("file/x", "n1"), ENOTDIR);
	CHECK_ERR("link.efault", syscall(SYS_link, bad, "n1"), EFAULT);
	CHECK_ERR("link.exdev", link("x1", "m/n1"), EXDEV);
	CHECK_ERR("link.eexist_before_exdev", link("x1", "m/exists"), EEXIST);
	CHECK_ERR("linkat.bad_flags", linkat(AT_FDCWD, "x1", AT_FDCWD, "n1", 0x1), EINVAL);
	CHECK_ERR("linkat.ebadf", linkat(9999, "x1", AT_FDCWD, "n1", 0), EBADF);
	CHECK_ERR("linkat.follow_dangling", linkat(AT_FDCWD, "dangle", AT_FDCWD, "n1", AT_SYMLINK_FOLLOW), ENOENT);
	CHECK_SYS("linkat.nofollow_dangling_ok", linkat(AT_FDCWD, "dangle", AT_FDCWD, "n2", 0));
	CHECK_ERR("link.trailing_slash_old", link("x1/", "n3"), ENOTDIR);

	CHECK_ERR("unlink.enotdir", unlink("file/x"), ENOTDIR);
	CHECK_ERR("unlink.efault", syscall(SYS_unlink, bad), EFAULT);
	CHECK_ERR("unlink.trailing_slash", unlink("x1/"), ENOTDIR);
	CHECK_ERR("unlinkat.bad_flags", unlinkat(AT_FDCWD, "x1", 0x1), EINVAL);
	CHECK_ERR("unlinkat.removedir_file", unlinkat(AT_FDCWD, "x1", AT_REMOVEDIR), ENOTDIR);
	CHECK_ERR("unlinkat.dir_eisdir", unlinkat(AT_FDCWD, "d", 0), EISDIR);
	CHECK_ERR("unlinkat.ebadf", unlinkat(9999, "x1", 0), EBADF);
	CHECK_ERR("unlinkat.mount_point", unlinkat(AT_FDCWD, "m", AT_REMOVEDIR), EBUSY);
	CHECK_ERR("rmdir.mount_point", rmdir("m"), EBUSY);
	CHECK_ERR("rmdir.dotdot", rmdir("d/.."), ENOTEMPTY);
	CHECK_ERR("rmdir.file_trailing_dot", rmdir("d/."), EINVAL);
	CHECK_ERR("rmdir.efault", syscall(SYS_rmdir, bad), EFAULT);

	mkdir("r1", 0755);
	mkdir("r2", 0755);
	touch("r2/f", 0644);
	touch("x2", 0644);
	CHECK_ERR("rename.file_over_dir", rename("x2", "r1"), EISDIR);
	CHECK_ERR("rename.dir_over_file", rename("r1", "x2"), ENOTDIR);
	CHECK_ERR("rename.dot", rename(".", "x3"), EBUSY);
	CHECK_ERR("rename.to_dot", rename("x2", "."), EBUSY);
	CHECK_ERR("rename.dotdot_src", rename("r1/..", "x3"), EBUSY);
	CHECK_ERR("rename.exdev", rename("x2", "m/x2"), EXDEV);
	CHECK_ERR("rename.mount_point", rename("m", "m2"), EBUSY);
	CHECK_ERR("rename.enotdir_component", rename("file/x", "x3"), ENOTDIR);
	CHECK_ERR("rename.efault", syscall(SYS_rename, "x2", bad), EFAULT);
	CHECK_ERR("rename.new_dir_missing", rename("x2", "nodir/x"), ENOENT);
	CHECK_ERR("rename.file_trailing_slash", rename("x2", "x3/"), ENOTDIR);
	CHECK_SYS("rename.same_file", rename("x2", "x2"));
	CHECK_SYS("rename.hard_links_same_inode", (link("x2", "x2b"), rename("x2", "x2b")));
	CHECK_SYS("rename.both_still_there", access("x2", F_OK) == 0 && access("x2b", F_OK) == 0 ? 0 : -1);
	CHECK_ERR("renameat2.noreplace_exists", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "x1", RENAME_NOREPLACE), EEXIST);
	CHECK_ERR("renameat2.both_flags", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "x1", RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
	CHECK_ERR("renameat2.bad_flag", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "x1", 0x100), EINVAL);
	CHECK_ERR("renameat2.exchange_missing", syscall(SYS_renameat2, AT_FDCWD, "x2", AT_FDCWD, "missing", RENAME_EXCHANGE), ENOENT);
	CHECK_ERR("renameat2.exchange_dir_into_itself", syscall(SYS_renameat2, AT_FDCWD, "r2", AT_FDCWD, "r2/f", RENAME_EXCHANGE), EINVAL);
	CHECK_ERR("renameat2.ebadf", syscall(SYS_renameat2, 9999, "x2", AT_FDCWD, "x3", 0), EBADF);
	CHECK_ERR("rename.dir_into_descendant_over_file", rename("r2", "r2/f"), EINVAL);

	CHECK_ERR("mkdir.dot", mkdir(".", 0755), EEXIST);
	CHECK_ERR("mkdir.dangling_symlink", mkdir("dangle", 0755), EEXIST);
	CHECK_ERR("mkdir.efault", syscall(SYS_mkdir, bad, 0755), EFAULT);
	CHECK_ERR("mkdirat.ebadf", mkdirat(9999, "z", 0755), EBADF);
	int ffd = open("file", O_RDONLY);
	CHECK_ERR("mkdirat.enotdir_dirfd", mkdirat(ffd, "z", 0755), ENOTDIR);
	CHECK_ERR("readlinkat.empty_on_file", readlinkat(ffd, "", buf, sizeof buf), ENOENT);
	close(ffd);
	CHECK_ERR("mkdir.eloop", mkdir("loop_a/z", 0755), ELOOP);
	CHECK_ERR("mkdir.proc", mkdir("/proc/t_efile_dir", 0755), ENOENT);
	CHECK_ERR("symlink.proc", symlink("x", "/proc/t_efile_sym"), ENOENT);
	CHECK_ERR("open.creat_proc", open("/proc/t_efile_f", O_CREAT | O_WRONLY, 0600), ENOENT);
	CHECK_ERR("unlink.proc_eperm", unlink("/proc/self"), EPERM);
	CHECK_ERR("link.proc", link("x1", "/proc/t_efile_l"), ENOENT);

	CHECK_ERR("mknod.dir_eperm", mknod("n_dir", S_IFDIR | 0755, 0), EPERM);
	CHECK_ERR("mknod.symlink_type_einval", mknod("n_lnk", S_IFLNK | 0755, 0), EINVAL);
	CHECK_ERR("mknod.bad_type_einval", mknod("n_bad", 0170000 | 0755, 0), EINVAL);
	CHECK_ERR("mknod.exists", mknod("x1", S_IFIFO | 0600, 0), EEXIST);
	CHECK_ERR("mknod.enoent", mknod("nodir/x", S_IFIFO | 0600, 0), ENOENT);
	CHECK_ERR("mknod.enotdir", mknod("file/x", S_IFIFO | 0600, 0), ENOTDIR);
	CHECK_ERR("mknodat.ebadf", mknodat(9999, "x", S_IFIFO | 0600, 0), EBADF);
	CHECK_SYS("mknod.regular", mknod("n_reg", S_IFREG | 0600, 0));
	CHECK_SYS("mknod.type_zero_regular", mknod("n_zero", 0600, 0));
	struct stat st;
	CHECK("mknod.type_zero_is_regular", stat("n_zero", &st) == 0 && S_ISREG(st.st_mode));

	CHECK_ERR("symlink.empty_target", symlink("", "s_empty"), ENOENT);
	CHECK_ERR("symlink.enoent_dir", symlink("x", "nodir/s"), ENOENT);
	CHECK_ERR("symlink.enotdir", symlink("x", "file/s"), ENOTDIR);
	CHECK_ERR("symlink.efault_target", syscall(SYS_symlink, bad, "s2"), EFAULT);
	CHECK_ERR("symlinkat.ebadf", symlinkat("x", 9999, "s2"), EBADF);
	CHECK_ERR("symlink.over_dangling", symlink("x", "dangle"), EEXIST);
	char longt[PATH_MAX + 2];
	memset(longt, 'a', sizeof longt - 1);
	longt[sizeof longt - 1] = 0;
	CHECK_ERR("symlink.target_too_long", symlink(longt, "s3"), ENAMETOOLONG);

	CHECK_ERR("readlink.bufsiz_zero", syscall(SYS_readlink, "sym", buf, 0), EINVAL);
	CHECK_ERR("readlink.bufsiz_before_enoent", syscall(SYS_readlink, "missing", buf, 0), EINVAL);
	CHECK_ERR("readlink.bufsiz_negative", syscall(SYS_readlink, "sym", buf, -1), EINVAL);
	CHECK_ERR("readlink.efault_buf", syscall(SYS_readlink, "sym", bad, 64), EFAULT);
	CHECK_ERR("readlink.enoent", readlink("missing", buf, sizeof buf), ENOENT);
	CHECK_ERR("readlink.enotdir", readlink("file/x", buf, sizeof buf), ENOTDIR);
	CHECK_ERR("readlink.eloop", readlink("loop_a/x", buf, sizeof buf), ELOOP);
	CHECK_EQ("readlink.truncates", readlink("sym", buf, 2), 2);
	CHECK_ERR("readlinkat.ebadf", readlinkat(9999, "sym", buf, sizeof buf), EBADF);
}

/* chmod/chown/utimensat/access/stat/getdents64/dup/fcntl */
static void test_attrs(void)
{
	char *bad = unmapped();
	struct stat st;
	int op = open("file", O_PATH);
	CHECK_ERR("fchmod.opath", syscall(SYS_fchmod, op, 0644), EBADF);
	CHECK_ERR("fchown.opath", syscall(SYS_fchown, op, 0, 0), EBADF);
	CHECK_ERR("futimens.opath", futimens(op, NULL), EBADF);
	CHECK_SYS("fstat.opath_ok", fstat(op, &st));
	close(op);
	CHECK_ERR("fchmod.ebadf", fchmod(-1, 0644), EBADF);
	CHECK_ERR("fchown.ebadf", fchown(-1, 0, 0), EBADF);
	CHECK_ERR("chmod.efault", syscall(SYS_chmod, bad, 0644), EFAULT);
	CHECK_ERR("chmod.enotdir", chmod("file/x", 0644), ENOTDIR);
	CHECK_ERR("chmod.eloop", chmod("loop_a", 0644), ELOOP);
	CHECK_ERR("fchmodat.ebadf", syscall(SYS_fchmodat, 9999, "file", 0644), EBADF);
	CHECK_ERR("chown.enoent", chown("missing", 0, 0), ENOENT);
	CHECK_ERR("chown.enotdir", chown("file/x", 0, 0), ENOTDIR);
	CHECK_ERR("chown.efault", syscall(SYS_chown, bad, 0, 0), EFAULT);
	CHECK_ERR("lchown.enoent", lchown("missing", 0, 0), ENOENT);
	CHECK_SYS("lchown.dangling_ok", lchown("dangle", 0, 0));
	CHECK_ERR("chown.dangling", chown("dangle", 0, 0), ENOENT);
	CHECK_ERR("fchownat.bad_flags", fchownat(AT_FDCWD, "file", 0, 0, 0x1), EINVAL);
	CHECK_ERR("fchownat.ebadf", fchownat(9999, "file", 0, 0, 0), EBADF);
	CHECK_ERR("fchownat.empty_without_flag", fchownat(AT_FDCWD, "", 0, 0, 0), ENOENT);

	struct timespec ts[2] = { { 0, 0 }, { 0, 1000000000 } };
	CHECK_ERR("utimensat.bad_nsec", utimensat(AT_FDCWD, "file", ts, 0), EINVAL);
	ts[1].tv_nsec = -5;
	CHECK_ERR("utimensat.negative_nsec", utimensat(AT_FDCWD, "file", ts, 0), EINVAL);
	ts[1].tv_nsec = UTIME_OMIT;
	ts[0].tv_nsec = UTIME_NOW;
	CHECK_SYS("utimensat.now_omit", utimensat(AT_FDCWD, "file", ts, 0));
	CHECK_ERR("utimensat.bad_flags", utimensat(AT_FDCWD, "file", NULL, 0x1), EINVAL);
	CHECK_ERR("utimensat.bad_flags_before_enoent", utimensat(AT_FDCWD, "missing", NULL, 0x1), EINVAL);
	ts[1].tv_nsec = -5;
	CHECK_ERR("utimensat.enoent_before_bad_nsec", utimensat(AT_FDCWD, "missing", ts, 0), ENOENT);
	ts[1].tv_nsec = UTIME_OMIT;
	CHECK_ERR("utimensat.efault_times", syscall(SYS_utimensat, AT_FDCWD, "file", bad, 0), EFAULT);
	CHECK_ERR("utimensat.efault_path", syscall(SYS_utimensat, AT_FDCWD, bad, NULL, 0), EFAULT);
	CHECK_ERR("utimensat.enoent", utimensat(AT_FDCWD, "missing", NULL, 0), ENOENT);
	CHECK_ERR("utimensat.enotdir", utimensat(AT_FDCWD, "file/x", NULL, 0), ENOTDIR);
	CHECK_ERR("utimensat.ebadf", utimensat(9999, "file", NULL, 0), EBADF);
	CHECK_ERR("utimensat.null_path_at_fdcwd", syscall(SYS_utimensat, AT_FDCWD, NULL, NULL, 0), EFAULT);
	int fd = open("file", O_RDONLY);
	CHECK_SYS("utimensat.null_path_on_fd", syscall(SYS_utimensat, fd, NULL, NULL, 0));
	CHECK_ERR("utimensat.null_path_with_flags", syscall(SYS_utimensat, fd, NULL, NULL, AT_SYMLINK_NOFOLLOW), EINVAL);
	CHECK_ERR("utimensat.eloop", utimensat(AT_FDCWD, "loop_a", NULL, 0), ELOOP);
	CHECK_SYS("utimensat.nofollow_symlink_ok", utimensat(AT_FDCWD, "dangle", NULL, AT_SYMLINK_NOFOLLOW));

	CHECK_ERR("faccessat.ebadf", faccessat(9999, "file", F_OK, 0), EBADF);
	CHECK_ERR("faccessat2.bad_flags", syscall(SYS_faccessat2, AT_FDCWD, "file", F_OK, 0x1), EINVAL);
	CHECK_ERR("faccessat2.bad_mode_and_flags", syscall(SYS_faccessat2, AT_FDCWD, "file", 0x80, 0x1), EINVAL);
	CHECK_SYS("faccessat2.nofollow_dangling_ok", syscall(SYS_faccessat2, AT_FDCWD, "dangle", F_OK, AT_SYMLINK_NOFOLLOW));
	CHECK_ERR("faccessat2.follow_dangling", syscall(SYS_faccessat2, AT_FDCWD, "dangle", F_OK, 0), ENOENT);
	CHECK_ERR("access.efault", syscall(SYS_access, bad, F_OK), EFAULT);
	CHECK_ERR("access.enotdir", access("file/x", F_OK), ENOTDIR);
	CHECK_ERR("access.eloop", access("loop_a", F_OK), ELOOP);
	CHECK_ERR("access.mode_before_path", access("missing", 0x80), EINVAL);

	CHECK_ERR("fstatat.bad_flags", fstatat(AT_FDCWD, "file", &st, 0x1), EINVAL);
	CHECK_ERR("fstatat.ebadf", fstatat(9999, "file", &st, 0), EBADF);
	CHECK_ERR("fstatat.enotdir_dirfd", fstatat(fd, "x", &st, 0), ENOTDIR);
	CHECK_ERR("stat.eloop", stat("loop_a", &st), ELOOP);
	CHECK_SYS("lstat.loop_ok", lstat("loop_a", &st));
	CHECK_ERR("stat.enotdir", stat("file/x", &st), ENOTDIR);
	CHECK_ERR("stat.trailing_slash_file", stat("file/", &st), ENOTDIR);
	CHECK_ERR("lstat.efault_buf", syscall(SYS_lstat, "file", bad), EFAULT);
	char sx[256];
	CHECK_ERR("statx.reserved_mask", syscall(SYS_statx, AT_FDCWD, "file", 0, STATX__RESERVED, sx), EINVAL);
	CHECK_ERR("statx.both_sync_flags", syscall(SYS_statx, AT_FDCWD, "file", AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, 0x7ff, sx), EINVAL);
	CHECK_ERR("statx.ebadf", syscall(SYS_statx, 9999, "file", 0, 0x7ff, sx), EBADF);
	CHECK_ERR("statx.efault_buf", syscall(SYS_statx, AT_FDCWD, "file", 0, 0x7ff, bad), EFAULT);
	CHECK_ERR("statx.efault_path", syscall(SYS_statx, AT_FDCWD, bad, 0, 0x7ff, sx), EFAULT);

	/* getdents64 of a removed directory */
	mkdir("gone", 0755);
	int g = open("gone", O_RDONLY | O_DIRECTORY);
	rmdir("gone");
	char dbuf[256];
	CHECK_ERR("getdents64.removed_dir", syscall(SYS_getdents64, g, dbuf, sizeof dbuf), ENOENT);
	close(g);

	/* dup family */
	CHECK_ERR("dup2.negative_newfd", dup2(fd, -1), EBADF);
	CHECK_ERR("dup2.ebadf_old", dup2(-1, 40), EBADF);
	CHECK_EQ("dup2.same_fd", dup2(fd, fd), fd);
	CHECK_ERR("dup2.same_bad_fd", dup2(9999, 9999), EBADF);
	CHECK_ERR("dup3.einval_flags_before_ebadf", syscall(SYS_dup3, -1, 40, 0x4), EINVAL);
	CHECK_ERR("dup3.same_bad_fd", syscall(SYS_dup3, 9999, 9999, 0), EINVAL);

	/* fcntl */
	CHECK_ERR("fcntl.dupfd_negative", fcntl(fd, F_DUPFD, -1), EINVAL);
	CHECK_ERR("fcntl.setsig_bad", fcntl(fd, F_SETSIG, 65), EINVAL);
	CHECK_ERR("fcntl.getlk_efault", fcntl(fd, F_GETLK, bad), EFAULT);
	CHECK_ERR("fcntl.setlk_write_on_rdonly", fcntl(fd, F_SETLK, &(struct flock){ .l_type = F_WRLCK }), EBADF);
	CHECK_ERR("fcntl.setlk_bad_type", fcntl(fd, F_SETLK, &(struct flock){ .l_type = 7 }), EINVAL);
	CHECK_ERR("fcntl.notify_not_dir", fcntl(fd, F_NOTIFY, 1), ENOTDIR);
	CHECK_SYS("fcntl.notify_empty_mask_ok", fcntl(fd, F_NOTIFY, 0));
	CHECK_ERR("fcntl.setpipe_sz_not_pipe", fcntl(fd, F_SETPIPE_SZ, 4096), EBADF);
	CHECK_ERR("fcntl.getpipe_sz_not_pipe", fcntl(fd, F_GETPIPE_SZ), EBADF);
	int p[2];
	pipe(p);
	static char chunk[8192];
	CHECK_EQ("fcntl.pipe_fill", write(p[1], dbuf, 200) + write(p[1], chunk, sizeof chunk), 200 + sizeof chunk);
	CHECK_ERR("fcntl.setpipe_sz_below_used", fcntl(p[1], F_SETPIPE_SZ, 4096), EBUSY);
	CHECK_ERR("fcntl.setpipe_sz_huge", fcntl(p[1], F_SETPIPE_SZ, (int)0x80000001u), EINVAL);
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* EXDEV, EBUSY and EROFS on a mounted tmpfs, remounted read-only */
static void test_rofs(void)
{
	touch("m/exists", 0644);
	mkdir("m/dir", 0755);
	symlink("exists", "m/sym");
	int w = open("m/exists", O_RDWR);
	CHECK_ERR("rofs.remount_ro_with_writer", mount("none", "m", "tmpfs", MS_REMOUNT | MS_RDONLY, NULL), EBUSY);
	close(w);
	CHECK_SYS("rofs.remount_ro", mount("none", "m", "tmpfs", MS_REMOUNT | MS_RDONLY, NULL));
	CHECK_ERR("rofs.open_creat", open("m/new", O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_ERR("rofs.open_wronly", open("m/exists", O_WRONLY), EROFS);
	CHECK_ERR("rofs.open_trunc_rdonly", open("m/exists", O_RDONLY | O_TRUNC), EROFS);
	CHECK_ERR("rofs.open_creat_missing_dir_enoent", open("m/nodir/x", O_CREAT | O_WRONLY, 0644), ENOENT);
	int fd = open("m/exists", O_CREAT | O_RDONLY, 0644);
	CHECK_SYS("rofs.open_creat_existing_rdonly_ok", fd);
	close(fd);
	CHECK_ERR("rofs.excl_existing_eexist", open("m/exists", O_CREAT | O_EXCL | O_RDONLY, 0644), EEXIST);
	CHECK_ERR("rofs.mkdir", mkdir("m/d2", 0755), EROFS);
	CHECK_ERR("rofs.mkdir_existing", mkdir("m/dir", 0755), EEXIST);
	CHECK_ERR("rofs.rmdir", rmdir("m/dir"), EROFS);
	CHECK_ERR("rofs.unlink", unlink("m/exists"), EROFS);
	CHECK_ERR("rofs.unlink_missing_erofs_first", unlink("m/missing"), EROFS);
	CHECK_ERR("rofs.rename", rename("m/exists", "m/e2"), EROFS);
	CHECK_ERR("rofs.link", link("m/exists", "m/e3"), EROFS);
	CHECK_ERR("rofs.symlink", symlink("x", "m/s2"), EROFS);
	CHECK_ERR("rofs.mknod", mknod("m/fifo", S_IFIFO | 0600, 0), EROFS);
	CHECK_ERR("rofs.chmod", chmod("m/exists", 0600), EROFS);
	CHECK_ERR("rofs.chown", chown("m/exists", 1, 1), EROFS);
	CHECK_ERR("rofs.lchown_symlink", lchown("m/sym", 1, 1), EROFS);
	CHECK_ERR("rofs.utimensat", utimensat(AT_FDCWD, "m/exists", NULL, 0), EROFS);
	CHECK_ERR("rofs.truncate", truncate("m/exists", 0), EROFS);
	CHECK_ERR("rofs.access_w", access("m/exists", W_OK), EROFS);
	CHECK_SYS("rofs.access_r_ok", access("m/exists", R_OK));
	CHECK_ERR("rofs.fchmod_rdonly_fd", (fd = open("m/exists", O_RDONLY), fchmod(fd, 0600)), EROFS);
	close(fd);
	CHECK_SYS("rofs.remount_rw", mount("none", "m", "tmpfs", MS_REMOUNT, NULL));
	CHECK_SYS("rofs.writable_again", mkdir("m/d2", 0755));
}

/* As nobody: EACCES and EPERM */
static const char *const nobody_names[] = {
	"nobody.open_no_read", "nobody.open_no_write", "nobody.open_search_denied",
	"nobody.creat_no_dir_write", "nobody.noatime_not_owner", "nobody.truncate_no_write",
	"nobody.link_no_dir_write", "nobody.unlink_no_dir_write", "nobody.unlink_sticky",
	"nobody.rename_sticky", "nobody.rmdir_no_dir_write", "nobody.mkdir_no_dir_write",
	"nobody.mknod_chr", "nobody.symlink_no_dir_write", "nobody.chmod_not_owner",
	"nobody.chown_own_file", "nobody.fchown_own_file_group", "nobody.utimensat_now_no_write",
	"nobody.utimensat_explicit_not_owner", "nobody.stat_search_denied", "nobody.access_w",
	"nobody.readlink_search_denied", "nobody.opendir_no_read", "nobody.setpipe_sz_over_max",
	"nobody.chmod_own_sgid_dropped",
};
static const int nobody_want[] = {
	EACCES, EACCES, EACCES,
	EACCES, EPERM, EACCES,
	EACCES, EACCES, EPERM,
	EPERM, EACCES, EACCES,
	EPERM, EACCES, EPERM,
	EPERM, EPERM, EACCES,
	EPERM, EACCES, EACCES,
	EACCES, EACCES, EPERM,
	0,
};

static void as_nobody(int out)
{
	char buf[64];
	struct stat st;
	put(out, rc(open("secret", O_RDONLY)));
	put(out, rc(open("rootf", O_WRONLY)));
	put(out, rc(open("closed/f", O_RDONLY)));
	put(out, rc(open("rodir/new", O_CREAT | O_WRONLY, 0600)));
	put(out, rc(open("rootf", O_RDONLY | O_NOATIME)));
	put(out, rc(truncate("rootf", 0)));
	put(out, rc(link("sticky/mine", "rodir/l")));
	put(out, rc(unlink("rodir/f")));
	put(out, rc(unlink("sticky/rootf")));
	put(out, rc(rename("sticky/rootf", "sticky/r2")));
	put(out, rc(rmdir("rodir/sub")));
	put(out, rc(mkdir("rodir/sub2", 0755)));
	put(out, rc(mknod("sticky/chr", S_IFCHR | 0600, makedev(1, 3))));
	put(out, rc(symlink("x", "rodir/s")));
	put(out, rc(chmod("rootf", 0777)));
	put(out, rc(chown("sticky/mine", 0, 0)));
	int fd = open("sticky/mine", O_RDONLY);
	put(out, rc(fchown(fd, -1, 1)));
	close(fd);
	put(out, rc(utimensat(AT_FDCWD, "rootf", NULL, 0)));
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	put(out, rc(utimensat(AT_FDCWD, "rootf", ts, 0)));
	put(out, rc(stat("closed/f", &st)));
	put(out, rc(access("rootf", W_OK)));
	put(out, rc(readlink("closed/sym", buf, sizeof buf)));
	put(out, rc(open("closed", O_RDONLY | O_DIRECTORY)));
	int p[2];
	pipe(p);
	put(out, rc(fcntl(p[0], F_SETPIPE_SZ, 16 << 20)));
	/* a group we are not in: S_ISGID dropped, no error */
	put(out, rc(chmod("sticky/mine", 02755)));
}

static void test_nobody(void)
{
	touch("secret", 0600);
	touch("rootf", 0644);
	mkdir("closed", 0700);
	touch("closed/f", 0644);
	symlink("f", "closed/sym");
	mkdir("rodir", 0755);
	touch("rodir/f", 0666);
	mkdir("rodir/sub", 0755);
	mkdir("sticky", 01777);
	chmod("sticky", 01777);
	touch("sticky/rootf", 0666);
	touch("sticky/mine", 0644);
	chown("sticky/mine", NOBODY, 0);
	int n = sizeof nobody_want / sizeof nobody_want[0], res[32];
	int got = probe(as_nobody, 1, res, n);
	CHECK_EQ("nobody.results", got, n);
	for (int i = 0; i < got && i < n; i++)
		CHECK_EQ(nobody_names[i], res[i], nobody_want[i]);
	struct stat st;
	stat("sticky/mine", &st);
	CHECK_EQ("nobody.chmod_sgid_cleared", st.st_mode & 07777, 0755);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return type == FTW_DP ? rmdir(path) : unlink(path);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	chmod(dir, 0755);
	if (chdir(dir))
		return 1;
	touch("file", 0644);
	mkdir("d", 0755);
	mkdir("m", 0755);
	if (!CHECK_SYS("setup.mount_tmpfs", mount("none", "m", "tmpfs", 0, NULL)))
		return check_done();
	touch("m/exists", 0644);

	test_open();
	test_rw();
	test_truncate();
	test_names();
	test_attrs();
	test_rofs();
	test_nobody();

	CHECK_SYS("cleanup.umount", umount("m"));
	if (chdir("/") != 0 || nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		printf("# cleanup of %s failed\n", dir);
	return check_done();
}
