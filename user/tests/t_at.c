/*
 * t_at: how the *at calls resolve (dirfd, path): an absolute path ignores
 * dirfd (even an invalid one), AT_FDCWD is the working directory, a
 * relative path needs a directory descriptor (EBADF, ENOTDIR), O_PATH
 * descriptors serve as dirfds and as AT_EMPTY_PATH targets, and
 * readlinkat with an empty path reads a symlink opened with O_PATH.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "check.h"

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	char f[512], l[512], g[512], s[512];
	snprintf(f, sizeof f, "%s/file", dir);
	snprintf(l, sizeof l, "%s/link", dir);
	snprintf(g, sizeof g, "%s/hard", dir);
	snprintf(s, sizeof s, "%s/sym2", dir);
	int fd = open(f, O_CREAT | O_RDWR, 0644);
	CHECK_SYS("setup.file", fd);
	CHECK_SYS("setup.symlink", symlink("file", l));

	/* absolute paths ignore dirfd, even -1 or a regular file */
	int r = openat(-1, f, O_RDONLY);
	CHECK_SYS("abs.openat_bad_dirfd", r);
	close(r);
	r = openat(fd, f, O_RDONLY);
	CHECK_SYS("abs.openat_file_dirfd", r);
	close(r);
	CHECK_SYS("abs.faccessat", faccessat(-1, f, R_OK, 0));
	CHECK_SYS("abs.faccessat2", syscall(SYS_faccessat2, -1, f, R_OK, 0));
	CHECK_SYS("abs.linkat", linkat(-1, f, -1, g, 0));
	CHECK_SYS("abs.symlinkat", symlinkat("file", -1, s));
	struct stat st;
	CHECK_SYS("abs.fstatat", fstatat(12345, f, &st, 0));
	CHECK_SYS("abs.unlinkat", unlinkat(-1, g, 0));
	CHECK_SYS("abs.unlinkat_sym", unlinkat(-1, s, 0));

	/* relative paths need a directory descriptor */
	CHECK_ERR("rel.bad_dirfd_ebadf", openat(-1, "file", O_RDONLY), EBADF);
	CHECK_ERR("rel.file_dirfd_enotdir", openat(fd, "file", O_RDONLY), ENOTDIR);
	CHECK_ERR("rel.faccessat_enotdir", faccessat(fd, "x", R_OK, 0), ENOTDIR);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	r = openat(dfd, "file", O_RDONLY);
	CHECK_SYS("rel.dirfd", r);
	close(r);
	int pdir = open(dir, O_PATH | O_DIRECTORY);
	r = openat(pdir, "file", O_RDONLY);
	CHECK_SYS("rel.opath_dirfd", r);
	close(r);
	CHECK_SYS("rel.fstatat_opath_dirfd", fstatat(pdir, "file", &st, 0));

	/* AT_EMPTY_PATH: the descriptor's own file, O_PATH ones too */
	int pf = open(f, O_PATH);
	CHECK_SYS("empty.fstatat_opath", fstatat(pf, "", &st, AT_EMPTY_PATH));
	CHECK("empty.is_regular", S_ISREG(st.st_mode));
	CHECK_ERR("empty.without_flag_enoent", fstatat(pf, "", &st, 0), ENOENT);
	int pl = open(l, O_PATH | O_NOFOLLOW);
	CHECK_SYS("empty.symlink_opath", pl);
	char buf[64] = {0};
	CHECK_EQ("empty.readlinkat", readlinkat(pl, "", buf, sizeof buf), 4);
	CHECK_STR("empty.readlinkat_target", buf, "file");
	CHECK_ERR("empty.readlinkat_not_link", readlinkat(pf, "", buf, sizeof buf), ENOENT);
	CHECK_SYS("empty.fstatat_symlink", fstatat(pl, "", &st, AT_EMPTY_PATH));
	CHECK("empty.symlink_itself", S_ISLNK(st.st_mode));
	CHECK_SYS("empty.linkat", linkat(pf, "", AT_FDCWD, g, AT_EMPTY_PATH));
	CHECK_SYS("empty.linkat_made", stat(g, &st));
	unlink(g);

	/* fchdir needs a directory */
	CHECK_ERR("fchdir.file_enotdir", fchdir(fd), ENOTDIR);
	CHECK_ERR("fchdir.bad_fd", fchdir(-1), EBADF);

	close(pl);
	close(pf);
	close(pdir);
	close(dfd);
	close(fd);
	unlink(l);
	unlink(f);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
