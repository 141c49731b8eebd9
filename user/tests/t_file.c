/* t_file: files and directories (open/openat/read/write/pread/pwrite/lseek,
 * readv/writev, dup/dup2/dup3, fcntl, ftruncate, rename, link, symlink,
 * readlink, unlink, mkdir, rmdir, getdents64, stat family, statx, access,
 * chmod, umask, getcwd, chdir). */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* Linux's struct statx (stable ABI); musl 1.2.3 has no wrapper. */
struct sb_statx_ts {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t reserved;
};
struct sb_statx {
	uint32_t stx_mask, stx_blksize;
	uint64_t stx_attributes;
	uint32_t stx_nlink, stx_uid, stx_gid;
	uint16_t stx_mode, pad1;
	uint64_t stx_ino, stx_size, stx_blocks, stx_attributes_mask;
	struct sb_statx_ts stx_atime, stx_btime, stx_ctime, stx_mtime;
	uint32_t stx_rdev_major, stx_rdev_minor, stx_dev_major, stx_dev_minor;
	uint64_t spare[14];
};
#define SB_STATX_TYPE 0x1u
#define SB_STATX_MODE 0x2u
#define SB_STATX_SIZE 0x200u
#define SB_STATX_BASIC_STATS 0x7ffu

struct sb_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int read_all(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, n - 1);
	close(fd);
	if (r < 0)
		return -1;
	buf[r] = 0;
	return (int)r;
}

static void test_open_rw(void)
{
	char buf[64];
	int fd = open("a.txt", O_CREAT | O_EXCL | O_RDWR, 0644);
	CHECK_SYS("open.creat_excl", fd);
	CHECK_ERR("open.excl_exists", open("a.txt", O_CREAT | O_EXCL | O_RDWR, 0644), EEXIST);
	CHECK_ERR("open.enoent", open("nonexistent", O_RDONLY), ENOENT);
	CHECK_EQ("write.count", write(fd, "hello world", 11), 11);
	CHECK_EQ("lseek.cur_after_write", lseek(fd, 0, SEEK_CUR), 11);
	CHECK_EQ("lseek.set", lseek(fd, 0, SEEK_SET), 0);
	memset(buf, 0, sizeof buf);
	CHECK_EQ("read.count", read(fd, buf, sizeof buf), 11);
	CHECK_STR("read.data", buf, "hello world");
	CHECK_EQ("read.eof", read(fd, buf, sizeof buf), 0);

	memset(buf, 0, sizeof buf);
	CHECK_EQ("pread.count", pread(fd, buf, 5, 6), 5);
	CHECK_STR("pread.data", buf, "world");
	CHECK_EQ("pread.offset_unchanged", lseek(fd, 0, SEEK_CUR), 11);
	CHECK_EQ("pwrite.count", pwrite(fd, "HELLO", 5, 0), 5);
	CHECK_EQ("pwrite.offset_unchanged", lseek(fd, 0, SEEK_CUR), 11);
	memset(buf, 0, sizeof buf);
	pread(fd, buf, 11, 0);
	CHECK_STR("pwrite.data", buf, "HELLO world");

	CHECK_EQ("lseek.end", lseek(fd, 0, SEEK_END), 11);
	CHECK_EQ("lseek.end_minus", lseek(fd, -5, SEEK_END), 6);
	CHECK_EQ("lseek.cur_plus", lseek(fd, 2, SEEK_CUR), 8);
	CHECK_ERR("lseek.negative", lseek(fd, -100, SEEK_SET), EINVAL);

	/* a write past the end leaves a hole that reads as zeros */
	CHECK_EQ("lseek.past_end", lseek(fd, 100, SEEK_SET), 100);
	CHECK_EQ("write.after_hole", write(fd, "Z", 1), 1);
	struct stat st;
	CHECK_SYS("fstat", fstat(fd, &st));
	CHECK_EQ("fstat.size_with_hole", st.st_size, 101);
	CHECK(("fstat.is_reg"), S_ISREG(st.st_mode));
	char hole[89];
	CHECK_EQ("pread.hole", pread(fd, hole, sizeof hole, 11), (long)sizeof hole);
	int zero = 1;
	for (size_t i = 0; i < sizeof hole; i++)
		zero &= hole[i] == 0;
	CHECK("hole.zeros", zero);

	/* O_TRUNC empties, O_APPEND writes at the end */
	int fd2 = open("a.txt", O_WRONLY | O_TRUNC);
	CHECK_SYS("open.trunc", fd2);
	CHECK_SYS("fstat.after_trunc", fstat(fd, &st));
	CHECK_EQ("trunc.size", st.st_size, 0);
	close(fd2);
	fd2 = open("a.txt", O_WRONLY | O_APPEND);
	CHECK_SYS("open.append", fd2);
	write(fd2, "one", 3);
	lseek(fd2, 0, SEEK_SET);
	write(fd2, "two", 3);
	memset(buf, 0, sizeof buf);
	pread(fd, buf, sizeof buf - 1, 0);
	CHECK_STR("append.data", buf, "onetwo");
	close(fd2);
	close(fd);

	/* opening a directory for writing, O_DIRECTORY on a file */
	CHECK_ERR("open.dir_wronly", open(".", O_WRONLY), EISDIR);
	CHECK_ERR("open.o_directory_on_file", open("a.txt", O_RDONLY | O_DIRECTORY), ENOTDIR);
	CHECK_ERR("open.file_as_dir", open("a.txt/x", O_RDONLY), ENOTDIR);
	unlink("a.txt");
}

static void test_openat_vec(void)
{
	CHECK_SYS("mkdir.sub", mkdir("sub", 0755));
	int dfd = open("sub", O_RDONLY | O_DIRECTORY);
	CHECK_SYS("open.dirfd", dfd);
	int fd = openat(dfd, "f", O_CREAT | O_RDWR, 0600);
	CHECK_SYS("openat.create", fd);
	struct stat st;
	CHECK_SYS("stat.via_path", stat("sub/f", &st));

	struct iovec iov[3] = {
		{ "abc", 3 }, { "", 0 }, { "defgh", 5 },
	};
	CHECK_EQ("writev.count", writev(fd, iov, 3), 8);
	char a[2], b[4], c[8];
	memset(c, 0, sizeof c);
	struct iovec rv[3] = { { a, 2 }, { b, 4 }, { c, sizeof c } };
	lseek(fd, 0, SEEK_SET);
	CHECK_EQ("readv.count", readv(fd, rv, 3), 8);
	CHECK("readv.data", memcmp(a, "ab", 2) == 0 && memcmp(b, "cdef", 4) == 0 && memcmp(c, "gh", 2) == 0);
	char pv[4] = { 0 };
	struct iovec prv = { pv, 3 };
	CHECK_EQ("preadv.count", preadv(fd, &prv, 1, 2), 3);
	CHECK_STR("preadv.data", pv, "cde");
	struct iovec pwv = { "XY", 2 };
	CHECK_EQ("pwritev.count", pwritev(fd, &pwv, 1, 0), 2);
	char all[9] = { 0 };
	pread(fd, all, 8, 0);
	CHECK_STR("pwritev.data", all, "XYcdefgh");
	close(fd);

	CHECK_SYS("fstatat.rel", fstatat(dfd, "f", &st, 0));
	CHECK_EQ("fstatat.size", st.st_size, 8);
	CHECK_SYS("unlinkat.file", unlinkat(dfd, "f", 0));
	CHECK_ERR("fstatat.gone", fstatat(dfd, "f", &st, 0), ENOENT);
	close(dfd);
	CHECK_SYS("unlinkat.removedir", unlinkat(AT_FDCWD, "sub", AT_REMOVEDIR));
}

static void test_dup_fcntl(void)
{
	int fd = open("d.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	lseek(fd, 2, SEEK_SET);

	int d = dup(fd);
	CHECK("dup.new_fd", d >= 0 && d != fd);
	CHECK_EQ("dup.shared_offset", lseek(d, 0, SEEK_CUR), 2);
	lseek(d, 5, SEEK_SET);
	CHECK_EQ("dup.offset_moves_both", lseek(fd, 0, SEEK_CUR), 5);
	CHECK_EQ("dup.no_cloexec", fcntl(d, F_GETFD), 0);

	CHECK_EQ("dup2.target", dup2(fd, 50), 50);
	char ch = 0;
	CHECK_EQ("dup2.read", read(50, &ch, 1), 1);
	CHECK_EQ("dup2.data", ch, '5');
	CHECK_EQ("dup2.same_fd", dup2(fd, fd), fd);
	/* dup2 onto an open descriptor closes it first */
	int other = open("d.txt", O_RDONLY);
	CHECK_EQ("dup2.over_open", dup2(fd, other), other);
	CHECK_EQ("dup2.over_open_shares", lseek(other, 0, SEEK_CUR), 6);

	CHECK_EQ("dup3.cloexec", dup3(fd, 51, O_CLOEXEC), 51);
	CHECK_EQ("dup3.flag_set", fcntl(51, F_GETFD), FD_CLOEXEC);
	/* raw: musl checks some of these itself */
	CHECK_ERR("dup3.same_fd", syscall(SYS_dup3, fd, fd, 0), EINVAL);
	CHECK_ERR("dup3.bad_flags", syscall(SYS_dup3, fd, 52, 0x4), EINVAL);
	CHECK_EQ("dup3.raw_no_flags", syscall(SYS_dup3, fd, 52, 0), 52);
	CHECK_EQ("dup3.raw_no_cloexec", fcntl(52, F_GETFD), 0);
	close(52);

	int c = fcntl(fd, F_DUPFD_CLOEXEC, 60);
	CHECK("fcntl.dupfd_cloexec_min", c >= 60);
	CHECK_EQ("fcntl.dupfd_cloexec_flag", fcntl(c, F_GETFD), FD_CLOEXEC);
	int c2 = fcntl(fd, F_DUPFD, 60);
	CHECK("fcntl.dupfd_next", c2 > 60 && c2 != c);
	CHECK_EQ("fcntl.dupfd_no_cloexec", fcntl(c2, F_GETFD), 0);
	CHECK_SYS("fcntl.setfd", fcntl(d, F_SETFD, FD_CLOEXEC));
	CHECK_EQ("fcntl.getfd", fcntl(d, F_GETFD), FD_CLOEXEC);
	CHECK_SYS("fcntl.clearfd", fcntl(d, F_SETFD, 0));
	CHECK_EQ("fcntl.getfd_cleared", fcntl(d, F_GETFD), 0);

	CHECK_EQ("fcntl.getfl", fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK), O_RDWR);
	CHECK_SYS("fcntl.setfl_append", fcntl(fd, F_SETFL, O_APPEND | O_NONBLOCK));
	CHECK_EQ("fcntl.getfl_append", fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK), O_RDWR | O_APPEND | O_NONBLOCK);
	/* status flags live in the open file description: dup shares them */
	CHECK_EQ("fcntl.getfl_shared_by_dup", fcntl(d, F_GETFL) & O_APPEND, O_APPEND);
	lseek(fd, 0, SEEK_SET);
	write(fd, "A", 1);
	struct stat st;
	fstat(fd, &st);
	CHECK_EQ("fcntl.append_write_at_end", st.st_size, 11);

	int ce = open("d.txt", O_RDONLY | O_CLOEXEC);
	CHECK_EQ("open.cloexec_flag", fcntl(ce, F_GETFD), FD_CLOEXEC);

	CHECK_SYS("close.dup", close(d));
	CHECK_ERR("close.twice", close(d), EBADF);
	close(50); close(51); close(c); close(c2); close(ce); close(other); close(fd);
	/* the lowest free descriptor is reused */
	int lo = open("d.txt", O_RDONLY);
	CHECK("open.lowest_fd", lo >= 0 && lo <= fd);
	close(lo);
	unlink("d.txt");
}

static void test_truncate(void)
{
	int fd = open("t.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "abcdefghij", 10);
	struct stat st;
	CHECK_SYS("ftruncate.shrink", ftruncate(fd, 4));
	fstat(fd, &st);
	CHECK_EQ("ftruncate.shrink_size", st.st_size, 4);
	CHECK_SYS("ftruncate.grow", ftruncate(fd, 8));
	char buf[9] = { 0 };
	CHECK_EQ("ftruncate.grow_read", pread(fd, buf, 8, 0), 8);
	CHECK("ftruncate.grow_zeros", memcmp(buf, "abcd\0\0\0\0", 8) == 0);
	CHECK_SYS("truncate.path", truncate("t.txt", 2));
	fstat(fd, &st);
	CHECK_EQ("truncate.size", st.st_size, 2);
	CHECK_ERR("ftruncate.negative", ftruncate(fd, -1), EINVAL);
	int ro = open("t.txt", O_RDONLY);
	CHECK_ERR("ftruncate.rdonly", ftruncate(ro, 0), EINVAL);
	close(ro);
	close(fd);
	unlink("t.txt");
}

static void test_names(void)
{
	char buf[64];
	int fd = open("r1", O_CREAT | O_WRONLY, 0644);
	write(fd, "r1data", 6);
	close(fd);
	struct stat st1, st2;
	stat("r1", &st1);
	CHECK_SYS("rename.simple", rename("r1", "r2"));
	CHECK_ERR("rename.old_gone", stat("r1", &st2), ENOENT);
	CHECK_SYS("rename.new_there", stat("r2", &st2));
	CHECK_EQ("rename.same_inode", st2.st_ino, st1.st_ino);
	fd = open("r3", O_CREAT | O_WRONLY, 0644);
	write(fd, "r3", 2);
	close(fd);
	CHECK_SYS("rename.replace", rename("r2", "r3"));
	CHECK_EQ("rename.replace_content", read_all("r3", buf, sizeof buf), 6);
	CHECK_STR("rename.replace_data", buf, "r1data");
	mkdir("rd", 0755);
	CHECK_SYS("renameat.into_dir", renameat(AT_FDCWD, "r3", AT_FDCWD, "rd/r4"));
	CHECK_SYS("renameat.stat", stat("rd/r4", &st2));
	CHECK_ERR("rename.enoent", rename("nope", "nope2"), ENOENT);
	mkdir("rd2", 0755);
	CHECK_ERR("rename.dir_over_nonempty", rename("rd2", "rd"), ENOTEMPTY);
	CHECK_SYS("rename.dir", rename("rd2", "rd3"));
	CHECK_ERR("rename.dir_into_itself", rename("rd3", "rd3/x"), EINVAL);
	rmdir("rd3");

	/* hard links */
	CHECK_SYS("link", link("rd/r4", "l1"));
	CHECK_SYS("link.stat", stat("l1", &st2));
	CHECK_EQ("link.nlink", st2.st_nlink, 2);
	CHECK_EQ("link.same_inode", st2.st_ino, st1.st_ino);
	CHECK_ERR("link.exists", link("rd/r4", "l1"), EEXIST);
	CHECK_ERR("link.dir", link("rd", "ldir"), EPERM);
	CHECK_SYS("unlink.one_link", unlink("rd/r4"));
	stat("l1", &st2);
	CHECK_EQ("unlink.nlink", st2.st_nlink, 1);
	CHECK_EQ("link.content", read_all("l1", buf, sizeof buf), 6);

	/* symbolic links */
	CHECK_SYS("symlink", symlink("l1", "s1"));
	memset(buf, 'x', sizeof buf);
	CHECK_EQ("readlink.len", readlink("s1", buf, sizeof buf), 2);
	CHECK("readlink.data_no_nul", memcmp(buf, "l1x", 3) == 0);
	CHECK_EQ("readlink.truncates", readlink("s1", buf, 1), 1);
	CHECK_ERR("readlink.not_link", readlink("l1", buf, sizeof buf), EINVAL);
	struct stat ls;
	CHECK_SYS("lstat", lstat("s1", &ls));
	CHECK("lstat.is_link", S_ISLNK(ls.st_mode));
	CHECK_EQ("lstat.size", ls.st_size, 2);
	CHECK_SYS("stat.follows", stat("s1", &st2));
	CHECK("stat.follows_reg", S_ISREG(st2.st_mode) && st2.st_ino == st1.st_ino);
	CHECK_SYS("fstatat.nofollow", fstatat(AT_FDCWD, "s1", &st2, AT_SYMLINK_NOFOLLOW));
	CHECK("fstatat.nofollow_link", S_ISLNK(st2.st_mode));
	CHECK_EQ("open.via_symlink", read_all("s1", buf, sizeof buf), 6);
	CHECK_SYS("symlink.dangling", symlink("missing", "s2"));
	CHECK_ERR("open.dangling", open("s2", O_RDONLY), ENOENT);
	CHECK_SYS("lstat.dangling", lstat("s2", &st2));
	CHECK_ERR("symlink.exists", symlink("x", "s1"), EEXIST);
	CHECK_SYS("readlinkat", readlinkat(AT_FDCWD, "s2", buf, sizeof buf));
	CHECK("readlinkat.data", memcmp(buf, "missing", 7) == 0);
	/* a symlink to a directory resolves in the middle of a path */
	CHECK_SYS("symlink.dir", symlink("rd", "sd"));
	CHECK_SYS("mkdir.via_symlink_dir", mkdir("sd/inner", 0755));
	CHECK_SYS("stat.via_symlink_dir", stat("rd/inner", &st2));
	CHECK_SYS("unlink.symlink_only", unlink("s1"));
	CHECK_SYS("unlink.target_kept", stat("l1", &st2));
	unlink("s2"); unlink("sd"); unlink("l1"); rmdir("rd/inner"); rmdir("rd");

	/* unlink an open file: the data stays reachable through the fd */
	fd = open("u", O_CREAT | O_RDWR, 0644);
	write(fd, "still", 5);
	CHECK_SYS("unlink.open_file", unlink("u"));
	CHECK_ERR("unlink.gone", access("u", F_OK), ENOENT);
	memset(buf, 0, sizeof buf);
	CHECK_EQ("unlink.read_after", pread(fd, buf, 5, 0), 5);
	CHECK_STR("unlink.data_after", buf, "still");
	fstat(fd, &st2);
	CHECK_EQ("unlink.nlink_zero", st2.st_nlink, 0);
	close(fd);
}

static void test_dirs(void)
{
	CHECK_SYS("mkdir", mkdir("dd", 0755));
	CHECK_ERR("mkdir.exists", mkdir("dd", 0755), EEXIST);
	CHECK_ERR("mkdir.no_parent", mkdir("nope/dd", 0755), ENOENT);
	struct stat st;
	CHECK_SYS("stat.dir", stat("dd", &st));
	CHECK("stat.is_dir", S_ISDIR(st.st_mode));
	CHECK_EQ("stat.dir_nlink", st.st_nlink, 2);
	const char *names[] = { "f1", "f2", "f3" };
	for (int i = 0; i < 3; i++) {
		char p[32];
		snprintf(p, sizeof p, "dd/%s", names[i]);
		close(open(p, O_CREAT | O_WRONLY, 0644));
	}
	mkdir("dd/sub", 0755);
	stat("dd", &st);
	CHECK_EQ("stat.dir_nlink_subdir", st.st_nlink, 3);
	CHECK_ERR("rmdir.not_empty", rmdir("dd"), ENOTEMPTY);
	CHECK_ERR("rmdir.not_dir", rmdir("dd/f1"), ENOTDIR);
	CHECK_ERR("unlink.dir", unlink("dd/sub"), EISDIR);

	/* getdents64, raw: ".", "..", three files and a directory, with types */
	int dfd = open("dd", O_RDONLY | O_DIRECTORY);
	CHECK_SYS("open.dir", dfd);
	char buf[4096];
	int seen = 0, dots = 0, types_ok = 1, total = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
		if (n <= 0) {
			CHECK_EQ("getdents64.end", n, 0);
			break;
		}
		for (long off = 0; off < n;) {
			struct sb_dirent64 *d = (struct sb_dirent64 *)(buf + off);
			total++;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				dots++, types_ok &= d->d_type == DT_DIR;
			else if (!strcmp(d->d_name, "sub"))
				seen |= 8, types_ok &= d->d_type == DT_DIR;
			else if (d->d_name[0] == 'f' && d->d_name[1] >= '1' && d->d_name[1] <= '3' && !d->d_name[2])
				seen |= 1 << (d->d_name[1] - '1'), types_ok &= d->d_type == DT_REG;
			off += d->d_reclen;
		}
	}
	CHECK_EQ("getdents64.names", seen, 15);
	CHECK_EQ("getdents64.dots", dots, 2);
	CHECK_EQ("getdents64.count", total, 6);
	CHECK("getdents64.types", types_ok);
	/* a tiny buffer cannot hold one entry */
	lseek(dfd, 0, SEEK_SET);
	CHECK_ERR("getdents64.small_buf", syscall(SYS_getdents64, dfd, buf, 8), EINVAL);
	/* rewind restarts the listing */
	lseek(dfd, 0, SEEK_SET);
	CHECK("getdents64.rewind", syscall(SYS_getdents64, dfd, buf, sizeof buf) > 0);
	int fd = open("dd/f1", O_RDONLY);
	CHECK_ERR("getdents64.not_dir", syscall(SYS_getdents64, fd, buf, sizeof buf), ENOTDIR);
	close(fd);
	close(dfd);

	/* readdir (libc over getdents64) sees a file created after opendir+rewind */
	DIR *dir = opendir("dd");
	close(open("dd/f4", O_CREAT | O_WRONLY, 0644));
	rewinddir(dir);
	int found = 0;
	struct dirent *e;
	while ((e = readdir(dir)))
		found += !strcmp(e->d_name, "f4");
	closedir(dir);
	CHECK_EQ("readdir.new_entry", found, 1);

	for (int i = 1; i <= 4; i++) {
		char p[32];
		snprintf(p, sizeof p, "dd/f%d", i);
		unlink(p);
	}
	CHECK_SYS("rmdir.sub", rmdir("dd/sub"));
	CHECK_SYS("rmdir", rmdir("dd"));
	CHECK_ERR("rmdir.gone", rmdir("dd"), ENOENT);
	CHECK_ERR("rmdir.dot", rmdir("."), EINVAL);
}

static void test_stat_family(void)
{
	int fd = open("s.txt", O_CREAT | O_RDWR | O_TRUNC, 0640);
	write(fd, "12345", 5);
	struct stat a, b, c;
	CHECK_SYS("stat", stat("s.txt", &a));
	CHECK_SYS("fstat", fstat(fd, &b));
	CHECK_SYS("fstatat.at_fdcwd", fstatat(AT_FDCWD, "s.txt", &c, 0));
	CHECK("stat.agree", a.st_ino == b.st_ino && b.st_ino == c.st_ino && a.st_dev == b.st_dev);
	CHECK_EQ("stat.size", a.st_size, 5);
	CHECK_EQ("stat.mode", a.st_mode & 07777, 0640 & ~0);
	CHECK_EQ("stat.nlink", a.st_nlink, 1);
	CHECK_EQ("stat.uid", a.st_uid, geteuid());
	CHECK("stat.blksize", a.st_blksize > 0);
	CHECK("stat.mtime_plausible", a.st_mtime > 1577836800); /* after 2020 */
	/* AT_EMPTY_PATH stats the descriptor itself */
	CHECK_SYS("fstatat.empty_path", fstatat(fd, "", &c, AT_EMPTY_PATH));
	CHECK_EQ("fstatat.empty_path_ino", c.st_ino, a.st_ino);
	CHECK_ERR("fstatat.empty_no_flag", fstatat(fd, "", &c, 0), ENOENT);
	/* raw newfstatat */
	CHECK_SYS("newfstatat.raw", syscall(SYS_newfstatat, AT_FDCWD, "s.txt", &c, 0));
	CHECK_EQ("newfstatat.raw_size", c.st_size, 5);

	struct sb_statx sx;
	memset(&sx, 0xff, sizeof sx);
	CHECK_SYS("statx", syscall(SYS_statx, AT_FDCWD, "s.txt", 0, SB_STATX_BASIC_STATS, &sx));
	CHECK_EQ("statx.mask_basic", sx.stx_mask & (SB_STATX_TYPE | SB_STATX_MODE | SB_STATX_SIZE),
		 SB_STATX_TYPE | SB_STATX_MODE | SB_STATX_SIZE);
	CHECK_EQ("statx.size", sx.stx_size, 5);
	CHECK_EQ("statx.mode", sx.stx_mode, S_IFREG | 0640);
	CHECK_EQ("statx.ino", sx.stx_ino, a.st_ino);
	CHECK_EQ("statx.nlink", sx.stx_nlink, 1);
	CHECK_EQ("statx.mtime", sx.stx_mtime.tv_sec, a.st_mtime);
	CHECK_SYS("statx.empty_path", syscall(SYS_statx, fd, "", AT_EMPTY_PATH, SB_STATX_BASIC_STATS, &sx));
	CHECK_EQ("statx.empty_path_ino", sx.stx_ino, a.st_ino);
	CHECK_ERR("statx.enoent", syscall(SYS_statx, AT_FDCWD, "nope", 0, SB_STATX_BASIC_STATS, &sx), ENOENT);
	CHECK_ERR("statx.bad_flags", syscall(SYS_statx, AT_FDCWD, "s.txt", 0x80000000u, SB_STATX_BASIC_STATS, &sx), EINVAL);

	/* a write updates mtime and size seen by the other calls */
	write(fd, "678", 3);
	stat("s.txt", &a);
	CHECK_EQ("stat.size_after_write", a.st_size, 8);
	close(fd);

	/* access */
	CHECK_SYS("access.f_ok", access("s.txt", F_OK));
	CHECK_SYS("access.r_ok", access("s.txt", R_OK));
	CHECK_SYS("access.w_ok", access("s.txt", W_OK));
	/* nobody, not even root, may execute a file without an x bit */
	CHECK_ERR("access.x_denied", access("s.txt", X_OK), EACCES);
	CHECK_ERR("access.enoent", access("nope", F_OK), ENOENT);
	CHECK_SYS("faccessat", faccessat(AT_FDCWD, "s.txt", R_OK, 0));
	CHECK_ERR("access.bad_mode", access("s.txt", 0x80), EINVAL);

	/* chmod / fchmod / fchmodat */
	CHECK_SYS("chmod", chmod("s.txt", 0755));
	stat("s.txt", &a);
	CHECK_EQ("chmod.mode", a.st_mode & 07777, 0755);
	CHECK_SYS("access.x_after_chmod", access("s.txt", X_OK));
	fd = open("s.txt", O_RDONLY);
	CHECK_SYS("fchmod", fchmod(fd, 0600));
	fstat(fd, &a);
	CHECK_EQ("fchmod.mode", a.st_mode & 07777, 0600);
	close(fd);
	CHECK_SYS("fchmodat", fchmodat(AT_FDCWD, "s.txt", 04711, 0));
	stat("s.txt", &a);
	CHECK_EQ("fchmodat.mode", a.st_mode & 07777, 04711);
	CHECK("chmod.ctime", a.st_ctime >= a.st_mtime);
	CHECK_ERR("chmod.enoent", chmod("nope", 0644), ENOENT);

	/* umask applies to new files and directories and is returned */
	mode_t old = umask(022);
	CHECK_EQ("umask.returns_old", umask(077), 022);
	close(open("m1", O_CREAT | O_WRONLY, 0777));
	stat("m1", &a);
	CHECK_EQ("umask.077_file", a.st_mode & 0777, 0700);
	umask(022);
	close(open("m2", O_CREAT | O_WRONLY, 0777));
	stat("m2", &a);
	CHECK_EQ("umask.022_file", a.st_mode & 0777, 0755);
	mkdir("m3", 0777);
	stat("m3", &a);
	CHECK_EQ("umask.022_dir", a.st_mode & 0777, 0755);
	/* chmod is not filtered by umask */
	chmod("m2", 0666);
	stat("m2", &a);
	CHECK_EQ("umask.not_on_chmod", a.st_mode & 0777, 0666);
	umask(old);
	unlink("m1"); unlink("m2"); rmdir("m3"); unlink("s.txt");
}

static void test_cwd(const char *tmp)
{
	char buf[PATH_MAX], want[PATH_MAX];
	CHECK("getcwd", getcwd(buf, sizeof buf) != NULL);
	CHECK_STR("getcwd.is_tmp", buf, tmp);
	mkdir("c1", 0755);
	mkdir("c1/c2", 0755);
	CHECK_SYS("chdir.rel", chdir("c1/c2"));
	snprintf(want, sizeof want, "%s/c1/c2", tmp);
	CHECK_STR("getcwd.after_chdir", getcwd(buf, sizeof buf), want);
	CHECK_SYS("chdir.dotdot", chdir(".."));
	snprintf(want, sizeof want, "%s/c1", tmp);
	CHECK_STR("getcwd.after_dotdot", getcwd(buf, sizeof buf), want);
	/* relative paths now resolve from c1 */
	struct stat st;
	CHECK_SYS("relative.resolves", stat("c2", &st));
	CHECK_ERR("chdir.enoent", chdir("nope"), ENOENT);
	close(open("file", O_CREAT | O_WRONLY, 0644));
	CHECK_ERR("chdir.enotdir", chdir("file"), ENOTDIR);
	unlink("file");
	int dfd = open(tmp, O_RDONLY | O_DIRECTORY);
	CHECK_SYS("fchdir", fchdir(dfd));
	close(dfd);
	CHECK_STR("getcwd.after_fchdir", getcwd(buf, sizeof buf), tmp);
	CHECK_ERR("getcwd.erange", syscall(SYS_getcwd, buf, 2), ERANGE);
	/* raw getcwd returns the length including the NUL */
	CHECK_EQ("getcwd.raw_len", syscall(SYS_getcwd, buf, sizeof buf), (long)strlen(tmp) + 1);
	CHECK_SYS("chdir.abs_root", chdir("/"));
	CHECK_STR("getcwd.root", getcwd(buf, sizeof buf), "/");
	CHECK_SYS("chdir.abs_back", chdir(tmp));
	rmdir("c1/c2");
	rmdir("c1");
}

static void test_devnull(void)
{
	int fd = open("/dev/null", O_RDWR);
	CHECK_SYS("devnull.open", fd);
	CHECK_EQ("devnull.write", write(fd, "abc", 3), 3);
	char c;
	CHECK_EQ("devnull.read_eof", read(fd, &c, 1), 0);
	struct stat st;
	fstat(fd, &st);
	CHECK("devnull.chr", S_ISCHR(st.st_mode));
	close(fd);
	fd = open("/dev/zero", O_RDONLY);
	CHECK_SYS("devzero.open", fd);
	char z[16];
	memset(z, 1, sizeof z);
	CHECK_EQ("devzero.read", read(fd, z, sizeof z), 16);
	CHECK("devzero.zeros", z[0] == 0 && z[15] == 0);
	close(fd);
}

/* fsync and friends: regular files and directories sync; a pipe cannot
 * (EINVAL); a closed descriptor is EBADF */
static void test_sync(void)
{
	int fd = open("syncme", O_CREAT | O_RDWR | O_TRUNC, 0644);
	CHECK_SYS("sync.open", fd);
	CHECK_EQ("sync.write", write(fd, "data", 4), 4);
	CHECK_SYS("fsync.file", fsync(fd));
	CHECK_SYS("fdatasync.file", fdatasync(fd));
	int d = open(".", O_RDONLY | O_DIRECTORY);
	CHECK_SYS("fsync.dir", fsync(d));
	CHECK_SYS("syncfs", syncfs(fd));
	int p[2];
	CHECK_SYS("sync.pipe", pipe(p));
	CHECK_ERR("fsync.pipe", fsync(p[0]), EINVAL);
	close(p[0]);
	close(p[1]);
	close(d);
	close(fd);
	CHECK_ERR("fsync.closed", fsync(fd), EBADF);
	sync();
	char buf[8] = { 0 };
	fd = open("syncme", O_RDONLY);
	CHECK_EQ("sync.read_back", read(fd, buf, sizeof buf), 4);
	CHECK_STR("sync.contents", buf, "data");
	close(fd);
	CHECK_SYS("sync.unlink", unlink("syncme"));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *tmp = check_mktmp();
	if (chdir(tmp) != 0)
		return 1;
	umask(022);
	test_open_rw();
	test_openat_vec();
	test_dup_fcntl();
	test_truncate();
	test_names();
	test_dirs();
	test_stat_family();
	test_cwd(tmp);
	test_devnull();
	test_sync();
	CHECK_SYS("chdir.out", chdir("/"));
	CHECK_SYS("cleanup.rmdir_tmp", rmdir(tmp));
	return check_done();
}
