/*
 * t_shm: POSIX shared memory and named semaphores as musl implements them,
 * on the tmpfs mounted at /dev/shm: shm_open/ftruncate/mmap shared between
 * a parent and a child, named semaphores (sem_open, which creates, maps
 * and links a file there) handing a counter back and forth, O_EXCL,
 * unlink semantics, and permissions for another user in the sticky
 * directory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#define TMPFS_MAGIC 0x01021994
#define SHM_NAME "/t_shm_region"
#define SEM_PING "/t_shm_ping"
#define SEM_PONG "/t_shm_pong"
#define ROUNDS 200
#define REGION (64 << 10)

struct region {
	volatile uint64_t counter;
	char text[64];
};

static int timed_wait(sem_t *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	return sem_timedwait(s, &ts);
}

/* the child: opens everything by name, writes, then plays pong */
static int child(void)
{
	int fd = shm_open(SHM_NAME, O_RDWR, 0);
	if (fd < 0)
		return 10;
	struct region *r = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED)
		return 11;
	close(fd);
	sem_t *ping = sem_open(SEM_PING, 0), *pong = sem_open(SEM_PONG, 0);
	if (ping == SEM_FAILED || pong == SEM_FAILED)
		return 12;
	strcpy(r->text, "written by the child");
	for (int i = 0; i < ROUNDS; i++) {
		if (timed_wait(ping))
			return 13;
		if (r->counter != (uint64_t)2 * i + 1)
			return 14;
		r->counter++;
		if (sem_post(pong))
			return 15;
	}
	return 0;
}

static void nobody_probe(int out)
{
	/* root's 0600 object is closed to others */
	put(out, rc(shm_open(SHM_NAME, O_RDONLY, 0)));
	/* the sticky, world-writable directory lets anyone create... */
	int fd = shm_open("/t_shm_nobody", O_CREAT | O_EXCL | O_RDWR, 0600);
	put(out, rc(fd));
	put(out, rc(fd >= 0 ? ftruncate(fd, 4096) : -1));
	/* ...but not remove another user's file */
	put(out, rc(shm_unlink(SHM_NAME)));
	put(out, rc(shm_unlink("/t_shm_nobody")));
}

int main(void)
{
	check_prog = "t_shm";
	shm_unlink(SHM_NAME);
	sem_unlink(SEM_PING);
	sem_unlink(SEM_PONG);

	struct statfs sf;
	CHECK_SYS("devshm.statfs", statfs("/dev/shm", &sf));
	CHECK_EQ("devshm.is_tmpfs", sf.f_type, TMPFS_MAGIC);
	struct stat st;
	CHECK_SYS("devshm.stat", stat("/dev/shm", &st));
	CHECK_EQ("devshm.mode_1777", st.st_mode & 07777, 01777);

	int fd = shm_open(SHM_NAME, O_CREAT | O_EXCL | O_RDWR, 0600);
	CHECK_SYS("shm_open.create", fd);
	CHECK_ERR("shm_open.excl", shm_open(SHM_NAME, O_CREAT | O_EXCL | O_RDWR, 0600), EEXIST);
	CHECK_SYS("shm_open.file_in_devshm", stat("/dev/shm" SHM_NAME, &st));
	CHECK_EQ("shm_open.mode", st.st_mode & 07777, 0600);
	CHECK_EQ("shm_open.cloexec", fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	CHECK_SYS("shm.ftruncate", ftruncate(fd, REGION));
	struct region *r = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK("shm.mmap", r != MAP_FAILED);
	if (r == MAP_FAILED)
		return check_done();
	close(fd);
	r->counter = 0;

	sem_t *ping = sem_open(SEM_PING, O_CREAT | O_EXCL, 0600, 0);
	sem_t *pong = sem_open(SEM_PONG, O_CREAT | O_EXCL, 0600, 0);
	CHECK("sem_open.create", ping != SEM_FAILED && pong != SEM_FAILED);
	if (ping == SEM_FAILED || pong == SEM_FAILED)
		return check_done();
	CHECK("sem_open.excl", sem_open(SEM_PING, O_CREAT | O_EXCL, 0600, 0) == SEM_FAILED && errno == EEXIST);
	/* musl names the file after the semaphore (glibc adds "sem.") */
	CHECK_SYS("sem_open.file_in_devshm", stat("/dev/shm" SEM_PING, &st));
	int v = -1;
	CHECK_SYS("sem_getvalue", sem_getvalue(ping, &v));
	CHECK_EQ("sem_getvalue.initial", v, 0);

	pid_t pid = fork();
	if (pid == 0)
		_exit(child());
	int ok = 1;
	for (int i = 0; i < ROUNDS && ok; i++) {
		r->counter++;
		ok = sem_post(ping) == 0 && timed_wait(pong) == 0 && r->counter == (uint64_t)2 * i + 2;
	}
	CHECK("sem.ping_pong", ok);
	CHECK_EQ("shm.counter", r->counter, 2 * ROUNDS);
	int status = -1;
	waitpid(pid, &status, 0);
	CHECK("sem.child_status", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		printf("# child status %#x\n", status);
	CHECK_STR("shm.child_wrote", r->text, "written by the child");

	/* a second open of the name sees the same pages */
	fd = shm_open(SHM_NAME, O_RDONLY, 0);
	CHECK_SYS("shm_open.again", fd);
	char buf[32] = {0};
	CHECK_EQ("shm.read_through_fd", pread(fd, buf, 20, offsetof(struct region, text)), 20);
	CHECK_STR("shm.read_matches", buf, "written by the child");
	close(fd);

	int res[5];
	int got = probe(nobody_probe, 1, res, 5);
	CHECK_EQ("nobody.probe", got, 5);
	if (got == 5) {
		CHECK_EQ("nobody.open_root_0600", res[0], EACCES);
		CHECK_EQ("nobody.create", res[1], 0);
		CHECK_EQ("nobody.ftruncate", res[2], 0);
		CHECK_EQ("nobody.unlink_roots_sticky", res[3], EPERM);
		CHECK_EQ("nobody.unlink_own", res[4], 0);
	}

	/* unlink removes the name; the mapping lives on */
	CHECK_SYS("shm_unlink", shm_unlink(SHM_NAME));
	CHECK_ERR("shm_unlink.gone", shm_unlink(SHM_NAME), ENOENT);
	CHECK_ERR("shm_open.gone", shm_open(SHM_NAME, O_RDWR, 0), ENOENT);
	CHECK_EQ("shm.mapping_outlives_name", r->counter, 2 * ROUNDS);
	CHECK_SYS("munmap", munmap(r, REGION));

	CHECK_SYS("sem_close", sem_close(ping));
	CHECK_SYS("sem_unlink", sem_unlink(SEM_PING));
	CHECK_SYS("sem_unlink.pong", sem_unlink(SEM_PONG));
	CHECK("sem_open.gone", sem_open(SEM_PING, 0) == SEM_FAILED && errno == ENOENT);
	CHECK_ERR("sem_unlink.gone", sem_unlink(SEM_PING), ENOENT);
	CHECK_EQ("sem.still_usable_after_unlink", sem_post(pong), 0);
	return check_done();
}
