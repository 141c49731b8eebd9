/*
 * t_procstat: /proc/stat as top, vmstat, mpstat and iostat read it: the
 * aggregate and per-CPU time lines, user time following a busy loop,
 * system time following a system-call loop, nice time following a
 * process with nice 5 that spins, every figure moving forward,
 * ctxt following blocking switches, btime, processes following a fork,
 * procs_running and procs_blocked. /proc/vmstat as vmstat and free
 * read it: the counts by their names, pgfault following page faults.
 * An open of a /proc file with O_TRUNC works (shells redirect so).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

#define MAXCPU 64

struct stat_snap {
	unsigned long long cpu[10];		/* the aggregate line */
	unsigned long long per[MAXCPU][10];	/* cpuN lines */
	int ncpu, fields;
	long long ctxt, btime, processes, running, blocked;
	int ok;
};

static void snap(struct stat_snap *s)
{
	memset(s, 0, sizeof *s);
	s->ctxt = s->btime = s->processes = s->running = s->blocked = -1;
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		unsigned long long v[10];
		int cpu;
		if (strncmp(line, "cpu ", 4) == 0) {
			s->fields = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
					   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
			memcpy(s->cpu, v, sizeof v);
		} else if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
				  &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 11 &&
			   cpu == s->ncpu && cpu < MAXCPU) {
			memcpy(s->per[cpu], v, sizeof v);
			s->ncpu++;
		} else {
			sscanf(line, "ctxt %lld", &s->ctxt);
			sscanf(line, "btime %lld", &s->btime);
			sscanf(line, "processes %lld", &s->processes);
			sscanf(line, "procs_running %lld", &s->running);
			sscanf(line, "procs_blocked %lld", &s->blocked);
		}
	}
	fclose(f);
	s->ok = 1;
}

/* vmstat returns the value of name in /proc/vmstat, or -1. */
static long long vmstat(const char *name)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[64];
	long long v, found = -1;
	while (f && fscanf(f, "%63s %lld", key, &v) == 2)
		if (strcmp(key, name) == 0)
			found = v;
	if (f)
		fclose(f);
	return found;
}

static void test_vmstat(void)
{
	static const char *names[] = {"nr_free_pages", "nr_anon_pages", "nr_mapped", "nr_file_pages",
				      "nr_dirty", "nr_writeback", "nr_shmem", "nr_kernel_stack",
				      "nr_page_table_pages", "pgpgin", "pgpgout", "pswpin", "pswpout",
				      "pgfault", "pgmajfault", "oom_kill"};
	int all = 1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (vmstat(names[i]) < 0) {
			printf("# /proc/vmstat has no %s\n", names[i]);
			all = 0;
		}
	CHECK("vmstat.names", all);
	CHECK("vmstat.free_pages", vmstat("nr_free_pages") > 0);
	/* 100 pages of a fresh mapping, too small for a huge page: at least
	 * one fault each, wherever the kernel counts them. */
	long long before = vmstat("pgfault");
	char *m = mmap(NULL, 100 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("vmstat.mmap", m != MAP_FAILED);
	if (m != MAP_FAILED) {
		for (int i = 0; i < 100; i++)
			m[i * 4096] = 1;
		munmap(m, 100 * 4096);
	}
	long long after = vmstat("pgfault");
	if (after - before < 100)
		printf("# pgfault %lld -> %lld\n", before, after);
	CHECK("vmstat.pgfault_grew", after - before >= 100);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long long sum(const unsigned long long *v)
{
	unsigned long long t = 0;
	for (int i = 0; i < 10; i++)
		t += v[i];
	return t;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct stat_snap a, b;
	snap(&a);
	CHECK("stat.read", a.ok);
	CHECK_EQ("stat.cpu_fields", a.fields, 10);
	CHECK_EQ("stat.per_cpu_lines", a.ncpu, sysconf(_SC_NPROCESSORS_ONLN));
	CHECK("stat.ctxt", a.ctxt > 0);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	CHECK("stat.btime", a.btime > 1000000000 && a.btime <= rt.tv_sec);
	double up = now();
	CHECK("stat.btime_plus_uptime", a.btime + (long long)up >= rt.tv_sec - 5 && a.btime + (long long)up <= rt.tv_sec + 5);
	CHECK("stat.processes", a.processes > 1);
	CHECK("stat.procs_running", a.running >= 1);
	CHECK("stat.procs_blocked", a.blocked >= 0);
	unsigned long long per_user = 0;
	for (int i = 0; i < a.ncpu; i++)
		per_user += a.per[i][0];
	long long diff = (long long)per_user - (long long)a.cpu[0];
	CHECK("stat.aggregate_is_sum", diff >= -a.ncpu && diff <= a.ncpu);

	/* user mode until 100 ms of user time show (at most 5 s): a guest
	 * on a loaded host loses ticks, which Linux then never charges, so
	 * a fixed 300 ms spin is not always 10 ticks there */
	volatile unsigned long x = 0;
	double spin0 = now();
	do {
		for (double t1 = now(); now() - t1 < 0.1;)
			for (int i = 0; i < 10000; i++)
				x += i;
		snap(&b);
	} while (b.cpu[0] - a.cpu[0] < 10 && now() - spin0 < 5);
	CHECK("stat.user_grew", b.cpu[0] - a.cpu[0] >= 10);
	int forward = 1;
	for (int i = 0; i < 10; i++)
		forward &= b.cpu[i] >= a.cpu[i];
	for (int c = 0; c < a.ncpu && c < b.ncpu; c++)
		for (int i = 0; i < 10; i++)
			forward &= b.per[c][i] >= a.per[c][i];
	CHECK("stat.never_back", forward);

	/* a process with nice 5 spins: its time shows as nice (the second
	 * column), at least 100 ms of it within 5 s. It makes a system call
	 * now and then: Shortbread charges a CPU's user time when the
	 * program leaves user mode */
	snap(&a);
	pid_t spinner = fork();
	if (spinner == 0) {
		if (nice(5) != 5)
			_exit(1);
		for (;;) {
			for (int i = 0; i < 100000; i++)
				x++;
			getppid();
		}
	}
	spin0 = now();
	do {
		usleep(100000);
		snap(&b);
	} while (b.cpu[1] - a.cpu[1] < 10 && now() - spin0 < 5);
	kill(spinner, SIGKILL);
	waitpid(spinner, NULL, 0);
	CHECK("stat.nice_grew", b.cpu[1] - a.cpu[1] >= 10);
	printf("# nice 5 spinner: nice +%llu ticks\n", b.cpu[1] - a.cpu[1]);

	/* system calls until 50 ms of system time show (at most 5 s), for
	 * the lost ticks above */
	int fd = open("/dev/null", O_WRONLY);
	static char buf[1 << 16];
	snap(&a);
	spin0 = now();
	do {
		for (double t1 = now(); now() - t1 < 0.1;)
			for (int i = 0; i < 10; i++)
				(void)!write(fd, buf, sizeof buf);
		snap(&b);
	} while (b.cpu[2] - a.cpu[2] < 5 && now() - spin0 < 5);
	close(fd);
	CHECK("stat.system_grew", b.cpu[2] - a.cpu[2] >= 5);

	/* every CPU's line covers the time that passes, idle or not */
	snap(&a);
	double t0 = now();
	usleep(300000);
	double dt = now() - t0;
	snap(&b);
	CHECK("stat.all_time_covered", (double)(sum(b.cpu) - sum(a.cpu)) >= a.ncpu * dt * 100 * 0.5);
	CHECK("stat.idle_grew", b.cpu[3] > a.cpu[3]);

	/* blocking switches: 100 round trips through two pipes */
	int p1[2], p2[2];
	if (pipe(p1) || pipe(p2))
		return 1;
	snap(&a);
	pid_t pid = fork();
	if (pid == 0) {
		close(p1[1]);
		close(p2[0]);
		char c;
		while (read(p1[0], &c, 1) == 1)
			(void)!write(p2[1], &c, 1);
		_exit(0);
	}
	close(p1[0]);
	close(p2[1]);
	int trips = 0;
	for (int i = 0; i < 100; i++) {
		char c = 'x';
		if (write(p1[1], &c, 1) == 1 && read(p2[0], &c, 1) == 1)
			trips++;
	}
	close(p1[1]);
	waitpid(pid, NULL, 0);
	close(p2[0]);
	snap(&b);
	CHECK_EQ("stat.round_trips", trips, 100);
	CHECK("stat.ctxt_grew", b.ctxt - a.ctxt >= 100);
	CHECK("stat.processes_grew", b.processes - a.processes >= 1);
	test_vmstat();
	/* A shell's "echo 1 > /proc/sys/vm/drop_caches" opens with O_TRUNC,
	 * which procfs ignores; a change of mode it refuses. */
	int dc = open("/proc/sys/vm/drop_caches", O_WRONLY | O_TRUNC);
	CHECK_SYS("procfs.open_trunc", dc);
	if (dc >= 0) {
		CHECK_EQ("procfs.write_after_trunc", write(dc, "1", 1), 1);
		close(dc);
	}
	CHECK_ERR("procfs.chmod", chmod("/proc/sys/vm/drop_caches", 0666), EPERM);
	return check_done();
}
