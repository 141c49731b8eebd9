/* t_scale: the scaling benchmark's workloads (user/bench/scale.c, built
 * into the suite as h_scale) run and report well-formed results on this
 * kernel: every workload, with 1 worker and with 2, for 200 ms each. Only
 * the shape of the output is checked, never a rate (make bench-scale
 * measures; this keeps its programs working on both kernels). */
#define _GNU_SOURCE
#include <dirent.h>
#include "check.h"
#include "sock.h"

#define RUN_MS 200

static char helper[300];
static const char *tmp;

/* run executes h_scale with args (TMPDIR=tmp is in the environment), and
 * returns its exit status (or 1000+signal) with its output in out. */
static int run(char *const args[], char *out, size_t size)
{
	return check_run(helper, args, NULL, NULL, out, size);
}

static int empty_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n == 0;
}

static void one(const char *name, int workers, int cpus)
{
	char w[8], ms[16], out[1024], check[128];
	snprintf(w, sizeof w, "%d", workers);
	snprintf(ms, sizeof ms, "%d", RUN_MS);
	char *args[] = { helper, (char *)name, w, ms, NULL };
	int st = run(args, out, sizeof out);
	snprintf(check, sizeof check, "%s.%d.exit", name, workers);
	if (!check_report(check, st == 0, "status %d, output: %s", st, out))
		return;
	char got[64];
	int gw, gc, miss;
	double gms, rate;
	long ops;
	int n = sscanf(out, "scale workload=%63s workers=%d cpus=%d ms=%lf ops=%ld ops_per_s=%lf pin_miss=%d",
		       got, &gw, &gc, &gms, &ops, &rate, &miss);
	snprintf(check, sizeof check, "%s.%d.fields", name, workers);
	if (!check_report(check, n == 7, "%d fields in %s", n, out))
		return;
	snprintf(check, sizeof check, "%s.%d.line", name, workers);
	/* One line: the driver reads exactly one result per run. */
	CHECK(check, strchr(out, '\n') == out + strlen(out) - 1);
	snprintf(check, sizeof check, "%s.%d.name", name, workers);
	CHECK_STR(check, got, name);
	snprintf(check, sizeof check, "%s.%d.workers", name, workers);
	CHECK_EQ(check, gw, workers);
	snprintf(check, sizeof check, "%s.%d.cpus", name, workers);
	CHECK_EQ(check, gc, cpus);
	/* The parent sleeps RUN_MS between go and stop: a lower bound. */
	snprintf(check, sizeof check, "%s.%d.ms", name, workers);
	check_report(check, gms >= RUN_MS - 1, "ms=%.0f", gms);
	snprintf(check, sizeof check, "%s.%d.ops", name, workers);
	/* Every worker does at least one operation (the fault workloads
	 * count 64 pages each). */
	check_report(check, ops >= workers, "%ld operations by %d workers in %.0f ms", ops, workers, gms);
	snprintf(check, sizeof check, "%s.%d.rate", name, workers);
	double want = ops / (gms / 1e3);
	check_report(check, rate > 0.98 * want && rate < 1.02 * want, "ops_per_s=%.1f, ops/ms says %.1f", rate, want);
	snprintf(check, sizeof check, "%s.%d.pin_miss", name, workers);
	check_report(check, miss >= 0 && miss <= workers, "pin_miss=%d for %d workers", miss, workers);
	snprintf(check, sizeof check, "%s.%d.cleaned", name, workers);
	CHECK(check, empty_dir(tmp));
}

int main(int argc, char **argv)
{
	check_start(argv[0]);
	snprintf(helper, sizeof helper, "%s/h_scale", check_testdir(argv[0]));
	tmp = check_mktmp();
	setenv("TMPDIR", tmp, 1);
	lo_up();
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);

	char out[4096];
	char *list[] = { helper, "list", NULL };
	CHECK_EQ("list.exit", run(list, out, sizeof out), 0);
	char *bad[] = { helper, "no_such_workload", "1", "10", NULL };
	char junk[256];
	CHECK_EQ("usage.exit", run(bad, junk, sizeof junk), 2);
	int workloads = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		char name[64], kind[16];
		if (sscanf(line, "%63s %15s", name, kind) != 2 || (strcmp(kind, "proc") && strcmp(kind, "thread"))) {
			check_report("list.line", 0, "bad line %s", line);
			continue;
		}
		workloads++;
		one(name, 1, cpus);
		one(name, 2, cpus);
	}
	CHECK("list.count", workloads >= 17);
	rmdir(tmp);
	return check_done();
}
