/*
 * t_dirpos: listing positions of an ext4 directory. With EXT4_DISK=vdb
 * (the image t_mount uses, made by mke2fs -t ext4: dir_index), the disk
 * is mounted in a private directory and, in a new directory there:
 *   - a listing made one record per getdents64 call while names are
 *     added, so that the directory outgrows its one block (and becomes
 *     an indexed one) halfway through, shows every name there from the
 *     start exactly once and no name twice (not even "." or "..", which
 *     Linux may skip there);
 *   - before and after the growth, seekdir to what telldir returned
 *     after an entry resumes at the entry after it;
 *   - a telldir position taken while the directory had one block still
 *     means the same place once it is indexed: seekdir there lists the
 *     old names that came after it and none that came before (Linux
 *     lists every directory of a dir_index file system in hash order).
 * Everything is removed again before the unmount.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "check.h"

#define NAMELEN 9 /* "name-%04d": an ext4 entry of 20 bytes, a linux_dirent64 record of 32 */
#define MAXNAMES 4000

static char dir[400];
static int made; /* names name-0000 .. made-1 exist */

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void name_of(char *out, int i)
{
	snprintf(out, NAMELEN + 1, "name-%04d", (unsigned)i % 10000);
}

/* the index of a name of ours, or -1 for "." and ".." */
static int index_of(const char *name)
{
	if (strncmp(name, "name-", 5) != 0 || strlen(name) != NAMELEN)
		return -1;
	return atoi(name + 5);
}

static int add_name(void)
{
	char p[450], n[NAMELEN + 1];
	name_of(n, made);
	snprintf(p, sizeof p, "%s/%s", dir, n);
	int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	made++;
	return 0;
}

static long long dir_size(void)
{
	struct stat st;
	return stat(dir, &st) == 0 ? (long long)st.st_size : -1;
}

/* An entry of a whole listing and telldir after it. */
struct ent {
	int idx; /* index_of */
	char name[NAMELEN + 1];
	long tell;
};

/* list_all lists the directory with readdir, telldir after each entry. */
static int list_all(struct ent *out, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		out[n].idx = index_of(e->d_name);
		snprintf(out[n].name, sizeof out[n].name, "%s", e->d_name);
		out[n].tell = telldir(d);
		n++;
	}
	closedir(d);
	return n;
}

/* check_seek: seekdir to the telldir after each entry resumes at the
 * next entry (nothing after the last). */
static void check_seek(const char *what, struct ent *all, int n)
{
	DIR *d = opendir(dir);
	if (!d) {
		CHECK_SYS(what, -1);
		return;
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		seekdir(d, all[i].tell);
		struct dirent *e = readdir(d);
		if (i + 1 == n ? e != NULL : !e || strcmp(e->d_name, all[i + 1].name) != 0) {
			if (bad++ < 5)
				printf("# %s: seekdir after %s lists %s, not %s\n", what, all[i].name, e ? e->d_name : "nothing",
				       i + 1 == n ? "nothing" : all[i + 1].name);
		}
	}
	closedir(d);
	CHECK_EQ(what, bad, 0);
}

static struct ent before[MAXNAMES + 2], after[MAXNAMES + 2];
static unsigned char seen[MAXNAMES];

static void test_growth(void)
{
	long long bs = dir_size();
	CHECK("new directory: one block", bs >= 1024);
	if (bs < 1024)
		return;
	int room = (int)(bs - 24 - 12) / 20; /* past "." and "..", before a checksum tail */
	int start = room / 2;
	int ok = 1;
	for (int i = 0; i < start && ok; i++)
		ok = add_name() == 0;
	if (!CHECK("create half a block of names", ok))
		return;
	int nb = list_all(before, MAXNAMES + 2);
	CHECK_EQ("one block: readdir lists every name", nb, start + 2);
	check_seek("one block: seekdir(telldir) resumes after the entry", before, nb);

	/* One record a call, two names added after each, until the directory
	 * spans about three blocks. */
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (!CHECK_SYS("open the directory", fd))
		return;
	char buf[32] __attribute__((aligned(8)));
	int calls = 0, twice = 0, multi = 0, dot = 0, dotdot = 0;
	memset(seen, 0, sizeof seen);
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0) {
			CHECK_SYS("getdents64 with a 32-byte buffer", n);
			break;
		}
		if (n == 0)
			break;
		struct linux_dirent64 *e = (struct linux_dirent64 *)buf;
		if (e->d_reclen != n)
			multi++;
		int i = index_of(e->d_name);
		if (i < 0)
			*(strcmp(e->d_name, ".") == 0 ? &dot : &dotdot) += 1;
		else if (i < MAXNAMES && seen[i]++)
			twice++;
		if (++calls > 20 * room)
			break;
		for (int j = 0; j < 2 && made < 3 * room && made < MAXNAMES; j++)
			if (add_name() != 0)
				break;
	}
	close(fd);
	CHECK("the listing ends", calls <= 20 * room);
	CHECK_EQ("one record a call", multi, 0);
	CHECK_EQ("no name listed twice", twice, 0);
	/* Linux may miss one here: its one-block listing puts "." and ".."
	 * at their names' hashes, an indexed one first. */
	CHECK(". and .. not listed twice", dot <= 1 && dotdot <= 1);
	int missed = 0;
	for (int i = 0; i < start; i++)
		missed += seen[i] != 1;
	CHECK_EQ("every name there from the start listed", missed, 0);
	CHECK("the directory outgrew its block", dir_size() > bs);
	printf("# %d names at the start, %d at the end, %d getdents64 calls\n", start, made, calls);

	int na = list_all(after, MAXNAMES + 2);
	CHECK_EQ("grown: readdir lists every name", na, made + 2);
	check_seek("grown: seekdir(telldir) resumes after the entry", after, na);

	/* Positions from the one-block listing, used on the grown directory:
	 * the names of the start after the position are listed from there,
	 * those before it are not. */
	DIR *d = opendir(dir);
	if (!CHECK("opendir", d != NULL))
		return;
	int wrong = 0;
	for (int k = 0; k < nb; k += 3) {
		seekdir(d, before[k].tell);
		memset(seen, 0, sizeof seen);
		struct dirent *e;
		while ((e = readdir(d))) {
			int i = index_of(e->d_name);
			if (i >= 0 && i < MAXNAMES)
				seen[i]++;
		}
		for (int j = 0; j < nb; j++) {
			int i = before[j].idx;
			if (i < 0)
				continue;
			int want = j > k;
			if (seen[i] != want && wrong++ < 5)
				printf("# seekdir after %s (one block) on the grown directory: %s listed %d times, want %d\n",
				       before[k].name, before[j].name, seen[i], want);
		}
	}
	closedir(d);
	CHECK_EQ("one-block telldir positions hold once indexed", wrong, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *disk = getenv("EXT4_DISK");
	if (geteuid() != 0 || !disk || !*disk) {
		printf("t_dirpos: not root or no EXT4_DISK: skipped\n");
		return 0;
	}
	char dev[64], mnt[300];
	snprintf(dev, sizeof dev, "/dev/%s", disk);
	const char *tmp = check_mktmp();
	snprintf(mnt, sizeof mnt, "%s/mnt", tmp);
	CHECK_SYS("mkdir mnt", mkdir(mnt, 0755));
	if (CHECK_SYS("mount ext4", mount(dev, mnt, "ext4", 0, NULL))) {
		snprintf(dir, sizeof dir, "%s/t_dirpos", mnt);
		if (CHECK_SYS("mkdir", mkdir(dir, 0755))) {
			test_growth();
			int left = 0;
			for (int i = 0; i < made; i++) {
				char p[450], n[NAMELEN + 1];
				name_of(n, i);
				snprintf(p, sizeof p, "%s/%s", dir, n);
				left += unlink(p) != 0;
			}
			CHECK_EQ("unlink every name", left, 0);
			CHECK_SYS("rmdir", rmdir(dir));
		}
		CHECK_SYS("umount", umount(mnt));
	}
	rmdir(mnt);
	rmdir(tmp);
	return check_done();
}
