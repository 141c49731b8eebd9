/* t_proc_fs: what real programs read from /proc: /proc/self/stat (parsed),
 * status, maps (the stack and the text), exe, fd, cmdline, comm;
 * /proc/meminfo (and that Shmem, Cached, Mapped and AnonPages follow
 * the memory), uptime, cpuinfo, and the sysctls redis reads. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>

static int slurp(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t got = 0;
	for (;;) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r <= 0)
			break;
		got += r;
		if (got == n - 1)
			break;
	}
	close(fd);
	buf[got] = 0;
	return (int)got;
}

struct pstat {
	int pid;
	char comm[64];
	char state;
	long f[64]; /* f[i] = field i+1 of stat(5), from field 4 on */
	int nfields;
};

/* "pid (comm) state ppid pgrp session tty tpgid flags minflt ..." with a
 * comm that may hold spaces and parentheses: the last ')' ends it */
static int parse_stat(const char *path, struct pstat *ps)
{
	char buf[2048];
	if (slurp(path, buf, sizeof buf) <= 0)
		return -1;
	memset(ps, 0, sizeof *ps);
	char *open_paren = strchr(buf, '(');
	char *close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -2;
	ps->pid = atoi(buf);
	size_t cl = close_paren - open_paren - 1;
	if (cl >= sizeof ps->comm)
		return -3;
	memcpy(ps->comm, open_paren + 1, cl);
	char *p = close_paren + 1;
	if (*p++ != ' ')
		return -4;
	ps->state = *p++;
	ps->nfields = 3;
	while (*p == ' ') {
		p++;
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		ps->f[ps->nfields + 1] = v;
		ps->nfields++;
		p = end;
	}
	return 0;
}
#define FIELD(ps, n) ((ps)->f[(n)])

/* seconds since boot, from /proc/uptime */
static double uptime(void)
{
	char buf[128];
	double up = -1, idle;
	if (slurp("/proc/uptime", buf, sizeof buf) <= 0 || sscanf(buf, "%lf %lf", &up, &idle) != 2)
		return -1;
	return up;
}

static void test_self_stat(void)
{
	/* touch 4 MiB so that the resident size is well above the slack of
	 * Linux's per-CPU RSS counters */
	size_t big = 4 << 20;
	volatile char *mem = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (size_t i = 0; i < big; i += 4096)
		mem[i] = 1;
	struct pstat ps;
	CHECK_EQ("stat.parse", parse_stat("/proc/self/stat", &ps), 0);
	CHECK_EQ("stat.pid", ps.pid, getpid());
	CHECK_STR("stat.comm", ps.comm, "t_proc_fs");
	CHECK_EQ("stat.state_running", ps.state, 'R');
	CHECK("stat.field_count", ps.nfields >= 44);
	CHECK_EQ("stat.ppid", FIELD(&ps, 4), getppid());
	CHECK_EQ("stat.pgrp", FIELD(&ps, 5), getpgrp());
	CHECK_EQ("stat.session", FIELD(&ps, 6), getsid(0));
	CHECK_EQ("stat.num_threads", FIELD(&ps, 20), 1);
	CHECK("stat.vsize", FIELD(&ps, 23) > 0);
	CHECK("stat.rss", FIELD(&ps, 24) >= 512);
	CHECK("stat.vsize_holds_mapping", FIELD(&ps, 23) >= (long)big);
	/* starttime is in clock ticks since boot: this process started after
	 * boot (the runner forked it) and before now */
	long hz = sysconf(_SC_CLK_TCK);
	double up = uptime();
	CHECK("stat.starttime", FIELD(&ps, 22) > 0 && FIELD(&ps, 22) <= (long)(up * hz) + 1);
	printf("# /proc/self/stat: %d fields, vsize %ld rss %ld pages\n", ps.nfields, FIELD(&ps, 23), FIELD(&ps, 24));
	struct pstat by_pid;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", getpid());
	CHECK_EQ("stat.by_pid", parse_stat(path, &by_pid), 0);
	CHECK_EQ("stat.by_pid_same", by_pid.pid, ps.pid);
	/* after PR_SET_NAME the comm field follows, spaces and all */
	prctl(PR_SET_NAME, "a (b) c", 0, 0, 0);
	CHECK_EQ("stat.parse_odd_comm", parse_stat("/proc/self/stat", &ps), 0);
	CHECK_STR("stat.odd_comm", ps.comm, "a (b) c");
	CHECK_EQ("stat.odd_comm_pid", ps.pid, getpid());
	char comm[64];
	slurp("/proc/self/comm", comm, sizeof comm);
	CHECK_STR("comm.file", comm, "a (b) c\n");
	prctl(PR_SET_NAME, "t_proc_fs", 0, 0, 0);
	munmap((void *)mem, big);
}

static void *idle_thread(void *arg)
{
	int *p = arg;
	char c;
	read(p[0], &c, 1);
	return NULL;
}

static void test_states(void)
{
	/* another thread shows up in num_threads and Threads */
	int p[2];
	pipe(p);
	pthread_t t;
	pthread_create(&t, NULL, idle_thread, p);
	struct pstat ps;
	parse_stat("/proc/self/stat", &ps);
	CHECK_EQ("stat.num_threads_2", FIELD(&ps, 20), 2);
	char buf[4096];
	slurp("/proc/self/status", buf, sizeof buf);
	CHECK("status.threads_2", strstr(buf, "\nThreads:\t2\n") != NULL);
	write(p[1], "x", 1);
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);

	/* a child blocked in read is S, stopped is T, exited is Z */
	pipe(p);
	struct pstat self;
	parse_stat("/proc/self/stat", &self);
	long before = (long)(uptime() * sysconf(_SC_CLK_TCK));
	pid_t c = fork();
	if (c == 0) {
		char ch;
		close(p[1]);
		read(p[0], &ch, 1);
		_exit(0);
	}
	close(p[0]);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", c);
	char st = 0;
	for (int i = 0; i < 400; i++) { /* until it blocks */
		if (parse_stat(path, &ps) == 0 && (st = ps.state) == 'S')
			break;
		usleep(5000);
	}
	CHECK_EQ("stat.child_sleeping", st, 'S');
	CHECK_EQ("stat.child_ppid", FIELD(&ps, 4), getpid());
	/* a forked child's start time is its fork's, not its parent's or 0 */
	CHECK("stat.child_starttime", FIELD(&ps, 22) >= before - 1 && FIELD(&ps, 22) >= FIELD(&self, 22));
	kill(c, SIGSTOP);
	int ws;
	waitpid(c, &ws, WUNTRACED);
	parse_stat(path, &ps);
	CHECK_EQ("stat.child_stopped", ps.state, 'T');
	kill(c, SIGCONT);
	close(p[1]);
	siginfo_t si;
	waitid(P_PID, c, &si, WEXITED | WNOWAIT);
	parse_stat(path, &ps);
	CHECK_EQ("stat.child_zombie", ps.state, 'Z');
	waitpid(c, &ws, 0);
	CHECK_ERR("stat.reaped_gone", open(path, O_RDONLY), ENOENT);
}

static void test_status_maps(void)
{
	char buf[65536];
	CHECK("status.read", slurp("/proc/self/status", buf, sizeof buf) > 0);
	char want[64];
	CHECK("status.name", strstr(buf, "Name:\tt_proc_fs\n") == buf);
	snprintf(want, sizeof want, "\nPid:\t%d\n", getpid());
	CHECK("status.pid", strstr(buf, want) != NULL);
	snprintf(want, sizeof want, "\nPPid:\t%d\n", getppid());
	CHECK("status.ppid", strstr(buf, want) != NULL);
	CHECK("status.vmrss", strstr(buf, "\nVmRSS:") != NULL);
	CHECK("status.sigblk", strstr(buf, "\nSigBlk:\t") != NULL);

	CHECK("maps.read", slurp("/proc/self/maps", buf, sizeof buf) > 0);
	int local = 0;
	uintptr_t sp = (uintptr_t)&local, text = (uintptr_t)&test_status_maps;
	int stack_ok = 0, text_ok = 0, lines = 0, format_ok = 1;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long lo, hi, off;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s %lx", &lo, &hi, perms, &off) != 4 || lo >= hi || strlen(perms) != 4) {
			format_ok = 0;
			continue;
		}
		lines++;
		if (strstr(line, "[stack]") && sp >= lo && sp < hi && !strcmp(perms, "rw-p"))
			stack_ok = 1;
		if (text >= lo && text < hi && perms[0] == 'r' && perms[2] == 'x' && strstr(line, "t_proc_fs"))
			text_ok = 1;
	}
	CHECK("maps.format", format_ok && lines >= 3);
	CHECK("maps.stack_holds_sp", stack_ok);
	CHECK("maps.text_rx_named", text_ok);
	/* a new mapping appears, with its protection */
	char *m = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	slurp("/proc/self/maps", buf, sizeof buf);
	snprintf(want, sizeof want, "%lx-%lx r--p", (unsigned long)m, (unsigned long)m + 3 * 4096);
	CHECK("maps.new_mapping", strstr(buf, want) != NULL);
	munmap(m, 3 * 4096);
}

static void test_links(int argc, char **argv)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	CHECK("exe.readlink", n > 0);
	buf[n > 0 ? n : 0] = 0;
	CHECK("exe.absolute", buf[0] == '/');
	const char *base = strrchr(buf, '/');
	CHECK_STR("exe.basename", base ? base + 1 : buf, "t_proc_fs");
	struct stat a, b;
	stat("/proc/self/exe", &a);
	stat(buf, &b);
	CHECK("exe.same_file", a.st_ino == b.st_ino && a.st_dev == b.st_dev);

	const char *tmp = check_mktmp();
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/file", tmp);
	int fd = open(path, O_CREAT | O_RDWR, 0644);
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	CHECK_STR("fd.readlink_path", buf, path);
	int fd2 = open(link, O_RDONLY); /* reopen through /proc */
	CHECK_SYS("fd.reopen", fd2);
	fstat(fd, &a);
	fstat(fd2, &b);
	CHECK_EQ("fd.reopen_same_inode", b.st_ino, a.st_ino);
	close(fd2);
	int p[2];
	pipe(p);
	snprintf(link, sizeof link, "/proc/self/fd/%d", p[0]);
	n = readlink(link, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = 0;
	CHECK("fd.pipe_link", strncmp(buf, "pipe:[", 6) == 0);
	/* /proc/self/fd lists exactly the open descriptors */
	int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
	CHECK_SYS("fd.dir_open", dfd);
	char dbuf[4096];
	long total = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf);
	int has_fd = 0, has_p1 = 0, count = 0;
	for (long off = 0; off < total;) {
		unsigned short reclen = *(unsigned short *)(dbuf + off + 16);
		const char *name = dbuf + off + 19;
		if (name[0] != '.') {
			count++;
			has_fd |= atoi(name) == fd;
			has_p1 |= atoi(name) == p[1];
		}
		off += reclen;
	}
	CHECK("fd.dir_lists_open", has_fd && has_p1 && count >= 5);
	close(dfd);
	/* Looking a descriptor up through /proc takes no lasting reference:
	 * once the write end is closed the reader sees end of file. */
	snprintf(link, sizeof link, "/proc/self/fd/%d", p[1]);
	struct stat ps1;
	CHECK_SYS("fd.lstat_pipe_end", lstat(link, &ps1));
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	char ch;
	CHECK_EQ("fd.lookup_keeps_no_reference", read(p[0], &ch, 1), 0);
	close(p[0]);
	close(fd);
	unlink(path);
	rmdir(tmp);

	int cl = slurp("/proc/self/cmdline", buf, sizeof buf);
	int expect = 0;
	for (int i = 0; i < argc; i++)
		expect += strlen(argv[i]) + 1;
	CHECK_EQ("cmdline.length", cl, expect);
	CHECK("cmdline.argv0", cl > 0 && strcmp(buf, argv[0]) == 0);
	CHECK("environ.readable", slurp("/proc/self/environ", buf, sizeof buf) >= 0);
}

static long meminfo_kb(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	if (!p || (p != buf && p[-1] != '\n'))
		return -1;
	p += strlen(key);
	if (*p++ != ':')
		return -1;
	return strtol(p, NULL, 10);
}

static long meminfo_now(const char *key)
{
	static char buf[16384];
	if (slurp("/proc/meminfo", buf, sizeof buf) <= 0)
		return -1;
	return meminfo_kb(buf, key);
}

/* The fields programs read are there, and the memory counts follow the
 * memory: a tmpfs file's pages are Shmem (and Cached) until it is
 * unlinked, Mapped while a mapping of it is there, and written anonymous
 * memory is AnonPages. 8 MiB moves each by far more than the slack of
 * Linux's per-CPU counters. */
static void test_meminfo_counts(void)
{
	static const char *keys[] = { "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "Shmem",
				      "AnonPages", "Mapped", "PageTables", "KernelStack", "Slab" };
	char name[64];
	for (unsigned i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		snprintf(name, sizeof name, "meminfo.has_%s", keys[i]);
		CHECK(name, meminfo_now(keys[i]) >= 0);
	}
	CHECK("meminfo.pagetables_nonzero", meminfo_now("PageTables") > 0);
	CHECK("meminfo.kernelstack_nonzero", meminfo_now("KernelStack") > 0);
	const long mb8 = 8 * 1024;
	char path[300];
	snprintf(path, sizeof path, "%s/meminfo-file", check_mktmp());
	long shmem0 = meminfo_now("Shmem"), cached0 = meminfo_now("Cached");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_SYS("meminfo.create", fd);
	static char chunk[65536];
	memset(chunk, 'm', sizeof chunk);
	for (long done = 0; done < mb8 * 1024; done += sizeof chunk)
		if (write(fd, chunk, sizeof chunk) != sizeof chunk)
			break;
	long shmem1 = meminfo_now("Shmem"), cached1 = meminfo_now("Cached");
	CHECK("meminfo.shmem_counts_tmpfs", shmem1 - shmem0 >= mb8 * 3 / 4);
	CHECK("meminfo.cached_counts_tmpfs", cached1 - cached0 >= mb8 * 3 / 4);
	long mapped0 = meminfo_now("Mapped");
	char *m = mmap(NULL, mb8 * 1024, PROT_READ, MAP_SHARED, fd, 0);
	CHECK("meminfo.mmap_file", m != MAP_FAILED);
	long sum = 0;
	if (m != MAP_FAILED)
		for (long off = 0; off < mb8 * 1024; off += 4096)
			sum += ((volatile char *)m)[off];
	CHECK_EQ("meminfo.mapped_read", sum, 'm' * (mb8 / 4));
	long mapped1 = meminfo_now("Mapped");
	CHECK("meminfo.mapped_counts_mapping", mapped1 - mapped0 >= mb8 * 3 / 4);
	if (m != MAP_FAILED)
		munmap(m, mb8 * 1024);
	CHECK("meminfo.mapped_after_munmap", meminfo_now("Mapped") - mapped0 < mb8 / 4);
	close(fd);
	unlink(path);
	rmdir(check_tmpdir);
	long shmem2 = meminfo_now("Shmem");
	CHECK("meminfo.shmem_freed_by_unlink", shmem2 - shmem0 < mb8 / 4);
	if (shmem2 - shmem0 >= mb8 / 4)
		printf("# Shmem %ld kB before, %ld with the file, %ld after unlink\n", shmem0, shmem1, shmem2);

	long anon0 = meminfo_now("AnonPages");
	char *a = mmap(NULL, mb8 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("meminfo.mmap_anon", a != MAP_FAILED);
	if (a != MAP_FAILED) {
		for (long off = 0; off < mb8 * 1024; off += 4096)
			a[off] = 1;
		CHECK("meminfo.anonpages_counts_writes", meminfo_now("AnonPages") - anon0 >= mb8 * 3 / 4);
		munmap(a, mb8 * 1024);
		CHECK("meminfo.anonpages_after_munmap", meminfo_now("AnonPages") - anon0 < mb8 / 4);
	}
}

/* Sum of the "LOC:" (local timer) row of /proc/interrupts, -1 if the
 * row is missing or has fewer columns than there are CPUs. */
static long long local_timer_total(const char *buf, int cpus)
{
	const char *p = strstr(buf, "\nLOC:");
	if (!p)
		return -1;
	p += 5;
	long long sum = 0;
	for (int i = 0; i < cpus; i++) {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p)
			return -1;
		sum += v;
		p = end;
	}
	return sum;
}

static void test_interrupts(void)
{
	static char buf[65536];
	CHECK("interrupts.read", slurp("/proc/interrupts", buf, sizeof buf) > 0);
	int cpus = sysconf(_SC_NPROCESSORS_ONLN), cols = 0;
	for (char *p = buf; *p && *p != '\n'; p++)
		if (strncmp(p, "CPU", 3) == 0 && (p == buf || p[-1] == ' '))
			cols++;
	CHECK_EQ("interrupts.cpu_columns", cols, cpus);
	long long before = local_timer_total(buf, cpus);
	CHECK("interrupts.local_timer_row", before >= 0);
	struct timespec ts = {0, 30 * 1000 * 1000};
	nanosleep(&ts, NULL); /* a timed sleep needs a timer interrupt */
	slurp("/proc/interrupts", buf, sizeof buf);
	CHECK("interrupts.local_timer_counts", local_timer_total(buf, cpus) > before);
}

static void test_system_files(void)
{
	char buf[16384];
	CHECK("meminfo.read", slurp("/proc/meminfo", buf, sizeof buf) > 0);
	long total = meminfo_kb(buf, "MemTotal"), free = meminfo_kb(buf, "MemFree"), avail = meminfo_kb(buf, "MemAvailable");
	CHECK("meminfo.memtotal", total >= 16 * 1024);
	CHECK("meminfo.memfree", free > 0 && free <= total);
	CHECK("meminfo.memavailable", avail > 0 && avail <= total);
	CHECK("meminfo.units", strstr(buf, "MemTotal:") && strstr(buf, " kB\n"));
	struct sysinfo si;
	sysinfo(&si);
	long long si_kb = (long long)si.totalram * (si.mem_unit ? si.mem_unit : 1) / 1024;
	CHECK("meminfo.agrees_sysinfo", si_kb >= total * 99 / 100 && si_kb <= total * 101 / 100 + 1);
	printf("# MemTotal %ld kB, MemFree %ld kB\n", total, free);

	double up = -1, idle = -1;
	CHECK("uptime.read", slurp("/proc/uptime", buf, sizeof buf) > 0);
	CHECK_EQ("uptime.parse", sscanf(buf, "%lf %lf", &up, &idle), 2);
	CHECK("uptime.positive", up > 0);
	struct timespec bt;
	clock_gettime(CLOCK_BOOTTIME, &bt);
	CHECK("uptime.agrees_boottime", up <= bt.tv_sec + 1.0 && up >= bt.tv_sec - 2.0);
	/* the second field is the idle time of all CPUs together */
	CHECK("uptime.idle_within_cpus", idle >= 0 && idle <= up * sysconf(_SC_NPROCESSORS_ONLN) + 1.0);

	CHECK("cpuinfo.read", slurp("/proc/cpuinfo", buf, sizeof buf) > 0);
	int cpus = 0;
	for (char *p = buf; (p = strstr(p, "processor")); p++)
		if (p == buf || p[-1] == '\n')
			cpus++;
	CHECK_EQ("cpuinfo.processors", cpus, sysconf(_SC_NPROCESSORS_ONLN));
	CHECK("loadavg.read", slurp("/proc/loadavg", buf, sizeof buf) > 0);
	double l1 = -1;
	CHECK("loadavg.parse", sscanf(buf, "%lf", &l1) == 1 && l1 >= 0);
	/* sysctls read by redis */
	CHECK("overcommit.read", slurp("/proc/sys/vm/overcommit_memory", buf, sizeof buf) > 0);
	CHECK("overcommit.value", (buf[0] == '0' || buf[0] == '1' || buf[0] == '2') && buf[1] == '\n');
	CHECK("somaxconn.read", slurp("/proc/sys/net/core/somaxconn", buf, sizeof buf) > 0);
	CHECK("somaxconn.value", atoi(buf) > 0);
	test_interrupts();
	CHECK("mounts.read", slurp("/proc/mounts", buf, sizeof buf) > 0);
	CHECK("mounts.has_proc", strstr(buf, " /proc proc ") != NULL);
	CHECK_ERR("proc.missing_pid", open("/proc/999999/stat", O_RDONLY), ENOENT);
}

/* Shortbread's /proc/shortbread/kmem counts kernel objects as they come
 * and go (Linux has no such file: skipped there). */
static long kmem(const char *key) { return check_proc_value("/proc/shortbread/kmem", key); }

static void test_kmem(void)
{
	if (access("/proc/shortbread/kmem", R_OK) != 0) {
		printf("# kmem: skipped (not Shortbread)\n");
		return;
	}
	long files0 = kmem("open_files"), threads0 = kmem("threads");
	CHECK("kmem.open_files", files0 > 0);
	CHECK("kmem.threads", threads0 > 0);
	CHECK("kmem.heap_objects", kmem("/memory/classes/heap/objects:bytes") > 0);
	int fds[200];
	for (int i = 0; i < 200; i++)
		fds[i] = open("/dev/null", O_RDONLY);
	long files1 = kmem("open_files");
	CHECK("kmem.open_files_up", files1 - files0 >= 200);
	for (int i = 0; i < 200; i++)
		close(fds[i]);
	long files2 = kmem("open_files");
	CHECK("kmem.open_files_back", files2 - files0 < 20 && files0 - files2 < 20);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	int fd = open("/proc/self/exe", O_RDONLY);
	fl.l_type = F_RDLCK;
	long locks0 = kmem("record_locks");
	CHECK_SYS("kmem.lock", fcntl(fd, F_SETLK, &fl));
	CHECK_EQ("kmem.record_locks_up", kmem("record_locks") - locks0, 1);
	close(fd);
	CHECK_EQ("kmem.record_locks_back", kmem("record_locks"), locks0);
	/* the lock-contention and blocking profiles (lockprof=N records
	 * into them): Go's pprof text, and the gzip form for go tool pprof */
	char head[32] = {0};
	int m = open("/proc/shortbread/mutex", O_RDONLY);
	CHECK("lockprof.mutex_text", m >= 0 && read(m, head, sizeof head - 1) > 0 && strncmp(head, "--- mutex:", 10) == 0);
	close(m);
	unsigned char gz[2] = {0};
	m = open("/proc/shortbread/block.pb.gz", O_RDONLY);
	CHECK("lockprof.block_gzip", m >= 0 && read(m, gz, 2) == 2 && gz[0] == 0x1f && gz[1] == 0x8b);
	close(m);
}

/* A child that sets its scheduling attributes and limits, pins itself
 * to one CPU, reports ('r', or 'e' when a call failed) and then sleeps
 * in a read until the parent closes the pipe. */
static pid_t sched_child(int cpu, int fifo_prio, int *keep)
{
	int rep[2], hold[2];
	if (pipe(rep) || pipe(hold))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(rep[0]);
		close(hold[1]);
		int ok = 1;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ok &= sched_setaffinity(0, sizeof one, &one) == 0;
		if (fifo_prio) {
			struct sched_param sp = { .sched_priority = fifo_prio };
			ok &= syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp) == 0;
		} else {
			ok &= setpriority(PRIO_PROCESS, 0, 5) == 0;
			struct rlimit rss = { 12345678, RLIM_INFINITY }, as = { 1L << 40, RLIM_INFINITY };
			ok &= setrlimit(RLIMIT_RSS, &rss) == 0 && setrlimit(RLIMIT_AS, &as) == 0;
		}
		(void)!write(rep[1], ok ? "r" : "e", 1);
		char c;
		(void)!read(hold[0], &c, 1);
		_exit(0);
	}
	close(rep[1]);
	close(hold[0]);
	char c = 0;
	if (read(rep[0], &c, 1) != 1 || c != 'r')
		pid = -pid;
	close(rep[0]);
	*keep = hold[1];
	return pid;
}

static void *stat_thread(void *arg)
{
	struct pstat *ps = arg;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld/stat", (long)syscall(SYS_gettid));
	parse_stat(path, ps);
	return NULL;
}

/* Fields Linux computes that once read as constants: priority and nice
 * (18, 19), rsslim (25, RLIMIT_RSS's soft limit, not RLIMIT_AS's),
 * exit_signal (38: SIGCHLD for a forked process, -1 in a thread's own
 * file), processor (39: the CPU the task last ran on, not the reader's),
 * rt_priority and policy (40, 41). */
static void test_stat_sched(void)
{
	cpu_set_t mine;
	if (!CHECK_SYS("sched.getaffinity", sched_getaffinity(0, sizeof mine, &mine)))
		return;
	int lo = -1, hi = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mine)) {
			if (lo < 0)
				lo = i;
			hi = i;
		}
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(lo, &one);
	sched_setaffinity(0, sizeof one, &one); /* the reader on the lowest CPU */

	struct pstat ps;
	int keep;
	pid_t pid = sched_child(hi, 0, &keep);
	if (CHECK("sched.child_ready", pid > 0)) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		CHECK_EQ("sched.parse", parse_stat(path, &ps), 0);
		CHECK_EQ("stat.priority_nice5", FIELD(&ps, 18), 25);
		CHECK_EQ("stat.nice", FIELD(&ps, 19), 5);
		CHECK_EQ("stat.rsslim", FIELD(&ps, 25), 12345678);
		CHECK_EQ("stat.exit_signal", FIELD(&ps, 38), SIGCHLD);
		CHECK_EQ("stat.processor_child", FIELD(&ps, 39), hi);
		CHECK_EQ("stat.rt_priority_other", FIELD(&ps, 40), 0);
		CHECK_EQ("stat.policy_other", FIELD(&ps, 41), SCHED_OTHER);
		char want[64];
		snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
		snprintf(want, sizeof want, "\nCpus_allowed_list:\t%d\n", hi);
		CHECK("status.child_cpus_allowed_list", check_file_has(path, want));
	}
	close(keep);
	waitpid(pid < 0 ? -pid : pid, NULL, 0);

	pid = sched_child(hi, 10, &keep);
	if (CHECK("sched.fifo_child_ready", pid > 0)) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		CHECK_EQ("sched.fifo_parse", parse_stat(path, &ps), 0);
		CHECK_EQ("stat.priority_fifo10", FIELD(&ps, 18), -11);
		CHECK_EQ("stat.rt_priority", FIELD(&ps, 40), 10);
		CHECK_EQ("stat.policy_fifo", FIELD(&ps, 41), SCHED_FIFO);
	}
	close(keep);
	waitpid(pid < 0 ? -pid : pid, NULL, 0);

	/* the mask as Linux prints a cpumask: one hex digit per 4 CPUs */
	int n = sysconf(_SC_NPROCESSORS_CONF);
	int digits = (n + 3) / 4;
	if (digits < 1 || digits > 8)
		digits = 8; /* more than 32 CPUs: not checked */
	char want[128];
	snprintf(want, sizeof want, "\nCpus_allowed:\t%0*lx\nCpus_allowed_list:\t%d\n", digits, (1UL << lo) & 0xffffffffUL,
		 lo & 0xffff);
	CHECK("status.cpus_allowed_pinned", n > 32 || check_file_has("/proc/self/status", want));
	CHECK_EQ("stat.self_parse", parse_stat("/proc/self/stat", &ps), 0);
	CHECK_EQ("stat.self_processor", FIELD(&ps, 39), lo);
	CHECK_EQ("stat.self_exit_signal", FIELD(&ps, 38), SIGCHLD);
	pthread_t th;
	struct pstat tps = { 0 };
	if (CHECK_EQ("stat.thread_create", pthread_create(&th, NULL, stat_thread, &tps), 0)) {
		pthread_join(th, NULL);
		CHECK_EQ("stat.thread_exit_signal", FIELD(&tps, 38), -1);
		/* Linux wakes the joiner before the thread has left the group:
		 * wait until it has, for the thread counts test_states checks */
		for (int i = 0; i < 5000; i++) {
			if (parse_stat("/proc/self/stat", &ps) == 0 && FIELD(&ps, 20) == 1)
				break;
			usleep(1000);
		}
	}
	sched_setaffinity(0, sizeof mine, &mine);
	if (n == 1)
		snprintf(want, sizeof want, "\nCpus_allowed_list:\t0\n");
	else
		snprintf(want, sizeof want, "\nCpus_allowed_list:\t0-%d\n", n - 1);
	CHECK("status.cpus_allowed_all", CPU_COUNT(&mine) != n || check_file_has("/proc/self/status", want));
}

int main(int argc, char **argv)
{
	check_start(argv[0]);
	test_self_stat();
	test_stat_sched();
	test_states();
	test_status_maps();
	test_links(argc, argv);
	test_system_files();
	test_meminfo_counts();
	test_kmem();
	return check_done();
}
