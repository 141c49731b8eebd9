/*
 * t_splice: splice, tee, vmsplice and copy_file_range moving data (files,
 * pipes, sockets; offsets given or the file positions; partial moves
 * leaving the rest in the pipe; blocking and SPLICE_F_NONBLOCK; end of
 * file) and their errors as Linux orders them; sync_file_range,
 * posix_fadvise (fadvise64) and readahead on the files they accept and
 * the errors for the rest.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "check.h"

#define A "/tmp/t_splice_a"
#define B "/tmp/t_splice_b"

static int file_with(const char *path, const char *data, size_t n)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && write(fd, data, n) != (ssize_t)n)
		return -1;
	return fd;
}

static ssize_t drain(int fd, char *buf, size_t n)
{
	ssize_t got = read(fd, buf, n);
	if (got >= 0)
		buf[got] = 0;
	return got;
}

static void splice_checks(void)
{
	char buf[256];
	int p[2], q[2];
	pipe(p);
	pipe(q);
	int f = file_with(A, "0123456789abcdef", 16);
	int g = file_with(B, "", 0);

	CHECK_EQ("errors.zero_len_first", splice(-1, NULL, -1, NULL, 0, 0), 0);
	CHECK_ERR("errors.flags", splice(f, NULL, p[1], NULL, 4, 0x100), EINVAL);
	CHECK_ERR("errors.badf", splice(-1, NULL, p[1], NULL, 4, 0), EBADF);
	CHECK_ERR("errors.no_pipe", splice(f, NULL, g, NULL, 4, 0), EINVAL);
	loff_t off = 0;
	CHECK_ERR("errors.offset_on_pipe", splice(p[0], &off, g, NULL, 4, 0), ESPIPE);
	CHECK_ERR("errors.offset_on_out_pipe", splice(f, NULL, p[1], &off, 4, 0), ESPIPE);
	CHECK_ERR("errors.write_end_as_input", splice(p[1], NULL, g, NULL, 4, 0), EBADF);
	CHECK_ERR("errors.same_pipe", splice(p[0], NULL, p[1], NULL, 4, 0), EINVAL);
	int ev = eventfd(1, 0);
	CHECK_ERR("errors.eventfd_source", splice(ev, NULL, p[1], NULL, 8, 0), EINVAL);
	close(ev);

	/* file -> pipe at an offset: the position stays */
	off = 4;
	CHECK_EQ("to_pipe.offset", splice(f, &off, p[1], NULL, 6, 0), 6);
	CHECK_EQ("to_pipe.offset_advanced", off, 10);
	CHECK_EQ("to_pipe.position_kept", lseek(f, 0, SEEK_CUR), 16);
	CHECK_EQ("to_pipe.read", drain(p[0], buf, sizeof buf - 1), 6);
	CHECK_STR("to_pipe.data", buf, "456789");
	/* at the position: it moves */
	lseek(f, 10, SEEK_SET);
	CHECK_EQ("to_pipe.position", splice(f, NULL, p[1], NULL, 100, 0), 6);
	CHECK_EQ("to_pipe.position_advanced", lseek(f, 0, SEEK_CUR), 16);
	CHECK_EQ("to_pipe.eof", splice(f, NULL, p[1], NULL, 100, 0), 0);

	/* pipe -> file, part of what is buffered: the rest stays */
	CHECK_EQ("from_pipe.partial", splice(p[0], NULL, g, NULL, 4, 0), 4);
	CHECK_EQ("from_pipe.rest_in_pipe", drain(p[0], buf, sizeof buf - 1), 2);
	CHECK_STR("from_pipe.rest", buf, "ef");
	CHECK_EQ("from_pipe.file_pos", lseek(g, 0, SEEK_CUR), 4);
	write(p[1], "XYZ", 3);
	off = 100;
	CHECK_EQ("from_pipe.offset", splice(p[0], NULL, g, &off, 3, 0), 3);
	CHECK_EQ("from_pipe.offset_advanced", off, 103);
	CHECK_EQ("from_pipe.pread", pread(g, buf, 4, 0), 4);
	CHECK("from_pipe.data", memcmp(buf, "abcd", 4) == 0);
	CHECK_EQ("from_pipe.pread_at_offset", pread(g, buf, 3, 100), 3);
	CHECK("from_pipe.data_at_offset", memcmp(buf, "XYZ", 3) == 0);
	CHECK_ERR("from_pipe.nonblock_empty", splice(p[0], NULL, g, NULL, 4, SPLICE_F_NONBLOCK), EAGAIN);
	int ap = open(B, O_WRONLY | O_APPEND);
	write(p[1], "x", 1);
	CHECK_ERR("from_pipe.append", splice(p[0], NULL, ap, NULL, 1, 0), EINVAL);
	close(ap);
	drain(p[0], buf, 1);

	/* pipe -> pipe */
	write(p[1], "hello", 5);
	CHECK_EQ("pipe_pipe", splice(p[0], NULL, q[1], NULL, 64, 0), 5);
	CHECK_EQ("pipe_pipe.read", drain(q[0], buf, sizeof buf - 1), 5);
	CHECK_STR("pipe_pipe.data", buf, "hello");

	/* a full pipe: the file stays where it was */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	char big[4096];
	memset(big, 'f', sizeof big);
	while (write(p[1], big, sizeof big) > 0)
		;
	fcntl(p[1], F_SETFL, 0);
	lseek(f, 0, SEEK_SET);
	CHECK_ERR("to_pipe.full_nonblock", splice(f, NULL, p[1], NULL, 4, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_EQ("to_pipe.full_position", lseek(f, 0, SEEK_CUR), 0);
	while (read(p[0], big, sizeof big) == sizeof big && fcntl(p[0], F_SETFL, O_NONBLOCK) == 0)
		;
	fcntl(p[0], F_SETFL, 0);

	/* blocking: the data comes later from a child */
	pid_t pid = fork();
	if (pid == 0) {
		usleep(100 * 1000);
		write(p[1], "late", 4);
		_exit(0);
	}
	ftruncate(g, 0);
	CHECK_EQ("from_pipe.blocks_until_data", splice(p[0], NULL, g, &(loff_t){0}, 4, 0), 4);
	waitpid(pid, NULL, 0);
	CHECK_EQ("from_pipe.late_pread", pread(g, buf, 4, 0), 4);
	CHECK("from_pipe.late_data", memcmp(buf, "late", 4) == 0);

	/* sockets */
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	write(sv[0], "sock", 4);
	CHECK_EQ("socket_to_pipe", splice(sv[1], NULL, p[1], NULL, 64, 0), 4);
	CHECK_EQ("pipe_to_socket", splice(p[0], NULL, sv[0], NULL, 64, 0), 4);
	CHECK_EQ("socket.read", drain(sv[1], buf, sizeof buf - 1), 4);
	CHECK_STR("socket.data", buf, "sock");
	close(sv[0]);
	close(sv[1]);

	/* more than a pipe holds: one call moves no more than fits */
	int h = open("/tmp/t_splice_big", O_RDWR | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 32; i++)
		write(h, big, sizeof big);
	ssize_t moved = splice(h, &(loff_t){0}, q[1], NULL, 128 << 10, 0);
	CHECK("to_pipe.at_most_capacity", moved > 0 && moved <= 65536);
	close(h);
	unlink("/tmp/t_splice_big");

	close(p[1]);
	CHECK_EQ("from_pipe.eof", splice(p[0], NULL, g, NULL, 4, 0), 0);
	close(p[0]);
	close(q[0]);
	close(q[1]);
	close(f);
	close(g);
}

static void tee_vmsplice_checks(void)
{
	char buf[64];
	int p[2], q[2];
	pipe(p);
	pipe(q);
	int f = file_with(A, "x", 1);
	write(p[1], "teedata", 7);
	CHECK_EQ("tee", tee(p[0], q[1], 64, 0), 7);
	CHECK_EQ("tee.copy", drain(q[0], buf, sizeof buf - 1), 7);
	CHECK_STR("tee.copy_data", buf, "teedata");
	CHECK_EQ("tee.source_kept", drain(p[0], buf, sizeof buf - 1), 7);
	CHECK_ERR("tee.nonblock_empty", tee(p[0], q[1], 64, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_ERR("tee.not_pipe", tee(f, q[1], 64, 0), EINVAL);
	CHECK_ERR("tee.same_pipe", tee(p[0], p[1], 64, 0), EINVAL);
	CHECK_ERR("tee.flags", tee(p[0], q[1], 64, 0x100), EINVAL);
	CHECK_ERR("tee.badf", tee(-1, q[1], 64, 0), EBADF);

	struct iovec iov[2] = {{"vm", 2}, {"splice", 6}};
	CHECK_EQ("vmsplice.to_pipe", vmsplice(p[1], iov, 2, 0), 8);
	CHECK_EQ("vmsplice.read", drain(p[0], buf, sizeof buf - 1), 8);
	CHECK_STR("vmsplice.data", buf, "vmsplice");
	write(p[1], "back", 4);
	char out[8] = {0};
	struct iovec r = {out, sizeof out};
	CHECK_EQ("vmsplice.from_pipe", vmsplice(p[0], &r, 1, 0), 4);
	CHECK("vmsplice.from_pipe_data", memcmp(out, "back", 4) == 0);
	CHECK_ERR("vmsplice.from_empty_nonblock", vmsplice(p[0], &r, 1, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_ERR("vmsplice.not_pipe", vmsplice(f, iov, 1, 0), EBADF);
	CHECK_ERR("vmsplice.flags", vmsplice(p[1], iov, 1, 0x100), EINVAL);
	static struct iovec many[1025];
	for (int i = 0; i < 1025; i++)
		many[i] = (struct iovec){"a", 1};
	CHECK_ERR("vmsplice.too_many_segments", vmsplice(p[1], many, 1025, 0), EINVAL);
	close(p[1]);
	CHECK_EQ("tee.eof", tee(p[0], q[1], 64, 0), 0);
	close(p[0]);
	close(q[0]);
	close(q[1]);
	close(f);
}

static void copy_range_checks(void)
{
	static char data[300000], back[300000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 7 + i / 4096);
	int f = file_with(A, data, sizeof data);
	int g = file_with(B, "", 0);
	lseek(f, 0, SEEK_SET);
	ssize_t total = 0, n;
	while ((n = copy_file_range(f, NULL, g, NULL, sizeof data, 0)) > 0)
		total += n;
	CHECK_EQ("copy.whole", total, sizeof data);
	CHECK_EQ("copy.eof", n, 0);
	CHECK_EQ("copy.in_position", lseek(f, 0, SEEK_CUR), sizeof data);
	CHECK_EQ("copy.out_position", lseek(g, 0, SEEK_CUR), sizeof data);
	CHECK_EQ("copy.read_back", pread(g, back, sizeof back, 0), sizeof back);
	CHECK("copy.same_bytes", memcmp(data, back, sizeof data) == 0);

	loff_t in = 10, out = 5;
	CHECK_EQ("copy.offsets", copy_file_range(f, &in, g, &out, 20, 0), 20);
	CHECK_EQ("copy.in_offset", in, 30);
	CHECK_EQ("copy.out_offset", out, 25);
	CHECK_EQ("copy.positions_kept", lseek(f, 0, SEEK_CUR), sizeof data);
	CHECK_EQ("copy.offset_pread", pread(g, back, 20, 5), 20);
	CHECK("copy.offset_data", memcmp(back, data + 10, 20) == 0);
	in = sizeof data - 5;
	out = 0;
	CHECK_EQ("copy.short_at_end", copy_file_range(f, &in, g, &out, 100, 0), 5);

	in = 0, out = 1000;
	CHECK_SYS("copy.same_file_apart", copy_file_range(f, &in, f, &out, 100, 0));
	in = 0, out = 50;
	CHECK_ERR("copy.same_file_overlap", copy_file_range(f, &in, f, &out, 100, 0), EINVAL);
	CHECK_ERR("copy.flags", copy_file_range(f, &(loff_t){0}, g, &(loff_t){0}, 1, 1), EINVAL);
	CHECK_ERR("copy.badf", copy_file_range(-1, NULL, g, NULL, 1, 0), EBADF);
	int p[2];
	pipe(p);
	CHECK_ERR("copy.pipe", copy_file_range(f, &(loff_t){0}, p[1], NULL, 1, 0), EINVAL);
	int d = open("/tmp", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("copy.dir", copy_file_range(d, NULL, g, NULL, 1, 0), EISDIR);
	int ro = open(B, O_RDONLY), ap = open(B, O_WRONLY | O_APPEND);
	CHECK_ERR("copy.out_readonly", copy_file_range(f, &(loff_t){0}, ro, NULL, 1, 0), EBADF);
	CHECK_ERR("copy.out_append", copy_file_range(f, &(loff_t){0}, ap, NULL, 1, 0), EBADF);
	CHECK_ERR("copy.offset_wraps", copy_file_range(f, &(loff_t){-1}, g, &(loff_t){0}, 1, 0), EOVERFLOW);
	CHECK_ERR("copy.negative_offset", copy_file_range(f, &(loff_t){-5}, g, &(loff_t){0}, 1, 0), EINVAL);

	/* the hints */
	CHECK_SYS("sync_file_range", sync_file_range(f, 0, 100, SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
	CHECK_SYS("sync_file_range.dir", sync_file_range(d, 0, 0, 0));
	CHECK_ERR("sync_file_range.flags", sync_file_range(f, 0, 100, 8), EINVAL);
	CHECK_ERR("sync_file_range.negative", sync_file_range(f, -1, 100, 0), EINVAL);
	CHECK_ERR("sync_file_range.pipe", sync_file_range(p[0], 0, 100, 0), ESPIPE);
	CHECK_ERR("sync_file_range.badf", sync_file_range(-1, 0, 100, 0), EBADF);
	int advice_ok = 1;
	for (int adv = 0; adv <= 5; adv++)
		advice_ok &= syscall(SYS_fadvise64, f, 0, 4096, adv) == 0;
	CHECK("fadvise.every_advice", advice_ok);
	CHECK_EQ("posix_fadvise", posix_fadvise(f, 0, 0, POSIX_FADV_SEQUENTIAL), 0);
	CHECK_ERR("fadvise.bad_advice", syscall(SYS_fadvise64, f, 0, 4096, 99), EINVAL);
	CHECK_ERR("fadvise.pipe", syscall(SYS_fadvise64, p[0], 0, 4096, 0), ESPIPE);
	CHECK_ERR("fadvise.badf", syscall(SYS_fadvise64, -1, 0, 4096, 0), EBADF);
	int wo = open(B, O_WRONLY);
	CHECK_SYS("readahead", readahead(f, 0, 65536));
	CHECK_ERR("readahead.writeonly", readahead(wo, 0, 4096), EBADF);
	CHECK_ERR("readahead.pipe", readahead(p[0], 0, 4096), EINVAL);
	CHECK_ERR("readahead.dir", readahead(d, 0, 4096), EINVAL);
	close(wo);
	close(ro);
	close(ap);
	close(d);
	close(p[0]);
	close(p[1]);
	close(f);
	close(g);
}

int main(void)
{
	check_prog = "t_splice";
	signal(SIGPIPE, SIG_IGN);
	splice_checks();
	tee_vmsplice_checks();
	copy_range_checks();
	unlink(A);
	unlink(B);
	return check_done();
}
