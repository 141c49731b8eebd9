/*
 * t_chroot: chroot(2). Absolute paths and ".." stop at the new root,
 * absolute symlinks resolve inside it, the working directory is left
 * where it was (getcwd then says "(unreachable)"), fork inherits the
 * root, /proc/<pid>/root shows it; and the checks: ENOENT, ENOTDIR,
 * EACCES before EPERM, EFAULT.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "probe.h"

static char jail[300];

static int read_file(const char *p, char *buf, int n)
{
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	int k = read(fd, buf, n - 1);
	close(fd);
	if (k < 0)
		return -1;
	buf[k] = 0;
	return k;
}

static int same_file(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

/* in a child: chroot into the jail and report what it sees */
static void jailed(int fd)
{
	char buf[300];
	put(fd, rc(chroot(jail)));
	/* the working directory did not move: outside the root now */
	long r = syscall(SYS_getcwd, buf, sizeof buf);
	put(fd, r > 0 && strncmp(buf, "(unreachable)", 13) == 0);
	put(fd, rc(chdir("/")));
	put(fd, getcwd(buf, sizeof buf) && strcmp(buf, "/") == 0);
	put(fd, read_file("/file", buf, sizeof buf) == 6 && strcmp(buf, "inside") == 0);
	put(fd, read_file("/../../../file", buf, sizeof buf) == 6);
	put(fd, same_file("/..", "/"));
	put(fd, rc(chdir("/sub/../..")));
	put(fd, getcwd(buf, sizeof buf) && strcmp(buf, "/") == 0);
	put(fd, read_file("/sub/abs", buf, sizeof buf) == 6); /* symlink to /file */
	put(fd, rc(access(check_tmpdir, F_OK)));          /* the outside is gone */
	/* a child inherits the root */
	pid_t c = fork();
	if (c == 0)
		_exit(read_file("/file", buf, sizeof buf) == 6 ? 0 : 1);
	int st;
	waitpid(c, &st, 0);
	put(fd, st);
	/* chroot again, relative to the current root */
	put(fd, rc(chroot("/sub")));
	put(fd, read_file("/inner", buf, sizeof buf) == 5);
}

static void nobody_chroot(int fd)
{
	char p[400];
	put(fd, rc(chroot(jail)));
	snprintf(p, sizeof p, "%s/private/x", check_tmpdir);
	put(fd, rc(chroot(p)));
	snprintf(p, sizeof p, "%s/nosearch", check_tmpdir);
	put(fd, rc(chroot(p)));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	chmod(dir, 0755);
	char p[400];
	snprintf(jail, sizeof jail, "%s/jail", dir);
	CHECK_SYS("setup.jail", mkdir(jail, 0755));
	snprintf(p, sizeof p, "%s/sub", jail);
	CHECK_SYS("setup.sub", mkdir(p, 0755));
	snprintf(p, sizeof p, "%s/file", jail);
	int fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK_EQ("setup.file", write(fd, "inside", 6), 6);
	close(fd);
	snprintf(p, sizeof p, "%s/sub/inner", jail);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	CHECK_EQ("setup.inner", write(fd, "inner", 5), 5);
	close(fd);
	snprintf(p, sizeof p, "%s/sub/abs", jail);
	CHECK_SYS("setup.symlink", symlink("/file", p));
	snprintf(p, sizeof p, "%s/private", dir);
	CHECK_SYS("setup.private", mkdir(p, 0700));
	snprintf(p, sizeof p, "%s/private/x", dir);
	CHECK_SYS("setup.private_x", mkdir(p, 0755));
	snprintf(p, sizeof p, "%s/nosearch", dir);
	CHECK_SYS("setup.nosearch", mkdir(p, 0644));
	CHECK_SYS("setup.chdir", chdir(dir));

	int res[16];
	int n = probe(jailed, 0, res, 16);
	CHECK_EQ("jail.reports", n, 14);
	CHECK_EQ("jail.chroot", res[0], 0);
	CHECK("jail.cwd_unreachable", res[1]);
	CHECK_EQ("jail.chdir_root", res[2], 0);
	CHECK("jail.getcwd_root", res[3]);
	CHECK("jail.absolute_inside", res[4]);
	CHECK("jail.dotdot_stops_at_root", res[5]);
	CHECK("jail.root_dotdot_is_root", res[6]);
	CHECK_EQ("jail.chdir_up_past_root", res[7], 0);
	CHECK("jail.still_at_root", res[8]);
	CHECK("jail.absolute_symlink_inside", res[9]);
	CHECK_EQ("jail.outside_invisible", res[10], ENOENT);
	CHECK_EQ("jail.fork_inherits", res[11], 0);
	CHECK_EQ("jail.nested_chroot", res[12], 0);
	CHECK("jail.nested_sees_inner", res[13]);

	/* our own root did not change */
	snprintf(p, sizeof p, "%s/file", jail);
	CHECK_SYS("parent.unchanged", access(p, F_OK));

	n = probe(nobody_chroot, 1, res, 3);
	CHECK_EQ("perm.reports", n, 3);
	CHECK_EQ("perm.nobody_eperm", res[0], EPERM);
	CHECK_EQ("perm.search_denied_first", res[1], EACCES);
	CHECK_EQ("perm.no_search_on_dir", res[2], EACCES);

	CHECK_ERR("bad.enoent", chroot("/no/such/dir"), ENOENT);
	snprintf(p, sizeof p, "%s/file", jail);
	CHECK_ERR("bad.enotdir", chroot(p), ENOTDIR);
	CHECK_ERR("bad.efault", chroot((char *)8), EFAULT);
	CHECK_ERR("bad.empty", chroot(""), ENOENT);

	/* cleanup */
	CHECK_SYS("cleanup.chdir", chdir("/"));
	const char *rm[] = {"jail/sub/abs", "jail/sub/inner", "jail/file", NULL};
	for (int i = 0; rm[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, rm[i]);
		unlink(p);
	}
	const char *rd[] = {"jail/sub", "jail", "private/x", "private", "nosearch", NULL};
	for (int i = 0; rd[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, rd[i]);
		rmdir(p);
	}
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
