/*
 * t_fdrace: descriptors used by some threads while another closes or
 * replaces them (one shared descriptor table). A call racing close(2)
 * succeeds or fails with EBADF, nothing else; a write that succeeded put
 * its byte in the pipe even though the descriptor was closed under it,
 * and the pipe's last writer goes away with the close (the reader sees
 * end of file); dup2(2) replaces a descriptor atomically, so a thread
 * never finds it closed; a descriptor that stays open is always found.
 * Each racing phase starts only once every thread has used the
 * descriptor, and none depends on how the threads interleave.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "check.h"

#define THREADS 3
#define FD 40		/* the descriptor the threads use */
#define MAXWRITES 2000	/* per thread: well under a pipe's 64 KiB */

static atomic_int stop, used[THREADS], errors;
static atomic_long wrote[THREADS];
static ino_t ino_a, ino_b;
static atomic_int other_ino;	/* a thread saw neither file */

/* wait_used waits until every thread has used the descriptor once. */
static void wait_used(void)
{
	for (int i = 0; i < THREADS; i++)
		while (!atomic_load(&used[i]))
			sched_yield();
}

static void reset(void)
{
	atomic_store(&stop, 0);
	for (int i = 0; i < THREADS; i++) {
		atomic_store(&used[i], 0);
		atomic_store(&wrote[i], 0);
	}
	atomic_store(&errors, 0);
	atomic_store(&other_ino, 0);
}

/* writer writes one byte at a time to FD until it is closed (EBADF) or
 * MAXWRITES bytes went; any other failure counts as an error. */
static void *writer(void *arg)
{
	int i = (int)(long)arg;
	long n = 0;
	while (n < MAXWRITES) {
		ssize_t r = write(FD, "x", 1);
		if (r == 1) {
			n++;
			atomic_store(&used[i], 1);
			continue;
		}
		if (r != -1 || errno != EBADF)
			atomic_fetch_add(&errors, 1);
		break;
	}
	atomic_store(&used[i], 1);
	atomic_store(&wrote[i], n);
	return NULL;
}

/* statter fstats FD until told to stop. EBADF is allowed while ino_b is
 * 0 (the descriptor is being closed and opened), an error once it is
 * set (the descriptor is only ever replaced by dup2). */
static void *statter(void *arg)
{
	int i = (int)(long)arg;
	while (!atomic_load(&stop)) {
		struct stat st;
		if (fstat(FD, &st) == 0) {
			if (st.st_ino != ino_a && st.st_ino != ino_b)
				atomic_store(&other_ino, 1);
			atomic_store(&used[i], 1);
		} else if (errno != EBADF || ino_b != 0) {
			atomic_fetch_add(&errors, 1);
		}
		sched_yield(); /* with one CPU, let the closing thread run */
	}
	return NULL;
}

/* reader preads FD, which never closes, while others churn the table. */
static void *reader(void *arg)
{
	int i = (int)(long)arg;
	while (!atomic_load(&stop)) {
		char c;
		if (pread(FD, &c, 1, 0) != 1 || c != 'a')
			atomic_fetch_add(&errors, 1);
		atomic_store(&used[i], 1);
		sched_yield();
	}
	return NULL;
}

static void start(pthread_t *th, void *(*fn)(void *))
{
	reset();
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(long)i)) {
			perror("pthread_create");
			exit(1);
		}
}

static void join(pthread_t *th)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
}

static ino_t ino_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	pthread_t th[THREADS];

	/* Writers on a pipe's only write end while it is closed. */
	int p[2];
	CHECK_SYS("pipe", pipe(p));
	CHECK_EQ("pipe.dup", dup2(p[1], FD), FD);
	close(p[1]);
	start(th, writer);
	wait_used();
	CHECK_SYS("close.racing_writes", close(FD));
	join(th);
	CHECK_EQ("close.writes_ok_or_ebadf", atomic_load(&errors), 0);
	long sent = 0;
	for (int i = 0; i < THREADS; i++)
		sent += atomic_load(&wrote[i]);
	long got = 0;
	char buf[4096];
	ssize_t r;
	while ((r = read(p[0], buf, sizeof buf)) > 0)
		got += r;
	CHECK_EQ("close.eof_after_last_write", r, 0);
	CHECK_EQ("close.every_write_arrived", got, sent);
	close(p[0]);

	/* fstat while the descriptor is closed and opened again. */
	int a = open("/proc/self/exe", O_RDONLY);
	int b = open("/", O_RDONLY | O_DIRECTORY);
	CHECK("open.two_files", a >= 0 && b >= 0);
	ino_a = ino_of(a);
	ino_b = 0;
	CHECK_EQ("closing.dup", dup2(a, FD), FD);
	start(th, statter);
	wait_used();
	for (int k = 0; k < 200; k++) {
		close(FD);
		dup2(k % 2 ? a : b, FD);
		sched_yield();
	}
	join(th);
	CHECK_EQ("closing.stat_ok_or_ebadf", atomic_load(&errors), 0);

	/* dup2 over a descriptor others use: never seen closed. */
	ino_b = ino_of(b);
	CHECK("dup2.inodes", ino_a != 0 && ino_b != 0 && ino_a != ino_b);
	start(th, statter);
	wait_used();
	int failed = 0;
	for (int k = 0; k < 200; k++) {
		failed += dup2(k % 2 ? a : b, FD) != FD;
		sched_yield();
	}
	join(th);
	CHECK_EQ("dup2.all_done", failed, 0);
	CHECK_EQ("dup2.never_ebadf", atomic_load(&errors), 0);
	CHECK_EQ("dup2.only_the_two_files", atomic_load(&other_ino), 0);
	close(FD);

	/* A descriptor nobody touches, read while others open, dup and
	 * close many (the table grows past its first size and shrinks). */
	char tmpl[] = "/tmp/t_fdrace.XXXXXX";
	int f = mkstemp(tmpl);
	CHECK("tmp.create", f >= 0 && write(f, "a", 1) == 1);
	unlink(tmpl);
	CHECK_EQ("steady.dup", dup2(f, FD), FD);
	close(f);
	start(th, reader);
	wait_used();
	int bad = 0;
	for (int k = 0; k < 20; k++) {
		int fds[100];
		for (int j = 0; j < 100; j++) {
			fds[j] = dup(a);
			bad += fds[j] < 0;
		}
		bad += dup2(a, 300 + k) != 300 + k;
		for (int j = 0; j < 100; j++)
			close(fds[j]);
		close(300 + k);
	}
	join(th);
	CHECK_EQ("steady.churn", bad, 0);
	CHECK_EQ("steady.always_found", atomic_load(&errors), 0);
	close(FD);
	close(a);
	close(b);
	return check_done();
}
