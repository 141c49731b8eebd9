/* inotify: events on a watched directory's children (IN_CREATE, IN_OPEN,
 * IN_MODIFY, IN_ACCESS, IN_CLOSE_WRITE/NOWRITE, IN_ATTRIB, IN_MOVED_FROM/TO
 * with one cookie, IN_DELETE, IN_ISDIR), events on a watched file
 * (IN_ATTRIB, IN_DELETE_SELF, IN_IGNORED), IN_ONESHOT, inotify_rm_watch,
 * IN_UNMOUNT, the read format (whole events, name padding, EINVAL for a
 * short buffer), FIONREAD, poll, IN_NONBLOCK, add_watch's errors, and
 * instances given back on close. */
#define _GNU_SOURCE
#include "check.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#define DIR_ "/tmp/t_inotify"

struct ev {
	int wd;
	unsigned mask, cookie;
	char name[64];
};
static struct ev evs[256];
static int nevs;

/* reads every queued event into evs */
static void drain(int fd)
{
	static char buf[8192];
	nevs = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 50) != 1)
			return;
		ssize_t n = read(fd, buf, sizeof buf);
		if (n <= 0)
			return;
		for (char *q = buf; q < buf + n;) {
			struct inotify_event *e = (void *)q;
			if (nevs < 256) {
				evs[nevs].wd = e->wd;
				evs[nevs].mask = e->mask;
				evs[nevs].cookie = e->cookie;
				snprintf(evs[nevs].name, sizeof evs[nevs].name, "%s", e->len ? e->name : "");
				nevs++;
			}
			q += sizeof *e + e->len;
		}
	}
}

/* the index of the first event at or after from with wd, mask and name */
static int find(int from, int wd, unsigned mask, const char *name)
{
	for (int i = from; i < nevs; i++)
		if (evs[i].wd == wd && evs[i].mask == mask && strcmp(evs[i].name, name) == 0)
			return i;
	return -1;
}

static int count(int wd, unsigned mask)
{
	int n = 0;
	for (int i = 0; i < nevs; i++)
		if (evs[i].wd == wd && evs[i].mask == mask)
			n++;
	return n;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	mkdir(DIR_, 0755);
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK_SYS("init1", fd);
	CHECK("init1.cloexec", fcntl(fd, F_GETFD) & FD_CLOEXEC);
	char small[8];
	CHECK_ERR("read.empty_nonblock", read(fd, small, sizeof small), EAGAIN);
	int wd = inotify_add_watch(fd, DIR_, IN_ALL_EVENTS);
	CHECK_SYS("add_watch.dir", wd);
	CHECK_EQ("add_watch.same_again", inotify_add_watch(fd, DIR_, IN_ALL_EVENTS), wd);
	CHECK_ERR("add_watch.mask_create_exists", inotify_add_watch(fd, DIR_, IN_ALL_EVENTS | IN_MASK_CREATE), EEXIST);
	CHECK_ERR("add_watch.no_such", inotify_add_watch(fd, DIR_ "/none", IN_ALL_EVENTS), ENOENT);
	CHECK_ERR("add_watch.zero_mask", inotify_add_watch(fd, DIR_, 0), EINVAL);
	int p[2];
	pipe(p);
	CHECK_ERR("add_watch.not_inotify", inotify_add_watch(p[0], DIR_, IN_ALL_EVENTS), EINVAL);
	CHECK_ERR("rm_watch.not_inotify", inotify_rm_watch(p[0], 1), EINVAL);
	close(p[0]);
	close(p[1]);

	/* a child's life, seen from its directory */
	int f = open(DIR_ "/a", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	write(f, "hello", 5);
	close(f);
	f = open(DIR_ "/a", O_RDONLY);
	char b[8];
	read(f, b, sizeof b);
	close(f);
	chmod(DIR_ "/a", 0600);
	rename(DIR_ "/a", DIR_ "/b");
	mkdir(DIR_ "/sub", 0755);
	int swd = inotify_add_watch(fd, DIR_ "/sub", IN_DELETE_SELF);
	rmdir(DIR_ "/sub");
	int q = 0;
	ioctl(fd, FIONREAD, &q);
	CHECK("fionread", q >= 16 * 10);
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	CHECK_EQ("poll.readable", poll(&pf, 1, 0), 1);
	CHECK_ERR("read.short_buffer", read(fd, small, sizeof small), EINVAL);
	drain(fd);
	int i = find(0, wd, IN_CREATE, "a");
	CHECK("child.create", i >= 0);
	CHECK("child.open", (i = find(i, wd, IN_OPEN, "a")) >= 0);
	CHECK("child.modify", (i = find(i, wd, IN_MODIFY, "a")) >= 0);
	CHECK("child.close_write", (i = find(i, wd, IN_CLOSE_WRITE, "a")) >= 0);
	CHECK("child.open_read", (i = find(i, wd, IN_OPEN, "a")) >= 0);
	CHECK("child.access", (i = find(i, wd, IN_ACCESS, "a")) >= 0);
	CHECK("child.close_nowrite", (i = find(i, wd, IN_CLOSE_NOWRITE, "a")) >= 0);
	CHECK("child.attrib", (i = find(i, wd, IN_ATTRIB, "a")) >= 0);
	int from = find(i, wd, IN_MOVED_FROM, "a"), to = find(i, wd, IN_MOVED_TO, "b");
	CHECK("child.moved_from_then_to", from >= 0 && to > from);
	CHECK("child.move_cookie", from >= 0 && to >= 0 && evs[from].cookie != 0 && evs[from].cookie == evs[to].cookie);
	CHECK("child.mkdir_isdir", (i = find(to, wd, IN_CREATE | IN_ISDIR, "sub")) >= 0);
	CHECK("child.rmdir_isdir", find(i, wd, IN_DELETE | IN_ISDIR, "sub") >= 0);
	CHECK_EQ("child.coalesced_modify", count(wd, IN_MODIFY), 1);
	CHECK("dir.delete_self", find(0, swd, IN_DELETE_SELF, "") >= 0);
	mkdir(DIR_ "/mv1", 0755);
	int mvwd = inotify_add_watch(fd, DIR_ "/mv1", IN_MOVE_SELF);
	rename(DIR_ "/mv1", DIR_ "/mv2");
	drain(fd);
	CHECK("dir.move_self", find(0, mvwd, IN_MOVE_SELF, "") >= 0);
	rmdir(DIR_ "/mv2");

	/* a watch on the file itself, ended by its removal */
	int fwd = inotify_add_watch(fd, DIR_ "/b", IN_ATTRIB | IN_DELETE_SELF);
	CHECK_SYS("add_watch.file", fwd);
	CHECK("add_watch.file_own_wd", fwd != wd);
	CHECK_ERR("add_watch.onlydir", inotify_add_watch(fd, DIR_ "/b", IN_ALL_EVENTS | IN_ONLYDIR), ENOTDIR);
	unlink(DIR_ "/b");
	drain(fd);
	CHECK("self.attrib", find(0, fwd, IN_ATTRIB, "") >= 0);
	CHECK("self.delete_self", find(0, fwd, IN_DELETE_SELF, "") >= 0);
	CHECK("self.ignored", find(0, fwd, IN_IGNORED, "") >= 0);
	CHECK("dir.delete", find(0, wd, IN_DELETE, "b") >= 0);
	CHECK_ERR("rm_watch.ended", inotify_rm_watch(fd, fwd), EINVAL);

	/* IN_ONESHOT: one event, then IN_IGNORED */
	f = open(DIR_ "/c", O_CREAT | O_WRONLY, 0644);
	int owd = inotify_add_watch(fd, DIR_ "/c", IN_MODIFY | IN_ONESHOT);
	write(f, "1", 1);
	write(f, "2", 1);
	close(f);
	drain(fd);
	CHECK_EQ("oneshot.one_event", count(owd, IN_MODIFY), 1);
	CHECK_EQ("oneshot.ignored", count(owd, IN_IGNORED), 1);
	unlink(DIR_ "/c");

	CHECK_SYS("rm_watch", inotify_rm_watch(fd, wd));
	drain(fd);
	CHECK_EQ("rm_watch.ignored", count(wd, IN_IGNORED), 1);
	CHECK_ERR("rm_watch.again", inotify_rm_watch(fd, wd), EINVAL);

	/* the name field: NUL-terminated, padded to 16 bytes */
	wd = inotify_add_watch(fd, DIR_, IN_CREATE);
	close(open(DIR_ "/name_of_21_characters", O_CREAT | O_WRONLY, 0644));
	char raw[256];
	ssize_t n = read(fd, raw, sizeof raw);
	struct inotify_event *e = (void *)raw;
	CHECK("format.len_padded", n >= (ssize_t)sizeof *e && e->len % 16 == 0 && e->len >= 22);
	CHECK("format.name", n >= (ssize_t)sizeof *e && strcmp(e->name, "name_of_21_characters") == 0);
	CHECK("format.whole", n == (ssize_t)(sizeof *e + e->len));
	unlink(DIR_ "/name_of_21_characters");
	inotify_rm_watch(fd, wd);
	drain(fd);

	/* an unmounted file system ends its watches */
	mkdir(DIR_ "/m", 0755);
	if (CHECK_SYS("mount", mount("none", DIR_ "/m", "tmpfs", 0, NULL))) {
		int mwd = inotify_add_watch(fd, DIR_ "/m", IN_ALL_EVENTS);
		umount(DIR_ "/m");
		drain(fd);
		CHECK("unmount.event", find(0, mwd, IN_UNMOUNT | IN_ISDIR, "") >= 0);
		CHECK("unmount.ignored", find(0, mwd, IN_IGNORED, "") >= 0);
	}
	rmdir(DIR_ "/m");
	close(fd);

	/* instances come back on close: far more than max_user_instances */
	int ok = 1;
	for (int k = 0; k < 300 && ok; k++) {
		int x = inotify_init();
		if (x < 0 || inotify_add_watch(x, DIR_, IN_CREATE) < 0)
			ok = 0;
		close(x);
	}
	CHECK("instances.released", ok);
	rmdir(DIR_);
	return check_done();
}
