/* t_dirshare: several processes change one directory at once -- the case
 * a kernel that lets creates and removals of different names run in
 * parallel (Shortbread's tmpfs) must keep POSIX for.
 *
 * 1. Same names: 4 processes create the same 200 names with O_EXCL, each
 *    starting at another name: every name is made exactly once, and holds
 *    the byte its maker wrote.
 * 2. Churn and listings: 3 processes create, write and close files under
 *    names of their own, link and unlink a second name, rename a file
 *    back and forth, make and remove a subdirectory, and unlink the file
 *    made 8 before, while a fourth lists the directory again and again
 *    with a 128-byte getdents64 buffer (many calls a listing): each of 40
 *    files that stay throughout is listed exactly once a listing, and the
 *    records' offsets rise. At the end the directory holds exactly the
 *    names the workers left, and 2 links.
 * Nothing here depends on timing: how the processes interleave changes
 * only how much each listing overlaps the churn. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define SAME_PROCS 4
#define SAME_NAMES 200
#define CHURNERS 3
#define ROUNDS 300
#define WINDOW 8
#define STAY 40

struct shared {
	int made[SAME_NAMES];
	int stop;
	int listings, bad_stay, bad_off, errors;
	int churn_errors;
};

static struct shared *sh;
static char dir[64];

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* list reads dir once; seen[i] counts stay file i, and names (if not
 * NULL) gets every other regular name, one per line. */
static int list(int seen[STAY], char *names, size_t cap)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	char buf[128];
	int64_t last = -1;
	int bad_off = 0;
	size_t used = 0;
	if (names)
		names[0] = 0;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0) {
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(buf + off);
			if (d->d_off <= last)
				bad_off = 1;
			last = d->d_off;
			int i;
			if (d->d_name[0] == 's' && sscanf(d->d_name, "s%d", &i) == 1 && i >= 0 && i < STAY)
				seen[i]++;
			else if (names && d->d_name[0] != '.' && used + strlen(d->d_name) + 2 < cap)
				used += sprintf(names + used, "%s\n", d->d_name);
			off += d->d_reclen;
		}
	}
	close(fd);
	return bad_off;
}

static void same_names(int p)
{
	char path[128];
	for (int k = 0; k < SAME_NAMES; k++) {
		int n = (k + p * SAME_NAMES / SAME_PROCS) % SAME_NAMES;
		snprintf(path, sizeof path, "%s/n%d", dir, n);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd >= 0) {
			__sync_fetch_and_add(&sh->made[n], 1);
			char b = (char)p;
			if (write(fd, &b, 1) != 1)
				__sync_fetch_and_add(&sh->churn_errors, 1);
			close(fd);
		} else if (errno != EEXIST) {
			__sync_fetch_and_add(&sh->churn_errors, 1);
		}
	}
}

static void churn(int w)
{
	char path[128], other[128];
	for (int n = 0; n < ROUNDS; n++) {
		snprintf(path, sizeof path, "%s/w%d.%d", dir, w, n % (2 * WINDOW));
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || write(fd, "x", 1) != 1 || close(fd))
			goto bad;
		if (n % 5 == 0) {
			snprintf(other, sizeof other, "%s/l%d", dir, w);
			if (link(path, other) || unlink(other))
				goto bad;
		}
		if (n % 3 == 0) {
			snprintf(other, sizeof other, "%s/r%d", dir, w);
			if (rename(path, other) || rename(other, path))
				goto bad;
		}
		if (n % 7 == 0) {
			snprintf(other, sizeof other, "%s/sub%d", dir, w);
			if (mkdir(other, 0755) || rmdir(other))
				goto bad;
		}
		if (n >= WINDOW) {
			snprintf(path, sizeof path, "%s/w%d.%d", dir, w, (n - WINDOW) % (2 * WINDOW));
			if (unlink(path))
				goto bad;
		}
		continue;
bad:
		fprintf(stderr, "t_dirshare: worker %d round %d: %s\n", w, n, strerror(errno));
		__sync_fetch_and_add(&sh->churn_errors, 1);
		return;
	}
}

static void lister(void)
{
	do {
		int seen[STAY] = { 0 };
		int r = list(seen, NULL, 0);
		if (r < 0) {
			__sync_fetch_and_add(&sh->errors, 1);
			continue;
		}
		sh->bad_off += r;
		for (int i = 0; i < STAY; i++)
			if (seen[i] != 1)
				sh->bad_stay++;
		sh->listings++;
	} while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST));
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	check_prog = "t_dirshare";
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	strcpy(dir, "/tmp/t_dirshare.XXXXXX");
	CHECK("mkdtemp", mkdtemp(dir) != NULL);

	/* 1. the same names from several processes */
	pid_t pids[SAME_PROCS + CHURNERS];
	for (int p = 0; p < SAME_PROCS; p++)
		if ((pids[p] = fork()) == 0) {
			same_names(p);
			_exit(0);
		}
	for (int p = 0; p < SAME_PROCS; p++)
		waitpid(pids[p], NULL, 0);
	int once = 0, content = 0;
	char path[128];
	for (int n = 0; n < SAME_NAMES; n++) {
		once += sh->made[n] == 1;
		snprintf(path, sizeof path, "%s/n%d", dir, n);
		struct stat st;
		content += stat(path, &st) == 0 && st.st_size == 1;
		unlink(path);
	}
	CHECK_EQ("same names: each made once", once, SAME_NAMES);
	CHECK_EQ("same names: each holds its byte", content, SAME_NAMES);
	CHECK_EQ("same names: no other error", sh->churn_errors, 0);
	sh->churn_errors = 0;

	/* 2. churn beside listings */
	for (int i = 0; i < STAY; i++) {
		snprintf(path, sizeof path, "%s/s%02d", dir, i);
		int fd = open(path, O_CREAT | O_WRONLY, 0644);
		close(fd);
	}
	pid_t lp = fork();
	if (lp == 0) {
		lister();
		_exit(0);
	}
	for (int w = 0; w < CHURNERS; w++)
		if ((pids[w] = fork()) == 0) {
			churn(w);
			_exit(0);
		}
	for (int w = 0; w < CHURNERS; w++)
		waitpid(pids[w], NULL, 0);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	waitpid(lp, NULL, 0);
	CHECK_EQ("churn: no call failed", sh->churn_errors, 0);
	CHECK("churn: listings finished", sh->listings > 0);
	CHECK_EQ("churn: listings that failed", sh->errors, 0);
	CHECK_EQ("churn: staying files not listed exactly once", sh->bad_stay, 0);
	CHECK_EQ("churn: listings with offsets not rising", sh->bad_off, 0);

	int seen[STAY] = { 0 };
	static char names[4096];
	CHECK_EQ("final listing: offsets rise", list(seen, names, sizeof names), 0);
	int stay_once = 0;
	for (int i = 0; i < STAY; i++)
		stay_once += seen[i] == 1;
	CHECK_EQ("final listing: staying files", stay_once, STAY);
	char *got[64], *want[64];
	int ngot = 0, nwant = 0;
	for (char *s = strtok(names, "\n"); s && ngot < 64; s = strtok(NULL, "\n"))
		got[ngot++] = s;
	static char wantbuf[CHURNERS * WINDOW][16];
	for (int w = 0; w < CHURNERS; w++)
		for (int n = ROUNDS - WINDOW; n < ROUNDS; n++) {
			snprintf(wantbuf[nwant], sizeof wantbuf[0], "w%d.%d", w, n % (2 * WINDOW));
			want[nwant] = wantbuf[nwant];
			nwant++;
		}
	qsort(got, ngot, sizeof got[0], cmp);
	qsort(want, nwant, sizeof want[0], cmp);
	int same = ngot == nwant;
	for (int i = 0; same && i < ngot; i++)
		same = strcmp(got[i], want[i]) == 0;
	CHECK_EQ("final listing: the names the workers left", ngot, nwant);
	CHECK("final listing: exactly those names", same);
	struct stat st;
	CHECK_SYS("stat dir", stat(dir, &st));
	CHECK_EQ("dir: 2 links (no subdirectory left)", (long)st.st_nlink, 2L);

	for (int i = 0; i < STAY; i++) {
		snprintf(path, sizeof path, "%s/s%02d", dir, i);
		unlink(path);
	}
	for (int i = 0; i < ngot; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, got[i]);
		unlink(path);
	}
	CHECK_SYS("rmdir", rmdir(dir));
	return check_done();
}
