/*
 * t_mount: mount(2) and umount2(2). Always: the errors (EPERM for a user,
 * ENODEV for an unknown type, ENOTBLK for a source that is no block
 * device, ENOENT, EINVAL for umount of a non-mount point and bad flags,
 * EBUSY for umount of a mount with an open file or a working directory
 * in it), a tmpfs mounted, seen in /proc/mounts and /proc/self/mountinfo,
 * used and unmounted; MS_RDONLY; MNT_DETACH with an open file; a second
 * proc; busybox mount -t tmpfs and umount; MS_MOVE of a mount with one
 * inside it (EINVAL for a source that is no mount point, ELOOP into itself).
 *
 * With EXT4_DISK=vdb (the harness attached an image made by mke2fs -t
 * ext4, kernel command line passed on by the runner): /dev/vdb mounted
 * as ext4, mounting it twice (the same file system in two places; EBUSY
 * read-only or as another type), files, directories, a symlink, a
 * hard link, renames and an unlink, fsync, syncfs, sync, umount, then a
 * read-only mount reading it all back (the big file's data showing in
 * Cached, /proc/meminfo, until drop_caches). A file's pages leave the
 * page cache when it is truncated and unlinked, without drop_caches
 * (test_file_pages). Then discards (the image is
 * attached with discard=unmap, so a discarded block reads as zeros): a
 * 2 MiB file written, fsync'd, deleted and committed on a mount with the
 * discard option is gone from the disk after the unmount; on a mount
 * without it, FITRIM after another such file reports a length > 0 and
 * the file is gone too (and busybox fstrim works), with FITRIM's errors
 * (EPERM for a user, ENOTTY on tmpfs, EFAULT, EINVAL for len, start and
 * minlen). The options in force as /proc/mounts and mountinfo show them
 * (Linux 6.1's ext4: "discard" where the disk discards, errors= when not
 * the superblock's, commit=N when not the default, data= when given;
 * errors=bogus is EINVAL), and the types the disk is not (ext3 or ext2,
 * even read-only: EINVAL).
 *
 * With EXT2_DISK=sata:12288 (a disk made by mke2fs -t ext2; Linux mounts
 * it with its ext4 driver): discard taken on a file system without a
 * journal and shown, a deleted file's blocks discarded at once; the
 * journal's options refused (commit= and data= as ext2, commit=7 as
 * ext4 without a journal: EINVAL; commit=5, the default, taken), and
 * ext3 refused. `t_mount --check-image IMAGE [EXT2_IMAGE]` on the host
 * then runs e2fsck -fn on the images and checks, with debugfs, that the
 * files hold what the guest wrote, and that no deleted file's blocks
 * are left.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "check.h"
#include "disks.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 1
#endif
#define TMPFS_MAGIC 0x01021994
#define EXT4_MAGIC 0xef53
#define BIG_SIZE (300 * 1024 + 123)

static char mnt[300], mnt2[300];

/* byte i of the big file */
static unsigned char big_byte(long i)
{
	unsigned x = (unsigned)i * 2654435761u;
	return (unsigned char)(x >> 13 ^ x >> 5 ^ (unsigned)i);
}

static const char alpha[] = "alpha: the first file on the disk\n";
static const char renamed[] = "beta, written as tmp and renamed\n";

/* whether /proc/mounts (or mountinfo) has a line naming dir and type */
static int in_table(const char *file, const char *dir, const char *type)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return 0;
	char line[1024];
	int found = 0;
	char pat[400], tpat[80];
	snprintf(pat, sizeof pat, " %s ", dir);
	snprintf(tpat, sizeof tpat, " %s ", type);
	while (fgets(line, sizeof line, f))
		if (strstr(line, pat) && strstr(line, tpat))
			found = 1;
	fclose(f);
	return found;
}

/* Copies the options of the mount on dir into opts: /proc/mounts' field
 * 4, or with mountinfo set, /proc/self/mountinfo's super options (the
 * last field). Returns 0 if no line names dir. */
static int mount_opts(int mountinfo, const char *dir, char *opts, size_t n)
{
	FILE *f = fopen(mountinfo ? "/proc/self/mountinfo" : "/proc/mounts", "r");
	if (!f)
		return 0;
	char line[1024];
	int found = 0;
	while (fgets(line, sizeof line, f)) {
		char *field[16];
		int nf = 0;
		for (char *tok = strtok(line, " \n"); tok && nf < 16; tok = strtok(NULL, " \n"))
			field[nf++] = tok;
		int at = mountinfo ? 4 : 1;
		if (nf > at && strcmp(field[at], dir) == 0 && nf >= (mountinfo ? 7 : 4)) {
			snprintf(opts, n, "%s", mountinfo ? field[nf - 1] : field[3]);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* Checks the options /proc/mounts and mountinfo show for the mount on mnt. */
static void check_opts(const char *what, const char *want, const char *want_super)
{
	char got[256] = "", name[200];
	snprintf(name, sizeof name, "%s: /proc/mounts options", what);
	CHECK(name, mount_opts(0, mnt, got, sizeof got));
	CHECK_STR(name, got, want);
	snprintf(name, sizeof name, "%s: mountinfo super options", what);
	got[0] = 0;
	CHECK(name, mount_opts(1, mnt, got, sizeof got));
	CHECK_STR(name, got, want_super);
}

static int write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, (const char *)p + done, n - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	int r = fsync(fd);
	close(fd);
	return r;
}

/* the file's contents, NUL-terminated (free it), or NULL */
static char *read_file(const char *path, long *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	for (;;) {
		if (n == cap)
			b = realloc(b, (cap *= 2) + 1);
		ssize_t r = read(fd, b + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = 0;
	if (len)
		*len = (long)n;
	return b;
}

/* a /proc/meminfo field in KiB, -1 if missing */
static long long meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = atoll(line + n + 1);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

static int run_busybox(char *const argv[])
{
	const char *bb = getenv("BUSYBOX");
	pid_t pid = fork();
	if (pid == 0) {
		execv(bb && *bb ? bb : "/bin/busybox", argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_errors(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(1000) != 0)
			_exit(2);
		/* on /tmp: the test's own directory is closed to the user */
		if (mount("none", "/tmp", "tmpfs", 0, NULL) == 0)
			_exit(3);
		if (errno != EPERM)
			_exit(4);
		_exit(umount("/proc") == -1 && errno == EPERM ? 0 : 5);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK("mount and umount by a user: EPERM", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_ERR("unknown type: ENODEV", mount("none", mnt, "nosuchfs", 0, NULL), ENODEV);
	CHECK_ERR("ext4 from a character device: ENOTBLK", mount("/dev/null", mnt, "ext4", 0, NULL), ENOTBLK);
	CHECK_ERR("ext4 from a missing device: ENOENT", mount("/dev/nosuchdisk", mnt, "ext4", 0, NULL), ENOENT);
	CHECK_ERR("missing target: ENOENT", mount("none", "/nosuchdir", "tmpfs", 0, NULL), ENOENT);
	CHECK_ERR("umount of a non-mount point: EINVAL", umount(mnt), EINVAL);
	CHECK_ERR("umount of a missing path: ENOENT", umount("/nosuchdir"), ENOENT);
	CHECK_ERR("umount2 with unknown flags: EINVAL", umount2("/proc", 0x100), EINVAL);
}

static void test_tmpfs(void)
{
	struct stat before, after;
	CHECK_SYS("stat the directory", stat(mnt, &before));
	if (!CHECK_SYS("mount tmpfs", mount("none", mnt, "tmpfs", 0, "mode=0750")))
		return;
	CHECK_SYS("stat the mount", stat(mnt, &after));
	CHECK("a new device", after.st_dev != before.st_dev);
	CHECK_EQ("mode= honoured", after.st_mode & 07777, 0750);
	struct statfs sf;
	CHECK_SYS("statfs", statfs(mnt, &sf));
	CHECK_EQ("statfs says tmpfs", sf.f_type, TMPFS_MAGIC);
	CHECK("in /proc/mounts", in_table("/proc/mounts", mnt, "tmpfs"));
	CHECK("in /proc/self/mountinfo", in_table("/proc/self/mountinfo", mnt, "tmpfs"));
	char f[400];
	snprintf(f, sizeof f, "%s/file", mnt);
	CHECK_SYS("create a file in it", write_file(f, "x", 1));
	int fd = open(f, O_RDONLY);
	CHECK_SYS("open it", fd);
	CHECK_ERR("umount with an open file: EBUSY", umount(mnt), EBUSY);
	close(fd);
	CHECK_SYS("chdir into it", chdir(mnt));
	CHECK_ERR("umount with the cwd in it: EBUSY", umount(mnt), EBUSY);
	CHECK_SYS("chdir out", chdir("/"));
	CHECK_SYS("umount", umount(mnt));
	CHECK("gone from /proc/mounts", !in_table("/proc/mounts", mnt, "tmpfs"));
	CHECK_ERR("its file is gone", access(f, F_OK), ENOENT);
	CHECK_SYS("stat the directory again", stat(mnt, &after));
	CHECK("the directory is back", after.st_dev == before.st_dev && after.st_ino == before.st_ino);

	/* read-only */
	CHECK_SYS("mount tmpfs read-only", mount("none", mnt, "tmpfs", MS_RDONLY, NULL));
	CHECK_ERR("create on a read-only mount: EROFS", open(f, O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_SYS("umount it", umount(mnt));

	/* lazy unmount with an open file */
	CHECK_SYS("mount tmpfs again", mount("none", mnt, "tmpfs", 0, NULL));
	CHECK_SYS("create a file", write_file(f, "lazy", 4));
	fd = open(f, O_RDONLY);
	CHECK_SYS("umount2 MNT_DETACH with an open file", umount2(mnt, MNT_DETACH));
	char b[8] = { 0 };
	CHECK_EQ("the open file still reads", pread(fd, b, sizeof b, 0), 4);
	CHECK_STR("what it holds", b, "lazy");
	close(fd);
	CHECK_ERR("the name is gone", access(f, F_OK), ENOENT);

	/* stacked: a second mount on a mount point */
	CHECK_SYS("mount tmpfs", mount("none", mnt, "tmpfs", 0, NULL));
	CHECK_SYS("mount a second tmpfs on it", mount("other", mnt, "tmpfs", 0, NULL));
	CHECK_SYS("umount the top", umount(mnt));
	CHECK_SYS("umount the bottom", umount(mnt));
	CHECK_ERR("nothing mounted now", umount(mnt), EINVAL);

	/* a second proc */
	CHECK_SYS("mount proc", mount("proc", mnt, "proc", 0, NULL));
	char self[400];
	snprintf(self, sizeof self, "%s/self/stat", mnt);
	CHECK_SYS("its self/stat", access(self, R_OK));
	CHECK_SYS("umount proc", umount(mnt));

	/* busybox */
	char *mountv[] = { "mount", "-t", "tmpfs", "none", mnt, NULL };
	CHECK_EQ("busybox mount -t tmpfs none DIR", run_busybox(mountv), 0);
	CHECK("busybox's mount in /proc/mounts", in_table("/proc/mounts", mnt, "tmpfs"));
	char *umountv[] = { "umount", mnt, NULL };
	CHECK_EQ("busybox umount DIR", run_busybox(umountv), 0);
	CHECK("busybox's umount", !in_table("/proc/mounts", mnt, "tmpfs"));
}

/* MS_MOVE: a mount moves to another directory with the mounts inside
 * it, as an initramfs's switch_root moves the real root onto /. */
static void test_move(void)
{
	char a[320], b[320], inner[340], f[340];
	struct stat sb, si;
	snprintf(a, sizeof a, "%s/a", mnt);
	snprintf(b, sizeof b, "%s/b", mnt);
	snprintf(inner, sizeof inner, "%s/inner", a);
	CHECK_SYS("mkdir a", mkdir(a, 0755));
	CHECK_SYS("mkdir b", mkdir(b, 0755));
	if (!CHECK_SYS("mount tmpfs on a", mount("none", a, "tmpfs", 0, NULL)))
		return;
	CHECK_SYS("mkdir a/inner", mkdir(inner, 0755));
	CHECK_SYS("mount tmpfs on a/inner", mount("inner", inner, "tmpfs", 0, NULL));
	snprintf(f, sizeof f, "%s/file", a);
	CHECK_SYS("create a/file", write_file(f, "moved", 5));
	CHECK_ERR("move a directory that is no mount point: EINVAL", mount(b, a, NULL, MS_MOVE, NULL), EINVAL);
	CHECK_ERR("move a mount into itself: ELOOP", mount(a, inner, NULL, MS_MOVE, NULL), ELOOP);
	CHECK_ERR("move onto a missing directory: ENOENT", mount(a, "/nosuchdir", NULL, MS_MOVE, NULL), ENOENT);
	CHECK_SYS("move a to b", mount(a, b, NULL, MS_MOVE, NULL));
	snprintf(f, sizeof f, "%s/file", b);
	char *got = read_file(f, NULL);
	CHECK_STR("its file is at b", got ? got : "(none)", "moved");
	free(got);
	snprintf(f, sizeof f, "%s/file", a);
	CHECK_ERR("and not at a", access(f, F_OK), ENOENT);
	snprintf(inner, sizeof inner, "%s/inner", b);
	CHECK("the mount inside moved with it",
	      stat(b, &sb) == 0 && stat(inner, &si) == 0 && sb.st_dev != si.st_dev);
	CHECK("/proc/mounts has it at b", in_table("/proc/mounts", b, "tmpfs") && !in_table("/proc/mounts", a, "tmpfs"));
	CHECK_SYS("umount b/inner", umount(inner));
	CHECK_SYS("umount b", umount(b));
	CHECK_SYS("rmdir a", rmdir(a));
	CHECK_SYS("rmdir b", rmdir(b));
}

static void test_ext4(const char *dev)
{
	if (!CHECK_SYS("mount ext4", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	CHECK("ext4 in /proc/mounts", in_table("/proc/mounts", mnt, "ext4"));
	/* The device mounted a second time is the same file system seen in
	 * two places (Linux shares the superblock): a change made through
	 * one shows through the other; a read-only mount of it now, or
	 * another type, is EBUSY. */
	CHECK_ERR("the same disk read-only over read-write: EBUSY", mount(dev, mnt2, "ext4", MS_RDONLY, NULL), EBUSY);
	CHECK_ERR("the same disk as ext2: EBUSY", mount(dev, mnt2, "ext2", 0, NULL), EBUSY);
	if (CHECK_SYS("the same disk twice", mount(dev, mnt2, "ext4", 0, NULL))) {
		char a1[400], a2[400];
		snprintf(a1, sizeof a1, "%s/lost+found", mnt2);
		CHECK_SYS("the same disk twice: the same file system", access(a1, F_OK));
		snprintf(a1, sizeof a1, "%s/twice", mnt);
		snprintf(a2, sizeof a2, "%s/twice", mnt2);
		CHECK_SYS("made through the first", write_file(a1, alpha, strlen(alpha)));
		struct stat st;
		CHECK("seen through the second", stat(a2, &st) == 0 && st.st_size == (off_t)strlen(alpha));
		CHECK_SYS("removed through the second", unlink(a2));
		CHECK_ERR("gone through the first", stat(a1, &st), ENOENT);
		CHECK_SYS("mkdir through the second", mkdir(a2, 0755));
		CHECK("a directory through the first", stat(a1, &st) == 0 && S_ISDIR(st.st_mode));
		CHECK_SYS("rmdir through the first", rmdir(a1));
		CHECK_SYS("umount the second", umount(mnt2));
		CHECK_ERR("the first still there after", stat(a1, &st), ENOENT);
	}
	struct statfs sf;
	CHECK_SYS("statfs", statfs(mnt, &sf));
	CHECK_EQ("statfs says ext4", sf.f_type, EXT4_MAGIC);
	char p[400], q[400];
	snprintf(p, sizeof p, "%s/t_mount", mnt);
	CHECK_SYS("mkdir", mkdir(p, 0755));
	snprintf(p, sizeof p, "%s/t_mount/d", mnt);
	CHECK_SYS("mkdir d", mkdir(p, 0755));
	snprintf(p, sizeof p, "%s/t_mount/d/sub", mnt);
	CHECK_SYS("mkdir d/sub", mkdir(p, 0700));
	snprintf(p, sizeof p, "%s/t_mount/alpha", mnt);
	CHECK_SYS("write alpha (fsync)", write_file(p, alpha, strlen(alpha)));
	snprintf(p, sizeof p, "%s/t_mount/tmp", mnt);
	CHECK_SYS("write tmp", write_file(p, renamed, strlen(renamed)));
	snprintf(q, sizeof q, "%s/t_mount/beta", mnt);
	CHECK_SYS("rename tmp to beta", rename(p, q));
	snprintf(p, sizeof p, "%s/t_mount/link", mnt);
	CHECK_SYS("symlink", symlink("alpha", p));
	snprintf(p, sizeof p, "%s/t_mount/hard", mnt);
	CHECK_SYS("hard link", link(q, p));
	snprintf(p, sizeof p, "%s/t_mount/gone", mnt);
	CHECK_SYS("write gone", write_file(p, "x", 1));
	CHECK_SYS("unlink gone", unlink(p));
	/*
	 * Blocks fallocate leaves past the end go with a truncate to the
	 * unchanged size (ext4_setattr) and with the file; the host's
	 * e2fsck finds a block left marked in use.
	 */
	snprintf(p, sizeof p, "%s/t_mount/prealloc", mnt);
	int pfd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK_SYS("create prealloc", pfd);
	struct stat pst;
	CHECK_SYS("fallocate past the end", fallocate(pfd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20));
	CHECK("fallocate past the end: size 0, blocks", fstat(pfd, &pst) == 0 && pst.st_size == 0 && pst.st_blocks >= (1 << 20) / 512);
	CHECK_SYS("ftruncate to the same size", ftruncate(pfd, 0));
	CHECK_EQ("ftruncate to the same size: blocks past the end go", fstat(pfd, &pst) == 0 ? pst.st_blocks : -1, 0);
	CHECK_SYS("fallocate past the end again", fallocate(pfd, FALLOC_FL_KEEP_SIZE, 4096, 1 << 20));
	close(pfd);
	CHECK_SYS("unlink prealloc", unlink(p));
	unsigned char *big = malloc(BIG_SIZE);
	for (long i = 0; i < BIG_SIZE; i++)
		big[i] = big_byte(i);
	snprintf(p, sizeof p, "%s/t_mount/d/sub/big", mnt);
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK_SYS("create big", fd);
	CHECK_EQ("write big", write(fd, big, BIG_SIZE), BIG_SIZE);
	CHECK_SYS("fdatasync big", fdatasync(fd));
	CHECK_SYS("syncfs", syncfs(fd));
	snprintf(q, sizeof q, "%s/t_mount/d/big", mnt);
	CHECK_SYS("rename across directories", rename(p, q));
	CHECK_ERR("umount with an open file: EBUSY", umount(mnt), EBUSY);
	close(fd);
	snprintf(p, sizeof p, "%s/t_mount", mnt);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	CHECK_SYS("fsync a directory", fsync(fd));
	close(fd);
	sync();
	CHECK_SYS("umount ext4", umount(mnt));
	CHECK("gone from /proc/mounts", !in_table("/proc/mounts", mnt, "ext4"));

	/* read it back from a read-only mount */
	if (!CHECK_SYS("mount ext4 read-only", mount(dev, mnt, "ext4", MS_RDONLY, NULL)))
		return;
	snprintf(p, sizeof p, "%s/t_mount/alpha", mnt);
	char *s = read_file(p, NULL);
	CHECK_STR("alpha reads back", s, alpha);
	free(s);
	snprintf(p, sizeof p, "%s/t_mount/beta", mnt);
	s = read_file(p, NULL);
	CHECK_STR("beta reads back", s, renamed);
	free(s);
	snprintf(p, sizeof p, "%s/t_mount/link", mnt);
	char l[64] = { 0 };
	CHECK_EQ("readlink", readlink(p, l, sizeof l - 1), 5);
	CHECK_STR("the link's target", l, "alpha");
	struct stat st;
	snprintf(p, sizeof p, "%s/t_mount/hard", mnt);
	CHECK_SYS("stat hard", stat(p, &st));
	CHECK_EQ("two links", st.st_nlink, 2);
	snprintf(p, sizeof p, "%s/t_mount/tmp", mnt);
	CHECK_ERR("tmp is gone", access(p, F_OK), ENOENT);
	snprintf(p, sizeof p, "%s/t_mount/d/sub/big", mnt);
	CHECK_ERR("big left sub", access(p, F_OK), ENOENT);
	snprintf(p, sizeof p, "%s/t_mount/d/big", mnt);
	long n = 0;
	long long before = meminfo_kb("Cached");
	s = read_file(p, &n);
	long long filled = meminfo_kb("Cached");
	CHECK("big reads back", s && n == BIG_SIZE && memcmp(s, big, BIG_SIZE) == 0);
	free(s);
	/* the file's data stays in the page cache until drop_caches */
	CHECK("reading big fills the page cache", before >= 0 && filled - before >= BIG_SIZE / 1024 / 2);
	CHECK("drop_caches", check_drop_caches());
	CHECK("drop_caches empties it", filled - meminfo_kb("Cached") >= BIG_SIZE / 1024 / 2);
	s = read_file(p, &n);
	CHECK("big reads back from the disk", s && n == BIG_SIZE && memcmp(s, big, BIG_SIZE) == 0);
	free(s);
	snprintf(p, sizeof p, "%s/t_mount/new", mnt);
	CHECK_ERR("create on a read-only mount: EROFS", open(p, O_CREAT | O_WRONLY, 0644), EROFS);
	CHECK_SYS("umount", umount(mnt));
	free(big);
}

/* A file's pages leave the page cache with the file, not at drop_caches:
 * an 8 MiB file written and read back shows in Cached; truncated to
 * 1 MiB it gives back most of the rest, and unlinked (its last name, no
 * open file: Linux frees the inode and drops its pages at the last iput)
 * most of what was left. */
#define PAGES_SIZE (8L << 20)
#define PAGES_KEEP (1L << 20)

/* pwrite or pread (w = 0) of n bytes at off, in as many calls as it
 * takes; the bytes done */
static long pio(int w, int fd, unsigned char *b, long n, long off)
{
	long done = 0;
	while (done < n) {
		ssize_t r = w ? pwrite(fd, b + done, n - done, off + done) : pread(fd, b + done, n - done, off + done);
		if (r <= 0)
			break;
		done += r;
	}
	return done;
}

/* The access time on ext4 (relatime by default, noatime on a remount):
 * a read moves a stale atime and leaves the change time; it survives the
 * unmount (it went through the journal like any inode change). */
static void test_atime(const char *dev)
{
	if (!CHECK_SYS("mount ext4 for the atime checks", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	char p[400], b[16];
	snprintf(p, sizeof p, "%s/atime", mnt);
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK_EQ("atime: write", write(fd, "data", 4), 4);
	close(fd);
	struct timespec old[2] = {{1000, 0}, {0, UTIME_OMIT}};
	CHECK_SYS("atime: set to 1000", utimensat(AT_FDCWD, p, old, 0));
	struct stat st0, st1;
	stat(p, &st0);
	fd = open(p, O_RDONLY);
	CHECK_EQ("atime: read", read(fd, b, sizeof b), 4);
	close(fd);
	stat(p, &st1);
	CHECK("atime: relatime moves a stale atime", st1.st_atim.tv_sec > 1000);
	CHECK("atime: the change time stays",
	      st1.st_ctim.tv_sec == st0.st_ctim.tv_sec && st1.st_ctim.tv_nsec == st0.st_ctim.tv_nsec);
	CHECK_SYS("atime: remount noatime", mount(NULL, mnt, NULL, MS_REMOUNT | MS_NOATIME, NULL));
	CHECK_SYS("atime: set to 1000 again", utimensat(AT_FDCWD, p, old, 0));
	fd = open(p, O_RDONLY);
	CHECK_EQ("atime: read under noatime", read(fd, b, sizeof b), 4);
	close(fd);
	stat(p, &st1);
	CHECK_EQ("atime: noatime keeps it", st1.st_atim.tv_sec, 1000);
	CHECK_SYS("atime: remount relatime", mount(NULL, mnt, NULL, MS_REMOUNT | MS_RELATIME, NULL));
	fd = open(p, O_RDONLY);
	read(fd, b, sizeof b);
	close(fd);
	stat(p, &st0);
	CHECK_SYS("atime: umount", umount(mnt));
	if (!CHECK_SYS("atime: mount again", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	stat(p, &st1);
	CHECK("atime: kept across the unmount", st0.st_atim.tv_sec > 1000 && st1.st_atim.tv_sec == st0.st_atim.tv_sec);
	unlink(p);
	CHECK_SYS("atime: umount again", umount(mnt));
}

static void test_file_pages(const char *dev)
{
	if (!CHECK_SYS("mount ext4 for the page cache checks", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	char p[400];
	snprintf(p, sizeof p, "%s/pages", mnt);
	unsigned char *buf = malloc(PAGES_SIZE), *back = malloc(PAGES_SIZE);
	for (long i = 0; i < PAGES_SIZE; i++)
		buf[i] = big_byte(i + 7);
	long long before = meminfo_kb("Cached");
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
	CHECK_SYS("pages: create", fd);
	CHECK_EQ("pages: write 8 MiB", pio(1, fd, buf, PAGES_SIZE, 0), PAGES_SIZE);
	CHECK_SYS("pages: fsync", fsync(fd));
	CHECK_EQ("pages: read 8 MiB back", pio(0, fd, back, PAGES_SIZE, 0), PAGES_SIZE);
	CHECK("pages: the bytes written", memcmp(buf, back, PAGES_SIZE) == 0);
	long long filled = meminfo_kb("Cached");
	CHECK("pages: the file shows in Cached", before >= 0 && filled - before >= PAGES_SIZE / 1024 / 2);
	CHECK_SYS("pages: truncate to 1 MiB", ftruncate(fd, PAGES_KEEP));
	long long cut = meminfo_kb("Cached");
	CHECK("pages: truncate gives back the pages past the end", filled - cut >= (PAGES_SIZE - PAGES_KEEP) / 1024 / 2);
	CHECK_EQ("pages: read 1 MiB back", pio(0, fd, back, PAGES_SIZE, 0), PAGES_KEEP);
	CHECK("pages: the bytes kept", memcmp(buf, back, PAGES_KEEP) == 0);
	CHECK_EQ("pages: write 8 MiB again", pio(1, fd, buf, PAGES_SIZE, 0), PAGES_SIZE);
	CHECK_EQ("pages: read 8 MiB back again", pio(0, fd, back, PAGES_SIZE, 0), PAGES_SIZE);
	CHECK("pages: the bytes written again", memcmp(buf, back, PAGES_SIZE) == 0);
	close(fd);
	filled = meminfo_kb("Cached");
	CHECK_SYS("pages: unlink", unlink(p));
	long long gone = meminfo_kb("Cached");
	CHECK("pages: unlink gives the pages back without drop_caches", filled - gone >= PAGES_SIZE / 1024 / 2);
	if (filled - gone < PAGES_SIZE / 1024 / 2)
		printf("t_mount: Cached %lld KiB before the write, %lld read back, %lld unlinked\n", before, filled, gone);
	CHECK_SYS("umount", umount(mnt));
	free(buf);
	free(back);
}

/* <linux/fs.h> (musl-gcc has no kernel headers) */
struct fstrim_range {
	uint64_t start, len, minlen;
};
#define FITRIM _IOWR('X', 121, struct fstrim_range)

/* The deleted files of test_discard: TRIM_CHUNKS chunks of 512 bytes,
 * each starting with "t_mount discard NAME chunk N". What may be left of
 * one on the disk after its blocks were discarded: a device may drop
 * the parts of a discard that do not cover whole blocks of its own
 * (QEMU's raw files: the host file system's), so a few chunks at the
 * ends of each extent may stay. */
#define TRIM_CHUNKS 4096
#define TRIM_LEFT_MAX 64

static void chunk_sig(char *b, const char *name, int i)
{
	memset(b, 0, 512);
	snprintf(b, 512, "t_mount discard %s chunk %d", name, i);
	for (int j = 64; j < 512; j++)
		b[j] = (char)(j * 7 + i);
}

/* Writes the file NAME in dir, fsyncs it and deletes it. */
static int write_and_delete(const char *dir, const char *name)
{
	char p[400], b[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	/* in writes of 64 KiB: a file system without a journal writes its
	 * metadata at each */
	static char buf[128 * 512];
	int ok = 1;
	for (int i = 0; i < TRIM_CHUNKS && ok; i++) {
		chunk_sig(b, name, i);
		memcpy(buf + i % 128 * 512, b, 512);
		if (i % 128 == 127)
			ok = write(fd, buf, sizeof buf) == (ssize_t)sizeof buf;
	}
	ok = ok && fsync(fd) == 0;
	close(fd);
	return ok && unlink(p) == 0 ? 0 : -1;
}

/* How many chunks of the deleted file NAME the disk or image at path
 * still holds. */
static long chunks_left(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	char prefix[64];
	int plen = snprintf(prefix, sizeof prefix, "t_mount discard %s chunk ", name);
	static char b[1 << 20];
	long left = 0;
	ssize_t n;
	while ((n = read(fd, b, sizeof b)) > 0)
		for (ssize_t off = 0; off + 512 <= n; off += 512)
			left += memcmp(b + off, prefix, plen) == 0;
	close(fd);
	return n < 0 ? -1 : left;
}

static void test_discard(const char *dev)
{
	/* the discard mount option: after the commit that frees them */
	if (!CHECK_SYS("mount ext4 -o discard", mount(dev, mnt, "ext4", 0, "discard")))
		return;
	check_opts("discard", "rw,relatime,discard", "rw,discard");
	CHECK_SYS("discard option: write, fsync and delete a file", write_and_delete(mnt, "option"));
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);
	CHECK_SYS("discard option: syncfs", syncfs(fd));
	close(fd);
	CHECK_SYS("umount the discard mount", umount(mnt));
	long left = chunks_left(dev, "option");
	CHECK("discard option: the deleted file is gone from the disk", left >= 0 && left <= TRIM_LEFT_MAX);
	if (left > 0)
		printf("t_mount: %ld chunks of 512 bytes left of the file deleted on the discard mount\n", left);

	/* the options shown: commit=N when not the default, data= when given,
	 * the last of discard and nodiscard */
	if (CHECK_SYS("mount ext4 -o commit=7,data=ordered,discard,nodiscard",
		      mount(dev, mnt, "ext4", 0, "commit=7,data=ordered,discard,nodiscard"))) {
		check_opts("commit=7", "rw,relatime,commit=7,data=ordered", "rw,commit=7,data=ordered");
		CHECK_SYS("umount", umount(mnt));
	}
	if (CHECK_SYS("mount ext4 -o ro,commit=5,discard", mount(dev, mnt, "ext4", MS_RDONLY, "commit=5,discard"))) {
		check_opts("commit=5", "ro,relatime,discard", "ro,discard");
		CHECK_SYS("umount", umount(mnt));
	}
	/* errors=: shown when not the superblock's (mke2fs's: continue),
	 * after discard and before commit= */
	if (CHECK_SYS("mount ext4 -o errors=remount-ro,commit=7,discard",
		      mount(dev, mnt, "ext4", 0, "errors=remount-ro,commit=7,discard"))) {
		check_opts("errors=remount-ro", "rw,relatime,discard,errors=remount-ro,commit=7",
			   "rw,discard,errors=remount-ro,commit=7");
		CHECK_SYS("umount", umount(mnt));
	}
	if (CHECK_SYS("mount ext4 -o errors=continue", mount(dev, mnt, "ext4", 0, "errors=continue"))) {
		check_opts("errors=continue", "rw,relatime", "rw");
		CHECK_SYS("umount", umount(mnt));
	}
	CHECK_ERR("errors=bogus: EINVAL", mount(dev, mnt, "ext4", 0, "errors=bogus"), EINVAL);
	/* not ext3 nor ext2: extents, 64bit, flex_bg */
	CHECK_ERR("the ext4 disk as ext3: EINVAL", mount(dev, mnt, "ext3", 0, NULL), EINVAL);
	CHECK_ERR("the ext4 disk as ext2 read-only: EINVAL", mount(dev, mnt, "ext2", MS_RDONLY, NULL), EINVAL);

	/* FITRIM */
	if (!CHECK_SYS("mount ext4 again", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	check_opts("no options", "rw,relatime", "rw");
	CHECK_SYS("FITRIM: write, fsync and delete a file", write_and_delete(mnt, "fitrim"));
	sync();
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	CHECK_SYS("open the mount point", fd);
	pid_t pid = fork();
	if (pid == 0) {
		struct fstrim_range r = { 0, UINT64_MAX, 0 };
		_exit(setuid(65534) == 0 && ioctl(fd, FITRIM, &r) < 0 && errno == EPERM ? 0 : 1);
	}
	int st;
	CHECK("FITRIM as a user: EPERM", pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_ERR("FITRIM: EFAULT", ioctl(fd, FITRIM, (void *)8), EFAULT);
	struct fstrim_range shortlen = { 0, 100, 0 }, past = { 1ULL << 40, 1 << 20, 0 }, minlen = { 0, UINT64_MAX, 1ULL << 40 };
	CHECK_ERR("FITRIM: len under a block: EINVAL", ioctl(fd, FITRIM, &shortlen), EINVAL);
	CHECK_ERR("FITRIM: start past the end: EINVAL", ioctl(fd, FITRIM, &past), EINVAL);
	CHECK_ERR("FITRIM: minlen over a group: EINVAL", ioctl(fd, FITRIM, &minlen), EINVAL);
	struct fstrim_range r = { 0, UINT64_MAX, 0 };
	CHECK_SYS("FITRIM", ioctl(fd, FITRIM, &r));
	struct statfs whole;
	CHECK_SYS("FITRIM: statfs", statfs(mnt, &whole));
	CHECK("FITRIM: len > 0, at most the disk", r.len > 0 && r.len <= (unsigned long long)whole.f_blocks * whole.f_bsize);
	CHECK("FITRIM: start and minlen as given", r.start == 0 && r.minlen == 0);
	close(fd);
	char *fstrimv[] = { "fstrim", mnt, NULL };
	CHECK_EQ("busybox fstrim DIR", run_busybox(fstrimv), 0);
	CHECK_SYS("mount tmpfs", mount("none", mnt2, "tmpfs", 0, NULL));
	fd = open(mnt2, O_RDONLY | O_DIRECTORY);
	CHECK_ERR("FITRIM on tmpfs: ENOTTY", ioctl(fd, FITRIM, &r), ENOTTY);
	close(fd);
	CHECK_SYS("umount tmpfs", umount(mnt2));
	CHECK_SYS("umount after FITRIM", umount(mnt));
	left = chunks_left(dev, "fitrim");
	CHECK("FITRIM: the deleted file is gone from the disk", left >= 0 && left <= TRIM_LEFT_MAX);
	if (left > 0)
		printf("t_mount: %ld chunks of 512 bytes left of the file deleted before FITRIM\n", left);
}

/* A file system without a journal (made by mke2fs -t ext2). */
static void test_ext2(const char *dev)
{
	if (!CHECK_SYS("mount ext2 -o discard", mount(dev, mnt, "ext2", 0, "discard")))
		return;
	check_opts("ext2 discard", "rw,relatime,discard", "rw,discard");
	struct statfs sf;
	CHECK("ext2: statfs says ext2/3/4", statfs(mnt, &sf) == 0 && sf.f_type == EXT4_MAGIC);
	CHECK_SYS("ext2: write, fsync and delete a file", write_and_delete(mnt, "ext2"));
	char p[400];
	snprintf(p, sizeof p, "%s/kept", mnt);
	CHECK_SYS("ext2: write a file to keep", write_file(p, alpha, strlen(alpha)));
	sync();
	CHECK_SYS("ext2: umount", umount(mnt));
	long left = chunks_left(dev, "ext2");
	CHECK("ext2 discard: the deleted file is gone from the disk", left >= 0 && left <= TRIM_LEFT_MAX);
	if (left > 0)
		printf("t_mount: %ld chunks of 512 bytes left of the file deleted on ext2\n", left);

	/* the journal's options */
	CHECK_ERR("ext2 -o commit=5: EINVAL", mount(dev, mnt, "ext2", 0, "commit=5"), EINVAL);
	CHECK_ERR("ext2 -o data=ordered: EINVAL", mount(dev, mnt, "ext2", 0, "data=ordered"), EINVAL);
	CHECK_ERR("as ext4 without a journal, -o commit=7: EINVAL", mount(dev, mnt, "ext4", 0, "commit=7"), EINVAL);
	CHECK_ERR("as ext4 without a journal, -o data=ordered: EINVAL", mount(dev, mnt, "ext4", 0, "data=ordered"), EINVAL);
	CHECK_ERR("as ext3 without a journal: EINVAL", mount(dev, mnt, "ext3", MS_RDONLY, NULL), EINVAL);
	if (CHECK_SYS("as ext4 -o commit=5,nodiscard", mount(dev, mnt, "ext4", 0, "commit=5,nodiscard"))) {
		check_opts("ext2 as ext4", "rw,relatime", "rw");
		char *s = read_file(p, NULL);
		CHECK_STR("ext2: the kept file reads back", s, alpha);
		free(s);
		CHECK_SYS("umount", umount(mnt));
	}
}

/* On the host: the image the guest wrote is clean and holds the files. */
static int check_image(const char *img, const char *ext2)
{
	check_start("t_mount --check-image");
	char cmd[600];
	if (ext2) {
		snprintf(cmd, sizeof cmd, "e2fsck -fn '%s' >/dev/null 2>&1", ext2);
		int st = system(cmd);
		CHECK_EQ("ext2 image: e2fsck -fn finds nothing", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
		snprintf(cmd, sizeof cmd, "debugfs -R 'cat /kept' '%s' 2>/dev/null", ext2);
		FILE *f = popen(cmd, "r");
		char b[256] = { 0 };
		size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
		if (f)
			pclose(f);
		b[n] = 0;
		CHECK_STR("ext2 image: /kept", b, alpha);
		long left = chunks_left(ext2, "ext2");
		CHECK("ext2 image: the deleted file is gone", left >= 0 && left <= TRIM_LEFT_MAX);
	}
	snprintf(cmd, sizeof cmd, "e2fsck -fn '%s' >/dev/null 2>&1", img);
	int st = system(cmd);
	CHECK_EQ("e2fsck -fn finds nothing", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	static const struct {
		const char *path, *want;
	} files[] = { { "/t_mount/alpha", alpha }, { "/t_mount/beta", renamed }, { "/t_mount/hard", renamed } };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(cmd, sizeof cmd, "debugfs -R 'cat %s' '%s' 2>/dev/null", files[i].path, img);
		FILE *f = popen(cmd, "r");
		char b[256] = { 0 };
		size_t n = f ? fread(b, 1, sizeof b - 1, f) : 0;
		if (f)
			pclose(f);
		b[n] = 0;
		CHECK_STR(files[i].path, b, files[i].want);
	}
	snprintf(cmd, sizeof cmd, "debugfs -R 'cat /t_mount/d/big' '%s' 2>/dev/null", img);
	FILE *f = popen(cmd, "r");
	long n = 0, bad = -1;
	int c;
	while (f && (c = getc(f)) != EOF) {
		if (bad < 0 && (unsigned char)c != big_byte(n))
			bad = n;
		n++;
	}
	if (f)
		pclose(f);
	CHECK_EQ("big's length", n, BIG_SIZE);
	CHECK_EQ("big's first wrong byte", bad, -1);
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat /t_mount/link' '%s' 2>/dev/null | grep -q 'Fast link dest: \"alpha\"'", img);
	st = system(cmd);
	CHECK("the symlink", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(cmd, sizeof cmd, "debugfs -R 'stat /t_mount/gone' '%s' 2>&1 | grep -q 'File not found'", img);
	st = system(cmd);
	CHECK("the unlinked file", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	long left = chunks_left(img, "option");
	CHECK("image: the file deleted on the discard mount is gone", left >= 0 && left <= TRIM_LEFT_MAX);
	left = chunks_left(img, "fitrim");
	CHECK("image: the file deleted before FITRIM is gone", left >= 0 && left <= TRIM_LEFT_MAX);
	return check_done();
}

int main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "--check-image") == 0)
		return check_image(argv[2], argc == 4 ? argv[3] : NULL);
	check_start(argv[0]);
	if (geteuid() != 0) {
		printf("t_mount: not root: skipped\n");
		return 0;
	}
	const char *dir = check_mktmp();
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	snprintf(mnt2, sizeof mnt2, "%s/mnt2", dir);
	CHECK_SYS("mkdir mnt", mkdir(mnt, 0755));
	CHECK_SYS("mkdir mnt2", mkdir(mnt2, 0755));
	test_errors();
	test_tmpfs();
	test_move();
	const char *disk = getenv("EXT4_DISK");
	if (disk && *disk) {
		char dev[64];
		snprintf(dev, sizeof dev, "/dev/%s", disk);
		test_ext4(dev);
		test_atime(dev);
		test_file_pages(dev);
		test_discard(dev);
	} else {
		printf("t_mount: no EXT4_DISK: ext4 part skipped\n");
	}
	const char *ext2 = getenv("EXT2_DISK");
	char name[64];
	if (ext2 && *ext2 && CHECK("ext2 disk found", resolve_disk(ext2, name, sizeof name))) {
		char dev[80];
		snprintf(dev, sizeof dev, "/dev/%s", name);
		test_ext2(dev);
	} else if (!ext2 || !*ext2) {
		printf("t_mount: no EXT2_DISK: ext2 part skipped\n");
	}
	rmdir(mnt);
	rmdir(mnt2);
	rmdir(dir);
	return check_done();
}
