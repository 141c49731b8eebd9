/*
 * t_fsops: calls about file systems: statfs and fstatfs (types by their
 * magic numbers, tmpfs's blocks following what its files hold, errors).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include "check.h"

#define TMPFS_MAGIC 0x01021994
#define PROC_SUPER_MAGIC 0x9fa0
#define PIPEFS_MAGIC 0x50495045
#define SOCKFS_MAGIC 0x534f434b

static void test_statfs(const char *tmp)
{
	struct statfs s;
	CHECK_SYS("statfs.root", statfs("/", &s));
	CHECK_EQ("statfs.root_tmpfs", s.f_type, TMPFS_MAGIC);
	CHECK_SYS("statfs.proc", statfs("/proc", &s));
	CHECK_EQ("statfs.proc_type", s.f_type, PROC_SUPER_MAGIC);
	CHECK_EQ("statfs.proc_no_blocks", s.f_blocks, 0);
	CHECK_SYS("statfs.proc_file", statfs("/proc/self/stat", &s));
	CHECK_EQ("statfs.proc_file_type", s.f_type, PROC_SUPER_MAGIC);
	CHECK_SYS("statfs.dev", statfs("/dev", &s));
	CHECK_EQ("statfs.dev_tmpfs", s.f_type, TMPFS_MAGIC);

	CHECK_SYS("statfs.tmp", statfs(tmp, &s));
	CHECK_EQ("statfs.tmp_type", s.f_type, TMPFS_MAGIC);
	CHECK_EQ("statfs.tmp_bsize", s.f_bsize, 4096);
	CHECK_EQ("statfs.tmp_frsize", s.f_frsize, 4096);
	CHECK_EQ("statfs.tmp_namelen", s.f_namelen, 255);
	CHECK("statfs.tmp_blocks", s.f_blocks > 256);
	CHECK("statfs.tmp_bfree_le_blocks", s.f_bfree <= s.f_blocks && s.f_bfree > 0);
	CHECK_EQ("statfs.tmp_bavail", s.f_bavail, s.f_bfree);
	CHECK_EQ("statfs.tmp_rw", s.f_flags & ST_RDONLY, 0);

	/* 4 MiB written: 1024 more blocks in use (the free count also moves
	 * with the rest of memory on Shortbread: not compared) */
	char path[256];
	snprintf(path, sizeof path, "%s/big", tmp);
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK_SYS("statfs.create", fd);
	struct statfs before, after;
	fstatfs(fd, &before);
	static char buf[1 << 20];
	memset(buf, 'x', sizeof buf);
	int ok = 1;
	for (int i = 0; i < 4; i++)
		ok &= write(fd, buf, sizeof buf) == sizeof buf;
	CHECK("statfs.write", ok);
	CHECK_SYS("statfs.fstatfs", fstatfs(fd, &after));
	CHECK_EQ("statfs.fstatfs_type", after.f_type, TMPFS_MAGIC);
	long used_before = before.f_blocks - before.f_bfree, used_after = after.f_blocks - after.f_bfree;
	CHECK("statfs.used_grew", used_after - used_before >= 1024 && used_after - used_before < 1024 + 256);
	close(fd);
	unlink(path);
	CHECK_SYS("statfs.after_unlink", statfs(tmp, &s));
	long used_gone = s.f_blocks - s.f_bfree;
	CHECK("statfs.used_given_back", used_gone < used_after - 1000);

	struct statvfs v;
	CHECK_SYS("statvfs", statvfs(tmp, &v));
	CHECK_EQ("statvfs.bsize", v.f_bsize, 4096);
	CHECK_EQ("statvfs.namemax", v.f_namemax, 255);

	int p[2];
	CHECK_SYS("statfs.pipe", pipe(p));
	CHECK_SYS("statfs.fstatfs_pipe", fstatfs(p[0], &s));
	CHECK_EQ("statfs.pipefs", s.f_type, PIPEFS_MAGIC);
	close(p[0]);
	close(p[1]);
	int sv[2];
	CHECK_SYS("statfs.socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_SYS("statfs.fstatfs_socket", fstatfs(sv[0], &s));
	CHECK_EQ("statfs.sockfs", s.f_type, SOCKFS_MAGIC);
	close(sv[0]);
	close(sv[1]);
	int pfd = open("/proc", O_PATH);
	CHECK_SYS("statfs.o_path", fstatfs(pfd, &s));
	CHECK_EQ("statfs.o_path_type", s.f_type, PROC_SUPER_MAGIC);
	close(pfd);

	CHECK_ERR("statfs.enoent", statfs("/no/such/dir", &s), ENOENT);
	CHECK_ERR("statfs.enotdir", statfs("/proc/self/stat/x", &s), ENOTDIR);
	CHECK_ERR("statfs.empty", statfs("", &s), ENOENT);
	CHECK_ERR("statfs.path_efault", syscall(SYS_statfs, (char *)8, &s), EFAULT);
	CHECK_ERR("statfs.buf_efault", syscall(SYS_statfs, "/", (void *)8), EFAULT);
	CHECK_ERR("fstatfs.ebadf", fstatfs(-1, &s), EBADF);
	CHECK_ERR("fstatfs.ebadf_closed", fstatfs(999, &s), EBADF);
	CHECK_ERR("fstatfs.buf_efault", syscall(SYS_fstatfs, 0, (void *)8), EFAULT);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *tmp = check_mktmp();
	test_statfs(tmp);
	rmdir(tmp);
	return check_done();
}
