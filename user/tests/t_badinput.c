/* t_badinput: bad arguments must fail with the right errno and never crash
 * the process or the kernel: EFAULT for NULL, unmapped and kernel-half
 * pointers, EBADF, EINVAL, ENOENT/ENOTDIR/ENAMETOOLONG/ELOOP, ENOSYS, and
 * ENOEXEC for files that are not runnable programs. Pointer cases use raw
 * system calls so that libc does not touch the pointer first. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#define KADDR ((void *)0xffff880000001000ULL)   /* kernel half */

static char *unmapped;
static const char *tmp;

static void test_efault(void)
{
	int fd = open("data", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	int p[2];
	pipe(p);
	void *bad[] = { NULL, unmapped, KADDR, (void *)-4096L };
	const char *what[] = { "null", "unmapped", "kernel", "top" };
	char name[64];
	for (int i = 0; i < 4; i++) {
		lseek(fd, 0, SEEK_SET);
		snprintf(name, sizeof name, "efault.read_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_read, fd, bad[i], 10), EFAULT);
		snprintf(name, sizeof name, "efault.write_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_write, fd, bad[i], 10), EFAULT);
		snprintf(name, sizeof name, "efault.pipe_write_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_write, p[1], bad[i], 10), EFAULT);
		snprintf(name, sizeof name, "efault.stat_buf_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_newfstatat, AT_FDCWD, "data", bad[i], 0), EFAULT);
		snprintf(name, sizeof name, "efault.fstat_buf_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_fstat, fd, bad[i]), EFAULT);
		snprintf(name, sizeof name, "efault.open_path_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_openat, AT_FDCWD, bad[i], O_RDONLY), EFAULT);
		snprintf(name, sizeof name, "efault.stat_path_%s", what[i]);
		struct stat st;
		CHECK_ERR(name, syscall(SYS_newfstatat, AT_FDCWD, bad[i], &st, 0), EFAULT);
		snprintf(name, sizeof name, "efault.clock_gettime_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_clock_gettime, CLOCK_MONOTONIC, bad[i]), EFAULT);
		snprintf(name, sizeof name, "efault.pipe2_%s", what[i]);
		CHECK_ERR(name, syscall(SYS_pipe2, bad[i], 0), EFAULT);
	}
	/* nothing was written by the failed writes */
	struct stat st;
	fstat(fd, &st);
	CHECK_EQ("efault.file_unchanged", st.st_size, 10);
	/* the pipe holds nothing either */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	char c;
	CHECK_ERR("efault.pipe_empty", read(p[0], &c, 1), EAGAIN);
	/* read-only memory as a read buffer */
	char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	lseek(fd, 0, SEEK_SET);
	CHECK_ERR("efault.read_into_readonly", syscall(SYS_read, fd, ro, 10), EFAULT);
	CHECK_EQ("efault.write_from_readonly_ok", syscall(SYS_write, p[1], ro, 4), 4);
	munmap(ro, 4096);
	/* a buffer that runs off the end of a mapping */
	char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(two + 4096, 4096);
	CHECK_ERR("efault.pipe_write_straddle_start", syscall(SYS_write, p[1], two + 4096, 16), EFAULT);
	munmap(two, 4096);
	/* other calls with output pointers */
	CHECK_ERR("efault.getcwd", syscall(SYS_getcwd, KADDR, 100), EFAULT);
	CHECK_ERR("efault.uname", syscall(SYS_uname, NULL), EFAULT);
	CHECK_ERR("efault.sysinfo", syscall(SYS_sysinfo, unmapped), EFAULT);
	CHECK_ERR("efault.gettimeofday", syscall(SYS_gettimeofday, KADDR, NULL), EFAULT);
	CHECK_ERR("efault.nanosleep", syscall(SYS_nanosleep, NULL, NULL), EFAULT);
	CHECK_ERR("efault.sigaction", syscall(SYS_rt_sigaction, SIGUSR1, unmapped, NULL, 8), EFAULT);
	CHECK_ERR("efault.sigprocmask", syscall(SYS_rt_sigprocmask, SIG_BLOCK, KADDR, NULL, 8), EFAULT);
	CHECK_ERR("efault.poll", syscall(SYS_poll, unmapped, 1, 0), EFAULT);
	int dfd = open(".", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("efault.getdents64", syscall(SYS_getdents64, dfd, KADDR, 4096), EFAULT);
	close(dfd);
	CHECK_ERR("efault.getrandom", syscall(SYS_getrandom, KADDR, 16, 0), EFAULT);
	/* wait4 reaps the child, then fails to store the status */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK_ERR("efault.wait4_status", syscall(SYS_wait4, pid, KADDR, 0, NULL), EFAULT);
	CHECK_ERR("efault.wait4_child_reaped", waitpid(pid, NULL, WNOHANG), ECHILD);
	struct iovec iov[2] = { { "ok", 2 }, { unmapped, 10 } };
	CHECK_ERR("efault.writev_bad_iov_base_first", syscall(SYS_writev, fd, &iov[1], 1), EFAULT);
	CHECK_ERR("efault.writev_iov_array", syscall(SYS_writev, fd, unmapped, 2), EFAULT);
	CHECK_ERR("efault.execve_path", syscall(SYS_execve, NULL, NULL, NULL), EFAULT);
	/* epoll_wait with a ready fd and nowhere to put the event */
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLOUT };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev);
	CHECK_ERR("efault.epoll_wait_unmapped", syscall(SYS_epoll_wait, ep, unmapped, 4, 0), EFAULT);
	CHECK_ERR("efault.epoll_wait_kernel", syscall(SYS_epoll_wait, ep, KADDR, 4, 0), EFAULT);
	close(ep);
	/* zero-length I/O does not look at the buffer */
	CHECK_EQ("write.null_zero_len", syscall(SYS_write, fd, NULL, 0), 0);
	CHECK_EQ("read.null_zero_len", syscall(SYS_read, fd, NULL, 0), 0);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("data");
}

static void test_ebadf(void)
{
	char c;
	int closed = dup(0);
	close(closed);
	CHECK_ERR("ebadf.read_neg", read(-1, &c, 1), EBADF);
	CHECK_ERR("ebadf.read_closed", read(closed, &c, 1), EBADF);
	CHECK_ERR("ebadf.read_huge", read(1 << 30, &c, 1), EBADF);
	CHECK_ERR("ebadf.write_closed", write(closed, "x", 1), EBADF);
	CHECK_ERR("ebadf.close", close(closed), EBADF);
	CHECK_ERR("ebadf.fstat", syscall(SYS_fstat, closed, &c), EBADF);
	CHECK_ERR("ebadf.lseek", lseek(closed, 0, SEEK_SET), EBADF);
	CHECK_ERR("ebadf.dup", dup(closed), EBADF);
	CHECK_ERR("ebadf.dup2", dup2(closed, 60), EBADF);
	CHECK_ERR("ebadf.fcntl", fcntl(closed, F_GETFD), EBADF);
	CHECK_ERR("ebadf.fchdir", fchdir(closed), EBADF);
	CHECK_ERR("ebadf.openat_dirfd", openat(closed, "x", O_RDONLY), EBADF);
	CHECK_ERR("ebadf.getdents64", syscall(SYS_getdents64, closed, &c, 1), EBADF);
	CHECK_ERR("ebadf.epoll_ctl", epoll_ctl(closed, EPOLL_CTL_ADD, 0, &(struct epoll_event){ 0 }), EBADF);
	CHECK_ERR("ebadf.mmap", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, closed, 0) == MAP_FAILED ? -1 : 0, EBADF);
	int fd = open("ro", O_CREAT | O_RDONLY, 0644);
	CHECK_ERR("ebadf.write_rdonly", write(fd, "x", 1), EBADF);
	close(fd);
	fd = open("ro", O_WRONLY);
	CHECK_ERR("ebadf.read_wronly", read(fd, &c, 1), EBADF);
	close(fd);
	/* O_PATH descriptors cannot be read */
	fd = open("ro", O_PATH);
	CHECK_ERR("ebadf.read_opath", read(fd, &c, 1), EBADF);
	close(fd);
	unlink("ro");
}

static void test_einval(void)
{
	int fd = open("e", O_CREAT | O_RDWR, 0644);
	CHECK_ERR("einval.lseek_whence", lseek(fd, 0, 99), EINVAL);
	CHECK_ERR("einval.lseek_negative", lseek(fd, -1, SEEK_SET), EINVAL);
	CHECK_ERR("einval.fcntl_cmd", fcntl(fd, 9999), EINVAL);
	CHECK_ERR("einval.dup3_flags", syscall(SYS_dup3, fd, 70, 0x1234), EINVAL);
	CHECK_ERR("einval.pipe2_flags", pipe2((int[2]){ 0, 0 }, 0x1234), EINVAL);
	CHECK_ERR("einval.epoll_create1", epoll_create1(0x1234), EINVAL);
	CHECK_ERR("einval.mmap_len0", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0, EINVAL);
	CHECK_ERR("einval.munmap_unaligned", munmap((void *)0x10001, 4096), EINVAL);
	CHECK_ERR("einval.kill_signal", kill(getpid(), 65), EINVAL);
	CHECK_ERR("einval.nanosleep", nanosleep(&(struct timespec){ 0, -1 }, NULL), EINVAL);
	CHECK_ERR("einval.clock", syscall(SYS_clock_gettime, 99, &(struct timespec){ 0 }), EINVAL);
	CHECK_ERR("einval.sigprocmask_how", syscall(SYS_rt_sigprocmask, 77, &(sigset_t){ 0 }, NULL, 8), EINVAL);
	CHECK_ERR("einval.open_flags_tmpfile_rdonly", open(".", O_TMPFILE | O_RDONLY, 0600), EINVAL);
	CHECK_ERR("einval.readlink_not_link", readlink("e", (char[8]){ 0 }, 8), EINVAL);
	CHECK_ERR("einval.poll_nfds", poll(NULL, 1u << 31, 0), EINVAL);
	CHECK_ERR("einval.rmdir_dot", rmdir("."), EINVAL);
	CHECK_ERR("einval.waitpid_options", waitpid(-1, NULL, 0x4000000), EINVAL);
	close(fd);
	unlink("e");
}

static void test_paths(void)
{
	char longname[300];
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	CHECK_ERR("enametoolong.component", open(longname, O_RDONLY), ENAMETOOLONG);
	static char longpath[PATH_MAX + 100];
	for (size_t i = 0; i < sizeof longpath - 1; i++)
		longpath[i] = i % 2 ? '/' : 'a';
	longpath[sizeof longpath - 1] = 0;
	CHECK_ERR("enametoolong.path", open(longpath, O_RDONLY), ENAMETOOLONG);
	CHECK_ERR("enoent.empty_path", open("", O_RDONLY), ENOENT);
	CHECK_ERR("enoent.missing_dir", open("missing/file", O_RDONLY), ENOENT);
	close(open("f", O_CREAT | O_WRONLY, 0644));
	CHECK_ERR("enotdir.through_file", open("f/x", O_RDONLY), ENOTDIR);
	CHECK_ERR("enotdir.mkdir_under_file", mkdir("f/d", 0755), ENOTDIR);
	CHECK_ERR("eisdir.open_dir_write", open(".", O_RDWR), EISDIR);
	symlink("loop2", "loop1");
	symlink("loop1", "loop2");
	CHECK_ERR("eloop.open", open("loop1", O_RDONLY), ELOOP);
	CHECK_ERR("eloop.nofollow", open("loop1", O_RDONLY | O_NOFOLLOW), ELOOP);
	CHECK_ERR("eexist.mkdir_file", mkdir("f", 0755), EEXIST);
	CHECK_ERR("enoent.unlink", unlink("nothere"), ENOENT);
	CHECK_ERR("enoent.rename_src", rename("nothere", "x"), ENOENT);
	unlink("loop1");
	unlink("loop2");
	unlink("f");
}

/* execve of something that is not a runnable program */
static int exec_errno(const char *path)
{
	/* in a child, in case the exec wrongly succeeds */
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)path, "--noop", NULL };
		char *envp[] = { NULL };
		syscall(SYS_execve, path, argv, envp);
		_exit(errno);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
		return WEXITSTATUS(st);
	printf("# exec of %s did not fail: status %#x\n", path, st);
	return -1;
}

static void write_file(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	write(fd, data, n);
	close(fd);
	chmod(path, 0755);
}

static void test_enoexec(const char *self)
{
	/* a copy of a real binary to cut up */
	int fd = open(self, O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	size_t sz = st.st_size;
	unsigned char *img = malloc(sz);
	size_t got = 0;
	while (got < sz) {
		ssize_t n = read(fd, img + got, sz - got);
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	CHECK_EQ("enoexec.self_read", got, sz);
	CHECK("enoexec.self_is_elf", memcmp(img, "\177ELF", 4) == 0);

	write_file("whole", img, sz);
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { "whole", "--noop", NULL };
		char *envp[] = { NULL };
		execve("whole", argv, envp);
		_exit(127);
	}
	int stt;
	waitpid(pid, &stt, 0);
	CHECK("exec.copy_runs", WIFEXITED(stt) && WEXITSTATUS(stt) == 0);

	write_file("trunc16", img, 16);
	CHECK_EQ("enoexec.elf_truncated_16", exec_errno("trunc16"), ENOEXEC);
	write_file("trunc4", img, 4);
	CHECK_EQ("enoexec.elf_magic_only", exec_errno("trunc4"), ENOEXEC);
	/* header intact, program headers cut off: Linux says EIO, ENOEXEC is
	 * equally right */
	write_file("trunc100", img, 100);
	int e = exec_errno("trunc100");
	CHECK("enoexec.elf_truncated_phdrs", e == ENOEXEC || e == EIO);
	/* wrong machine */
	unsigned char *arm = malloc(sz);
	memcpy(arm, img, sz);
	arm[18] = 40; /* EM_ARM */
	arm[19] = 0;
	write_file("wrongarch", arm, sz);
	CHECK_EQ("enoexec.wrong_machine", exec_errno("wrongarch"), ENOEXEC);
	/* a relocatable object is not an executable */
	memcpy(arm, img, 64);
	arm[16] = 1; /* ET_REL */
	arm[17] = 0;
	write_file("etrel", arm, 64);
	CHECK_EQ("enoexec.et_rel", exec_errno("etrel"), ENOEXEC);
	free(arm);
	/* garbage and empty files */
	unsigned char junk[4096];
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof junk; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		junk[i] = (unsigned char)x;
	}
	junk[0] = 'G'; /* not "\177ELF", not "#!" */
	write_file("garbage", junk, sizeof junk);
	CHECK_EQ("enoexec.garbage", exec_errno("garbage"), ENOEXEC);
	write_file("empty", "", 0);
	CHECK_EQ("enoexec.empty", exec_errno("empty"), ENOEXEC);
	write_file("text", "echo hello\n", 11);
	CHECK_EQ("enoexec.text_no_shebang", exec_errno("text"), ENOEXEC);
	/* a #! script with a missing interpreter: ENOENT */
	write_file("script", "#!/nonexistent/interp\n", 22);
	CHECK_EQ("exec.script_missing_interp", exec_errno("script"), ENOENT);
	/* a working one: /bin/sh gets the script's path and runs it */
	write_file("script_ok", "#!/bin/sh\nexit 7\n", 17);
	{
		pid_t pid = fork();
		if (pid == 0) {
			char *argv[] = { "script_ok", NULL };
			char *envp[] = { NULL };
			syscall(SYS_execve, "./script_ok", argv, envp);
			_exit(127);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK("exec.script_runs", WIFEXITED(st) && WEXITSTATUS(st) == 7);
	}
	/* the process survived all of that */
	CHECK("exec.still_running", getpid() > 0);
	free(img);
	const char *files[] = { "whole", "trunc16", "trunc4", "trunc100", "wrongarch", "etrel", "garbage", "empty", "text", "script", "script_ok" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(files[i]);
}

static void put(unsigned char *at, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		at[i] = (unsigned char)(v >> (8 * i));
}

/* A minimal static program (exit(42), no libc) whose program headers lie
 * 8 KiB into the file, inside its one segment: a kernel that reads only a
 * program's first page for its headers (Shortbread, when the segments map
 * the file's pages) must read further. With the headers past the end of
 * the file it is no program. */
static void test_far_phdrs(void)
{
	enum { PHOFF = 8192, SIZE = PHOFF + 56 };
	static unsigned char elf[SIZE];
	static const unsigned char code[] = {
		0xbf, 42, 0, 0, 0, /* mov $42, %edi */
		0xb8, 60, 0, 0, 0, /* mov $60, %eax (exit) */
		0x0f, 0x05,        /* syscall */
	};
	memcpy(elf, "\177ELF\2\1\1", 7);
	put(elf + 16, 2, 2);                 /* ET_EXEC */
	put(elf + 18, 62, 2);                /* EM_X86_64 */
	put(elf + 20, 1, 4);                 /* EV_CURRENT */
	put(elf + 24, 0x400000 + 64, 8);     /* entry: the code below */
	put(elf + 32, PHOFF, 8);             /* e_phoff */
	put(elf + 52, 64, 2);                /* e_ehsize */
	put(elf + 54, 56, 2);                /* e_phentsize */
	put(elf + 56, 1, 2);                 /* e_phnum */
	memcpy(elf + 64, code, sizeof code);
	unsigned char *ph = elf + PHOFF;
	put(ph, 1, 4);                       /* PT_LOAD */
	put(ph + 4, 5, 4);                   /* R+X */
	put(ph + 16, 0x400000, 8);           /* p_vaddr (p_offset 0) */
	put(ph + 24, 0x400000, 8);
	put(ph + 32, SIZE, 8);               /* p_filesz */
	put(ph + 40, SIZE, 8);               /* p_memsz */
	put(ph + 48, 4096, 8);               /* p_align */
	write_file("farphdr", elf, SIZE);
	CHECK_EQ("exec.phdrs_past_first_page", exec_errno("farphdr"), 42);
	put(elf + 32, SIZE, 8); /* the table starts at the end of the file */
	write_file("farphdr_eof", elf, SIZE);
	int e = exec_errno("farphdr_eof");
	CHECK("enoexec.phdrs_past_eof", e == ENOEXEC || e == EIO); /* Linux: EIO */
	unlink("farphdr");
	unlink("farphdr_eof");
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--noop"))
		return 0;
	check_start(argv[0]);
	char self[PATH_MAX];
	if (argv[0][0] == '/')
		snprintf(self, sizeof self, "%s", argv[0]);
	else if (!getcwd(self, sizeof self - strlen(argv[0]) - 2))
		return 1;
	else
		snprintf(self + strlen(self), sizeof self - strlen(self), "/%s", argv[0]);
	tmp = check_mktmp();
	if (chdir(tmp))
		return 1;
	unmapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(unmapped, 4096);
	signal(SIGPIPE, SIG_IGN);
	test_efault();
	test_ebadf();
	test_einval();
	test_paths();
	test_enoexec(self);
	test_far_phdrs();
	CHECK_SYS("cleanup.chdir", chdir("/"));
	CHECK_SYS("cleanup.rmdir", rmdir(tmp));
	return check_done();
}
