/*
 * t_aslr: address-space layout randomisation as Linux's. The test execs
 * itself RUNS times and compares the addresses each run reports: a
 * stack variable, a new anonymous mapping, the program break and the
 * vDSO. By default (randomize_va_space 2) each varies from exec to exec;
 * under personality(ADDR_NO_RANDOMIZE) the stack, mmap and break are the
 * same every time; with randomize_va_space 1 the break is fixed and the
 * rest still varies. A set-user-ID exec drops ADDR_NO_RANDOMIZE (and so
 * is randomised). AT_PLATFORM names "x86_64". Bounds a Linux program may
 * rely on: the stack below 128 TiB, mappings below the stack.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>

#include "check.h"

#define RUNS 6

struct sample {
	unsigned long stack, map, brk, vdso, persona;
};

/* The child's half: one line of addresses on stdout. */
static int report(void)
{
	volatile int local = 0;
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("%lx %lx %lx %lx %lx\n", (unsigned long)&local, (unsigned long)m, (unsigned long)sbrk(0),
	       getauxval(AT_SYSINFO_EHDR), (unsigned long)personality(0xffffffff));
	return m == MAP_FAILED;
}

/* run execs prog as a child (with persona set first unless it is -1)
 * and parses its line into s; 0 on success. */
static int run(const char *prog, long persona, struct sample *s)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (persona != -1 && personality(persona) == -1)
			_exit(126);
		execl(prog, prog, "report", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[256];
	ssize_t n = 0, r;
	while (n < (ssize_t)sizeof buf - 1 && (r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	close(p[0]);
	buf[n > 0 ? n : 0] = 0;
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return sscanf(buf, "%lx %lx %lx %lx %lx", &s->stack, &s->map, &s->brk, &s->vdso, &s->persona) == 5 ? 0 : -1;
}

/* distinct counts the different values of one field over the runs. */
static int distinct(struct sample *s, size_t off)
{
	int d = 0;
	for (int i = 0; i < RUNS; i++) {
		int seen = 0;
		for (int j = 0; j < i; j++)
			if (*(unsigned long *)((char *)&s[j] + off) == *(unsigned long *)((char *)&s[i] + off))
				seen = 1;
		d += !seen;
	}
	return d;
}

/* sample runs prog RUNS times; 0 if every run reported. */
static int sample(const char *prog, long persona, struct sample *s)
{
	for (int i = 0; i < RUNS; i++)
		if (run(prog, persona, &s[i]))
			return -1;
	return 0;
}

static int set_va(const char *v)
{
	int fd = open("/proc/sys/kernel/randomize_va_space", O_WRONLY);
	if (fd < 0)
		return -1;
	int r = write(fd, v, strlen(v)) == (ssize_t)strlen(v) ? 0 : -1;
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

#define FIELD(f) offsetof(struct sample, f)

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return report();
	check_start("t_aslr");
	char self[256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		printf("not ok self: readlink: %s\n", strerror(errno));
		return 1;
	}
	self[n] = 0;

	char buf[32];
	CHECK("sysctl.read", check_read_file("/proc/sys/kernel/randomize_va_space", buf, sizeof buf) > 0);
	CHECK_STR("sysctl.default", buf, "2\n");
	const char *plat = (const char *)getauxval(AT_PLATFORM);
	CHECK_STR("auxv.platform", plat, "x86_64");

	struct sample s[RUNS];
	if (CHECK("random.ran", sample(self, -1, s) == 0)) {
		/* Up to 16 GiB of stack drop, 1 TiB of mmap drop, 32 MiB of
		 * break: two equal draws among six are rare, three never. */
		CHECK("random.stack", distinct(s, FIELD(stack)) >= RUNS - 1);
		CHECK("random.mmap", distinct(s, FIELD(map)) >= RUNS - 1);
		CHECK("random.brk", distinct(s, FIELD(brk)) >= RUNS - 1);
		CHECK("random.vdso", distinct(s, FIELD(vdso)) >= 2);
		int below = 1;
		for (int i = 0; i < RUNS; i++)
			below &= s[i].stack < 0x800000000000ul && s[i].map < s[i].stack && s[i].brk < s[i].map;
		CHECK("random.order", below);
	}
	if (CHECK("fixed.ran", sample(self, ADDR_NO_RANDOMIZE, s) == 0)) {
		CHECK_EQ("fixed.stack", distinct(s, FIELD(stack)), 1);
		CHECK_EQ("fixed.mmap", distinct(s, FIELD(map)), 1);
		CHECK_EQ("fixed.brk", distinct(s, FIELD(brk)), 1);
		CHECK("fixed.persona_kept", s[0].persona & ADDR_NO_RANDOMIZE);
	}
	if (geteuid() != 0) {
		printf("# not root: randomize_va_space and set-user-ID not checked\n");
		return check_done();
	}

	/* Linux takes any int there, and refuses what is not one. */
	CHECK_ERR("sysctl.not_int", set_va("x"), EINVAL);
	CHECK("sysctl.any_int", set_va("3") == 0 && check_read_file("/proc/sys/kernel/randomize_va_space", buf, sizeof buf) > 0 &&
					strcmp(buf, "3\n") == 0);
	if (CHECK_SYS("sysctl.write1", set_va("1"))) {
		int ok = sample(self, -1, s) == 0;
		set_va("2");
		if (CHECK("va1.ran", ok)) {
			CHECK_EQ("va1.brk_fixed", distinct(s, FIELD(brk)), 1);
			CHECK("va1.stack", distinct(s, FIELD(stack)) >= RUNS - 1);
			CHECK("va1.mmap", distinct(s, FIELD(map)) >= RUNS - 1);
		}
	}
	CHECK("sysctl.restored", check_read_file("/proc/sys/kernel/randomize_va_space", buf, sizeof buf) > 0 &&
					 strcmp(buf, "2\n") == 0);

	/* A set-user-ID copy (root's, run by root: no ID changes, and still
	 * Linux clears the flags). */
	check_mktmp();
	char suid[300];
	snprintf(suid, sizeof suid, "%s/suid", check_tmpdir);
	int in = open(self, O_RDONLY), out = open(suid, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char chunk[65536];
	ssize_t r;
	int copied = in >= 0 && out >= 0;
	while (copied && (r = read(in, chunk, sizeof chunk)) > 0)
		copied = write(out, chunk, r) == r;
	close(in);
	close(out);
	if (CHECK("suid.copy", copied && chmod(suid, 04755) == 0) && CHECK("suid.ran", sample(suid, ADDR_NO_RANDOMIZE, s) == 0)) {
		CHECK_EQ("suid.persona_cleared", s[0].persona & ADDR_NO_RANDOMIZE, 0);
		CHECK("suid.stack", distinct(s, FIELD(stack)) >= RUNS - 1);
	}
	unlink(suid);
	rmdir(check_tmpdir);
	return check_done();
}
