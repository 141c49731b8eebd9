/* blkbench: block-device benchmarks, run inside the guest on Shortbread
 * and on Linux alike (bench/blkbench boots both with the same QEMU disk
 * and compares).
 *
 *   blkbench DEVICE MIB OPS
 *
 * on the first MIB MiB of DEVICE (whose contents it destroys), opened
 * with O_DIRECT so that the page cache is out of the way, in 4 KiB
 * requests from a 4 KiB-aligned buffer:
 *   seqwrite    MIB MiB written in order, then fsync     MB/s
 *   seqread     the same read back                      MB/s
 *   randread    OPS reads at random 4 KiB offsets, one at a time   IOPS
 *   randwrite   OPS writes likewise                     IOPS
 *   randread32  OPS reads from 32 threads at once (queue depth 32) IOPS
 *   randwrite32 OPS writes likewise                     IOPS
 *   fsync       a 4 KiB write and fsync, OPS/8 times    us per pair
 * and then through the page cache (the device opened without O_DIRECT):
 *   seqread_cold    seqread after BLKFLSBUF emptied the cache (the
 *                   disk, with read-ahead)                 MB/s
 *   seqread_cached  seqread again: every page cached       MB/s
 * Each runs REPS times; the median is printed as
 *   result NAME VALUE UNIT
 * Times come from CLOCK_MONOTONIC in the guest. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 3
#define BS 4096
#define THREADS 32

static int fd;
static long long region; /* bytes */
static long ops;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "blkbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *block(void)
{
	void *b;
	if (posix_memalign(&b, BS, BS))
		die("posix_memalign");
	memset(b, 0x5a, BS);
	return b;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, const char *unit)
{
	qsort(v, REPS, sizeof v[0], cmp_d);
	printf("result %s %.1f %s\n", name, v[REPS / 2], unit);
}

/* the nanoseconds one sequential pass takes */
static long long sequential(int write)
{
	void *b = block();
	long long t = now_ns();
	for (long long off = 0; off < region; off += BS) {
		ssize_t n = write ? pwrite(fd, b, BS, off) : pread(fd, b, BS, off);
		if (n != BS)
			die(write ? "pwrite" : "pread");
	}
	if (write && fsync(fd))
		die("fsync");
	t = now_ns() - t;
	free(b);
	return t;
}

struct job {
	int write;
	long n;
	unsigned seed;
};

static void *random_io(void *arg)
{
	struct job *j = arg;
	void *b = block();
	unsigned x = j->seed;
	long long blocks = region / BS;
	for (long i = 0; i < j->n; i++) {
		x = x * 1664525u + 1013904223u;
		off_t off = (off_t)((x >> 4) % blocks) * BS;
		ssize_t n = j->write ? pwrite(fd, b, BS, off) : pread(fd, b, BS, off);
		if (n != BS)
			die(j->write ? "pwrite" : "pread");
	}
	free(b);
	return NULL;
}

/* the nanoseconds ops random requests take from threads threads */
static long long random_pass(int write, int threads, unsigned seed)
{
	pthread_t t[THREADS];
	struct job j[THREADS];
	long long start = now_ns();
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ write, ops / threads, seed + 7919u * (unsigned)i };
		if (pthread_create(&t[i], NULL, random_io, &j[i]))
			die("pthread_create");
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return now_ns() - start;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: blkbench DEVICE MIB OPS\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0)
		die(argv[1]);
	region = atoll(argv[2]) << 20;
	ops = atol(argv[3]);
	double v[REPS];
	const double mb = (double)region / 1e6;
	for (int r = 0; r < REPS; r++)
		v[r] = mb / (sequential(1) / 1e9);
	report("seqwrite", v, "MB/s");
	for (int r = 0; r < REPS; r++)
		v[r] = mb / (sequential(0) / 1e9);
	report("seqread", v, "MB/s");
	static const struct {
		const char *name;
		int write, threads;
	} rnd[] = { { "randread", 0, 1 }, { "randwrite", 1, 1 }, { "randread32", 0, THREADS }, { "randwrite32", 1, THREADS } };
	for (size_t k = 0; k < sizeof rnd / sizeof rnd[0]; k++) {
		for (int r = 0; r < REPS; r++)
			v[r] = (double)(ops / rnd[k].threads * rnd[k].threads) / (random_pass(rnd[k].write, rnd[k].threads, 12345u + (unsigned)r) / 1e9);
		report(rnd[k].name, v, "IOPS");
	}
	void *b = block();
	long n = ops / 8;
	for (int r = 0; r < REPS; r++) {
		long long t = now_ns();
		for (long i = 0; i < n; i++)
			if (pwrite(fd, b, BS, (off_t)(i % 64) * BS) != BS || fsync(fd))
				die("pwrite+fsync");
		v[r] = (now_ns() - t) / 1e3 / (double)n;
	}
	report("fsync", v, "us");
	close(fd);
	fd = open(argv[1], O_RDWR);
	if (fd < 0)
		die(argv[1]);
	for (int r = 0; r < REPS; r++) {
		if (ioctl(fd, _IO(0x12, 97) /* BLKFLSBUF */, 0))
			die("BLKFLSBUF");
		v[r] = mb / (sequential(0) / 1e9);
	}
	report("seqread_cold", v, "MB/s");
	for (int r = 0; r < REPS; r++)
		v[r] = mb / (sequential(0) / 1e9);
	report("seqread_cached", v, "MB/s");
	return 0;
}
