/* /proc/cpuinfo against the CPUID instruction (one entry per online CPU,
 * vendor, family, model, stepping, brand string, flags Linux never hides)
 * and /proc/loadavg (format, the runnable/total field, the 1-minute
 * average rising while a process spins). */
#define _GNU_SOURCE
#include "check.h"
#include <cpuid.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static char info[1 << 16];

/* the value of the first "key\t...: value" line, or "" */
static void field(const char *key, char *out, size_t n)
{
	out[0] = 0;
	for (char *l = info; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t k = strlen(key);
		if (strncmp(l, key, k) == 0 && (l[k] == '\t' || l[k] == ' ')) {
			char *v = strstr(l, ": ");
			char *e = strchr(l, '\n');
			if (v && (!e || v < e)) {
				v += 2;
				size_t len = e ? (size_t)(e - v) : strlen(v);
				if (len >= n)
					len = n - 1;
				memcpy(out, v, len);
				out[len] = 0;
			}
			return;
		}
	}
}

static int has_flag(const char *flags, const char *f)
{
	char pat[64];
	snprintf(pat, sizeof pat, " %s ", f);
	char buf[4096];
	snprintf(buf, sizeof buf, " %s ", flags);
	return strstr(buf, pat) != NULL;
}

static void test_cpuinfo(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	CHECK("cpuinfo.open", f != NULL);
	if (!f)
		return;
	size_t n = fread(info, 1, sizeof info - 1, f);
	info[n] = 0;
	fclose(f);
	int procs = 0;
	for (char *p = info; (p = strstr(p, "processor\t: ")) != NULL; p++)
		procs++;
	CHECK_EQ("cpuinfo.one_per_cpu", procs, sysconf(_SC_NPROCESSORS_ONLN));

	unsigned a, b, c, d;
	__cpuid(0, a, b, c, d);
	char vendor[13];
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	char v[256];
	field("vendor_id", v, sizeof v);
	CHECK_STR("cpuinfo.vendor", v, vendor);
	__cpuid(1, a, b, c, d);
	unsigned fam = a >> 8 & 0xf, model = a >> 4 & 0xf;
	if (fam == 0xf)
		fam += a >> 20 & 0xff;
	if (fam >= 6)
		model += (a >> 16 & 0xf) << 4;
	field("cpu family", v, sizeof v);
	CHECK_EQ("cpuinfo.family", (unsigned)atoi(v), fam);
	field("model", v, sizeof v);
	CHECK_EQ("cpuinfo.model", (unsigned)atoi(v), model);
	field("stepping", v, sizeof v);
	CHECK_EQ("cpuinfo.stepping", (unsigned)atoi(v), a & 0xf);
	char flags[4096];
	field("flags", flags, sizeof flags);
	CHECK("cpuinfo.fpu", has_flag(flags, "fpu"));
	CHECK("cpuinfo.sse2", has_flag(flags, "sse2"));
	CHECK_EQ("cpuinfo.sse4_2", has_flag(flags, "sse4_2"), !!(c & (1 << 20)));
	CHECK_EQ("cpuinfo.popcnt", has_flag(flags, "popcnt"), !!(c & (1 << 23)));
	unsigned emax, x;
	__cpuid(0x80000000, emax, x, x, x);
	if (emax >= 0x80000004) {
		unsigned r[12];
		for (unsigned l = 0; l < 3; l++)
			__cpuid(0x80000002 + l, r[4 * l], r[4 * l + 1], r[4 * l + 2], r[4 * l + 3]);
		char brand[49];
		memcpy(brand, r, 48);
		brand[48] = 0;
		char *s = brand;
		while (*s == ' ')
			s++;
		for (char *e = s + strlen(s); e > s && e[-1] == ' '; e--)
			e[-1] = 0;
		field("model name", v, sizeof v);
		CHECK_STR("cpuinfo.model_name", v, s);
	}
}

static int read_loadavg(double *l1, int *run, int *total, int *last)
{
	FILE *f = fopen("/proc/loadavg", "r");
	if (!f)
		return 0;
	double l5, l15;
	int n = fscanf(f, "%lf %lf %lf %d/%d %d", l1, &l5, &l15, run, total, last);
	fclose(f);
	return n == 6;
}

static void test_loadavg(void)
{
	double l1;
	int run, total, last;
	CHECK("loadavg.format", read_loadavg(&l1, &run, &total, &last));
	CHECK("loadavg.running", run >= 1 && run <= total);
	CHECK("loadavg.last_pid", last >= getpid());
	/*
	 * A spinning process shows within a few 5-second samples. Each
	 * sample moves the 1-minute average to l*e + n*(1-e), e = 1884/2048
	 * (Linux's EXP_1), n the tasks running: with the spinner n >= 1, so
	 * the new value is at least l*e + 0.08, while with nothing running
	 * it only decays to l*e. Comparing against the decay, not against
	 * the start, holds whatever load the tests before left behind (from
	 * 1.29 the average falls towards 1 even with the spinner running).
	 * Two spinners, not one: after a run of busy tests the average can
	 * sit at exactly 1.00, which one spinner keeps where it is, so the
	 * printed value never changes and no sample could be compared.
	 */
	pid_t pids[2];
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			for (volatile unsigned long n = 0;; n++)
				;
		}
	}
	double prev = l1, decayed = l1;
	int rose = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		usleep(500000);
		if (read_loadavg(&l1, &run, &total, &last) && l1 != prev) {
			decayed = prev * 1884 / 2048;
			rose = l1 > decayed + 0.04;
			prev = l1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (!rose && t.tv_sec - t0.tv_sec < 20);
	for (int i = 0; i < 2; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	if (!CHECK("loadavg.rises", rose))
		printf("# 1-minute average %.2f, %.2f by decay alone\n", l1, decayed);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_cpuinfo();
	test_loadavg();
	return check_done();
}
