/*
 * t_memfd: memfd_create and file seals. The file (fstat, /proc/self/fd,
 * fstatfs, I/O, ftruncate, shared mappings across fork), the flags
 * (MFD_CLOEXEC, MFD_ALLOW_SEALING, unknown bits, the name's length,
 * EFAULT), and F_ADD_SEALS/F_GET_SEALS: what each seal forbids and
 * allows, EBUSY for a write seal while a writable shared mapping exists,
 * F_SEAL_SEAL, F_SEAL_FUTURE_WRITE, seals of other tmpfs files and of
 * pipes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "check.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 1
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 2
#endif
#define TMPFS_MAGIC 0x01021994

static int memfd(const char *name, unsigned flags)
{
	return syscall(SYS_memfd_create, name, flags);
}

static void file_checks(void)
{
	int fd = memfd("t_memfd", 0);
	CHECK_SYS("create", fd);
	CHECK_EQ("create.no_cloexec", fcntl(fd, F_GETFD), 0);
	CHECK_EQ("create.rdwr", fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	struct stat st;
	CHECK_SYS("fstat", fstat(fd, &st));
	CHECK("fstat.regular", S_ISREG(st.st_mode));
	CHECK_EQ("fstat.mode", st.st_mode & 07777, 0777);
	CHECK_EQ("fstat.nlink", st.st_nlink, 0);
	CHECK_EQ("fstat.size", st.st_size, 0);
	CHECK_EQ("fstat.uid", st.st_uid, getuid());
	struct statfs sf;
	CHECK_SYS("fstatfs", fstatfs(fd, &sf));
	CHECK_EQ("fstatfs.tmpfs", sf.f_type, TMPFS_MAGIC);
	char link[64], target[128];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof target - 1);
	CHECK("proc_fd.readlink", n > 0);
	target[n > 0 ? n : 0] = 0;
	CHECK_STR("proc_fd.name", target, "/memfd:t_memfd (deleted)");

	CHECK_EQ("write", write(fd, "hello, memfd", 12), 12);
	char buf[32] = {0};
	CHECK_EQ("pread", pread(fd, buf, sizeof buf, 0), 12);
	CHECK_STR("pread.data", buf, "hello, memfd");
	CHECK_SYS("ftruncate.grow", ftruncate(fd, 8192));
	CHECK_SYS("fstat.after_truncate", fstat(fd, &st));
	CHECK_EQ("ftruncate.size", st.st_size, 8192);

	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK("mmap.shared", m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	CHECK_STR("mmap.sees_write", m, "hello, memfd");
	pid_t pid = fork();
	if (pid == 0) {
		strcpy(m + 4096, "from the child");
		char c[16] = {0};
		_exit(pread(fd, c, 5, 0) == 5 && strcmp(c, "hello") == 0 ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK("fork.child_read_inherited_fd", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_STR("fork.child_wrote_shared", m + 4096, "from the child");
	memset(buf, 0, sizeof buf);
	CHECK_EQ("pread.sees_mapping", pread(fd, buf, 14, 4096), 14);
	CHECK_STR("pread.mapping_data", buf, "from the child");
	munmap(m, 8192);
	close(fd);

	fd = memfd("cloexec", MFD_CLOEXEC);
	CHECK_EQ("cloexec", fcntl(fd, F_GETFD), FD_CLOEXEC);
	close(fd);
	CHECK_ERR("flags.unknown", memfd("x", 0x100), EINVAL);
	char name[300];
	memset(name, 'n', sizeof name);
	name[249] = 0;
	fd = memfd(name, 0);
	CHECK_SYS("name.249_bytes", fd);
	close(fd);
	name[249] = 'n';
	name[250] = 0;
	CHECK_ERR("name.250_bytes", memfd(name, 0), EINVAL);
	CHECK_ERR("name.null", memfd(NULL, 0), EFAULT);
	fd = memfd("", 0);
	CHECK_SYS("name.empty", fd);
	close(fd);
}

static void seal_checks(void)
{
	int fd = memfd("plain", 0);
	CHECK_EQ("seals.without_allow", fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	CHECK_ERR("seals.add_without_allow", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(fd);

	fd = open("/dev/shm/t_memfd_plain", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_EQ("seals.tmpfs_file", fcntl(fd, F_GET_SEALS), F_SEAL_SEAL);
	CHECK_ERR("seals.tmpfs_file_add", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(fd);
	unlink("/dev/shm/t_memfd_plain");
	int p[2];
	pipe(p);
	CHECK_ERR("seals.pipe_get", fcntl(p[0], F_GET_SEALS), EINVAL);
	CHECK_ERR("seals.pipe_add", fcntl(p[1], F_ADD_SEALS, F_SEAL_WRITE), EINVAL);
	CHECK_ERR("seals.pipe_read_end_add", fcntl(p[0], F_ADD_SEALS, F_SEAL_WRITE), EPERM);
	close(p[0]);
	close(p[1]);

	fd = memfd("sealed", MFD_ALLOW_SEALING);
	CHECK_EQ("seals.initial", fcntl(fd, F_GET_SEALS), 0);
	CHECK_ERR("seals.unknown_bit", fcntl(fd, F_ADD_SEALS, 0x40), EINVAL);
	CHECK_EQ("write", write(fd, "0123456789", 10), 10);
	CHECK_SYS("ftruncate", ftruncate(fd, 8192));

	CHECK_SYS("shrink.add", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK));
	CHECK_ERR("shrink.ftruncate_smaller", ftruncate(fd, 4096), EPERM);
	CHECK_SYS("shrink.ftruncate_larger", ftruncate(fd, 12288));

	CHECK_SYS("grow.add", fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
	CHECK_ERR("grow.ftruncate_larger", ftruncate(fd, 16384), EPERM);
	CHECK_SYS("grow.ftruncate_same", ftruncate(fd, 12288));
	/* each page is checked as it is written: the one inside goes */
	CHECK_EQ("grow.write_across_end", pwrite(fd, "ab", 2, 12287), 1);
	CHECK_ERR("grow.write_past_end", pwrite(fd, "ab", 2, 12288), EPERM);
	CHECK_ERR("grow.fallocate_past_end", fallocate(fd, 0, 12288, 4096), EPERM);
	CHECK_EQ("grow.write_inside", pwrite(fd, "ab", 2, 100), 2);

	char *m = mmap(NULL, 12288, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK("write.mapping", m != MAP_FAILED);
	CHECK_ERR("write.busy_while_mapped", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), EBUSY);
	CHECK_EQ("write.not_added", fcntl(fd, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW);
	if (m != MAP_FAILED)
		munmap(m, 12288);
	CHECK_SYS("write.add_after_munmap", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
	CHECK_ERR("write.write", write(fd, "x", 1), EPERM);
	CHECK_ERR("write.pwrite", pwrite(fd, "x", 1, 0), EPERM);
	CHECK_ERR("write.punch_hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), EPERM);
	CHECK("write.mmap_shared_writable",
	      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EPERM);
	char *priv = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK("write.mmap_private", priv != MAP_FAILED);
	if (priv != MAP_FAILED) {
		CHECK("write.private_reads_data", memcmp(priv, "0123456789", 10) == 0);
		priv[0] = 'X'; /* copy-on-write: the file keeps its data */
		char c;
		CHECK_EQ("write.private_copy", pread(fd, &c, 1, 0), 1);
		CHECK_EQ("write.file_unchanged", c, '0');
		munmap(priv, 4096);
	}
	char buf[16] = {0};
	CHECK_EQ("write.read_allowed", pread(fd, buf, 10, 0), 10);
	CHECK_STR("write.data_kept", buf, "0123456789");

	CHECK_SYS("seal.add", fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
	CHECK_ERR("seal.no_more", fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), EPERM);
	CHECK_EQ("seal.all", fcntl(fd, F_GET_SEALS), F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
	close(fd);

	/* F_SEAL_FUTURE_WRITE: mappings that exist keep writing */
	fd = memfd("future", MFD_ALLOW_SEALING);
	ftruncate(fd, 4096);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK_SYS("future.add_while_mapped", fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
	if (m != MAP_FAILED) {
		strcpy(m, "still writable");
		CHECK_EQ("future.old_mapping_writes", pread(fd, buf, 14, 0), 14);
		CHECK("future.data", memcmp(buf, "still writable", 14) == 0);
		munmap(m, 4096);
	}
	CHECK_ERR("future.write", write(fd, "x", 1), EPERM);
	CHECK("future.new_writable_mapping",
	      mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EPERM);
	close(fd);
}

int main(void)
{
	check_prog = "t_memfd";
	file_checks();
	seal_checks();
	return check_done();
}
