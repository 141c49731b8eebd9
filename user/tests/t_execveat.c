/*
 * t_execveat: execveat(2). A program named by a directory descriptor and
 * a relative path, by an absolute path (the descriptor ignored), and by
 * a descriptor alone with an empty path and AT_EMPTY_PATH (fexecve; an
 * O_PATH descriptor too, and musl's fexecve). The program sees the name
 * Linux gives it in AT_EXECFN: the path, or /dev/fd/N[/path].
 * AT_SYMLINK_NOFOLLOW refuses a final symlink (ELOOP) and follows
 * earlier ones; the errors: ENOENT for an empty path without
 * AT_EMPTY_PATH, EBADF, ENOTDIR, EACCES for a directory or a file
 * without execute permission, EINVAL for unknown flags.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "check.h"

#define SELF "/tests/t_execveat"
#define CHILD_OK 42
#define CHILD_BADNAME 43

extern char **environ;

/* Runs execveat(dirfd, path, flags) in a child with argv {"t_execveat",
 * "child", want}; returns the child's exit status: CHILD_OK when the
 * program ran and its AT_EXECFN was want, 100 + errno when execveat
 * failed. want may contain one %d for dirfd. */
static int run(int dirfd, const char *path, int flags, const char *want)
{
	char name[256];
	snprintf(name, sizeof name, want ? want : "", dirfd);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = {"t_execveat", "child", name, NULL};
		syscall(SYS_execveat, dirfd, path, argv, environ, flags);
		_exit(100 + errno);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0) {
		const char *fn = (const char *)getauxval(AT_EXECFN);
		return fn && strcmp(fn, argv[2]) == 0 ? CHILD_OK : CHILD_BADNAME;
	}
	check_start("t_execveat");

	int dir = open("/tests", O_RDONLY | O_DIRECTORY);
	int fd = open(SELF, O_RDONLY);
	int pfd = open(SELF, O_PATH);
	CHECK("open", dir >= 0 && fd >= 0 && pfd >= 0);

	CHECK_EQ("relative.runs", run(dir, "t_execveat", 0, "/dev/fd/%d/t_execveat"), CHILD_OK);
	CHECK_EQ("absolute.ignores_fd", run(-1, SELF, 0, SELF), CHILD_OK);
	CHECK_EQ("absolute.cwd", run(AT_FDCWD, SELF, 0, SELF), CHILD_OK);
	CHECK_EQ("empty_path.fexecve", run(fd, "", AT_EMPTY_PATH, "/dev/fd/%d"), CHILD_OK);
	CHECK_EQ("empty_path.o_path", run(pfd, "", AT_EMPTY_PATH, "/dev/fd/%d"), CHILD_OK);
	CHECK_EQ("empty_path.nofollow_too", run(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, "/dev/fd/%d"), CHILD_OK);

	/* musl's fexecve is execveat(fd, "", AT_EMPTY_PATH) first. */
	pid_t pid = fork();
	if (pid == 0) {
		char name[64];
		snprintf(name, sizeof name, "/dev/fd/%d", fd);
		char *av[] = {"t_execveat", "child", name, NULL};
		fexecve(fd, av, environ);
		_exit(100 + errno);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK_EQ("fexecve.libc", WIFEXITED(st) ? WEXITSTATUS(st) : -1, CHILD_OK);

	/* Symbolic links. */
	unlink("/tmp/t_execveat.link");
	CHECK_SYS("symlink", symlink(SELF, "/tmp/t_execveat.link"));
	CHECK_EQ("symlink.followed", run(AT_FDCWD, "/tmp/t_execveat.link", 0, "/tmp/t_execveat.link"), CHILD_OK);
	CHECK_EQ("symlink.nofollow_eloop", run(AT_FDCWD, "/tmp/t_execveat.link", AT_SYMLINK_NOFOLLOW, NULL), 100 + ELOOP);
	mkdir("/tmp/t_execveat.d", 0755);
	unlink("/tmp/t_execveat.d/tests");
	CHECK_SYS("symlink.dir", symlink("/tests", "/tmp/t_execveat.d/tests"));
	CHECK_EQ("symlink.nofollow_only_last",
		 run(AT_FDCWD, "/tmp/t_execveat.d/tests/t_execveat", AT_SYMLINK_NOFOLLOW, "/tmp/t_execveat.d/tests/t_execveat"),
		 CHILD_OK);

	/* Errors. */
	CHECK_EQ("err.empty_no_flag", run(fd, "", 0, NULL), 100 + ENOENT);
	CHECK_EQ("err.empty_no_flag_bad_fd", run(-1, "", 0, NULL), 100 + ENOENT);
	CHECK_EQ("err.bad_fd_relative", run(-1, "t_execveat", 0, NULL), 100 + EBADF);
	CHECK_EQ("err.closed_fd_relative", run(999, "t_execveat", 0, NULL), 100 + EBADF);
	CHECK_EQ("err.bad_fd_empty", run(999, "", AT_EMPTY_PATH, NULL), 100 + EBADF);
	CHECK_EQ("err.fd_not_dir", run(fd, "t_execveat", 0, NULL), 100 + ENOTDIR);
	CHECK_EQ("err.empty_on_dir", run(dir, "", AT_EMPTY_PATH, NULL), 100 + EACCES);
	CHECK_EQ("err.missing", run(dir, "no_such_program", 0, NULL), 100 + ENOENT);
	CHECK_EQ("err.bad_flags", run(dir, "t_execveat", 0x4, NULL), 100 + EINVAL);
	int nx = open("/tmp/t_execveat.nx", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK("err.noexec_file", nx >= 0 && write(nx, "\177ELF", 4) == 4);
	close(nx);
	nx = open("/tmp/t_execveat.nx", O_RDONLY);
	CHECK_EQ("err.noexec_fd", run(nx, "", AT_EMPTY_PATH, NULL), 100 + EACCES);
	CHECK_EQ("err.efault_path", run(dir, (const char *)8, 0, NULL), 100 + EFAULT);
	close(nx);
	unlink("/tmp/t_execveat.nx");

	/* A script named by a close-on-exec descriptor: its interpreter could
	 * not open /dev/fd/N, so execveat refuses it. */
	int sc = open("/tmp/t_execveat.sh", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	CHECK("script.write", sc >= 0 && write(sc, "#!/bin/sh\nexit 7\n", 18) == 18);
	close(sc);
	CHECK_EQ("script.by_path_runs", run(AT_FDCWD, "/tmp/t_execveat.sh", 0, NULL), 7);
	sc = open("/tmp/t_execveat.sh", O_RDONLY | O_CLOEXEC);
	CHECK_EQ("script.cloexec_fd_enoent", run(sc, "", AT_EMPTY_PATH, NULL), 100 + ENOENT);
	close(sc);
	unlink("/tmp/t_execveat.sh");
	unlink("/tmp/t_execveat.link");
	unlink("/tmp/t_execveat.d/tests");
	rmdir("/tmp/t_execveat.d");
	return check_done();
}
