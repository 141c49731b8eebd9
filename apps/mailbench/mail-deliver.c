/*
 * mail-deliver: delivers one spooled message into its recipient's maildir
 * and then removes it from the spool:
 *   1. read the recipient from todo/<id>;
 *   2. copy mess/<id> to SPOOL/mail/<rcpt>/tmp/<unique>, fsync;
 *   3. rename it into new/ (the maildir commit point);
 *   4. unlink todo/<id>, then mess/<id>.
 * mess/<id> goes last because its inode number is the id: while it
 * exists no new message can be given the same id, so an enqueue cannot
 * create a todo/<id> that step 4 would then remove.
 *
 * usage: mail-deliver SPOOL ID
 */
#include "common.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char todopath[PATH_MAX], messpath[PATH_MAX], tmppath[PATH_MAX], newpath[PATH_MAX];
	char rcpt[256];
	int fd, in, out;
	size_t n;

	prog = "mail-deliver";
	if (argc != 3 || argv[2][0] == '\0' || strspn(argv[2], "0123456789") != strlen(argv[2]))
		die("usage: mail-deliver SPOOL ID (ID: a number)");
	const char *spool = argv[1], *id = argv[2];

	path_fmt(todopath, "%s/todo/%s", spool, id);
	fd = open(todopath, O_RDONLY);
	if (fd < 0)
		die("open %s:", todopath);
	n = read_full(fd, rcpt, sizeof rcpt - 1, todopath);
	close(fd);
	rcpt[n] = '\0';
	if (n == 0 || rcpt[n - 1] != '\n')
		die("%s: envelope is not one line", todopath);
	rcpt[n - 1] = '\0';
	if (strchr(rcpt, '/') || rcpt[0] == '.' || rcpt[0] == '\0')
		die("%s: bad recipient '%s'", todopath, rcpt);

	path_fmt(messpath, "%s/mess/%s", spool, id);
	in = open(messpath, O_RDONLY);
	if (in < 0)
		die("open %s:", messpath);
	/* The maildir convention: time, pid and a per-delivery unique part
	 * (here the spool id) make the name unique on this host. */
	long long now = (long long)time(NULL);
	path_fmt(tmppath, "%s/mail/%s/tmp/%lld.%ld_%s.mailbench", spool, rcpt, now, (long)getpid(), id);
	path_fmt(newpath, "%s/mail/%s/new/%lld.%ld_%s.mailbench", spool, rcpt, now, (long)getpid(), id);
	out = open(tmppath, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (out < 0)
		die("create %s:", tmppath);
	copy_fd(in, out, messpath, tmppath);
	if (fsync(out) < 0)
		die("fsync %s:", tmppath);
	if (close(out) < 0)
		die("close %s:", tmppath);
	close(in);
	if (rename(tmppath, newpath) < 0)
		die("rename %s to %s:", tmppath, newpath);

	if (unlink(todopath) < 0)
		die("unlink %s:", todopath);
	if (unlink(messpath) < 0)
		die("unlink %s:", messpath);
	return 0;
}
