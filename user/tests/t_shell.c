/* t_shell: busybox as a real workload: its shell runs scripts with pipes,
 * command substitution, redirection, background jobs, traps and applets
 * (coreutils, sort, awk, sed, md5sum, dd, ps, free, uptime), and each
 * script's output and exit status are compared exactly.
 * Busybox is $BUSYBOX or /bin/busybox; its applets are installed as
 * symlinks in a private bin directory first in PATH. */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static const char *busybox;
static char bindir[300], pathenv[400], tmpenv[320];

/* runs "busybox sh -c script", returns its exit status (or 1000+signal);
 * stdout and stderr go to out */
static int run_sh(const char *script, char *out, size_t outsz)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	char *envp[] = { pathenv, tmpenv, "HOME=/", "LC_ALL=C", NULL };
	return check_run(busybox, argv, envp, NULL, out, outsz);
}

static void sh_check(const char *name, const char *script, const char *want, int want_status)
{
	char out[8192];
	int st = run_sh(script, out, sizeof out);
	if (!check_report(name, st == want_status && strcmp(out, want) == 0,
			  "script '%s': status %d (want %d), output \"%s\" (want \"%s\")", script, st, want_status, out, want))
		return;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	busybox = getenv("BUSYBOX");
	if (!busybox || !*busybox)
		busybox = "/bin/busybox";
	if (!CHECK_SYS("busybox.present", access(busybox, X_OK)))
		return check_done();
	const char *tmp = check_mktmp();
	if (chdir(tmp))
		return 1;
	snprintf(bindir, sizeof bindir, "%s/bin", tmp);
	snprintf(pathenv, sizeof pathenv, "PATH=%s:/bin:/sbin", bindir);
	snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", tmp);
	mkdir(bindir, 0755);
	pid_t pid = fork();
	if (pid == 0) {
		char *a[] = { "busybox", "--install", "-s", bindir, NULL };
		char *e[] = { NULL };
		execve(busybox, a, e);
		_exit(126);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK("busybox.install", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char sh[320];
	snprintf(sh, sizeof sh, "%s/sh", bindir);
	struct stat lst;
	CHECK("busybox.sh_link", lstat(sh, &lst) == 0 && S_ISLNK(lst.st_mode));

	sh_check("sh.echo", "echo hello", "hello\n", 0);
	sh_check("sh.exit_status", "exit 7", "", 7);
	sh_check("sh.pipe", "echo a b | tr a-z A-Z", "A B\n", 0);
	sh_check("sh.arith_subst", "x=$(echo 5); echo $((x * 7))", "35\n", 0);
	sh_check("sh.or_list", "false || echo no", "no\n", 0);
	sh_check("sh.for_loop", "for i in 1 2 3; do printf %s $i; done; echo", "123\n", 0);
	sh_check("sh.cd_pwd", "cd / && pwd", "/\n", 0);
	sh_check("sh.redirect_sort_head", "printf 'b\\na\\nc\\n' > f; sort f | head -n 2; rm f", "a\nb\n", 0);
	sh_check("sh.subshell_status", "sh -c 'exit 3'; echo $?", "3\n", 0);
	sh_check("sh.background_wait", "sleep 0.1 & wait $!; echo $?", "0\n", 0);
	sh_check("sh.trap", "trap 'echo trapped' USR1; kill -USR1 $$; echo after", "trapped\nafter\n", 0);
	sh_check("sh.killed_child_status", "exec 2>/dev/null; sh -c 'kill -9 $$'; echo $?", "137\n", 0);
	sh_check("sh.sigpipe_yes_head", "yes | head -n 3", "y\ny\ny\n", 0);
	sh_check("sh.seq_wc", "seq 1 100 | wc -l", "100\n", 0);
	sh_check("sh.awk", "seq 1 10 | awk '{s+=$1} END {print s}'", "55\n", 0);
	sh_check("sh.sed", "echo banana | sed s/an/AN/g", "bANANa\n", 0);
	sh_check("sh.md5sum", "printf abc | md5sum", "900150983cd24fb0d6963f7d28e17f72  -\n", 0);
	sh_check("sh.dd_wc", "dd if=/dev/zero bs=1024 count=64 2>/dev/null | wc -c", "65536\n", 0);
	sh_check("sh.find", "mkdir -p d/e && touch d/e/f && find d -type f && rm -r d && echo gone", "d/e/f\ngone\n", 0);
	sh_check("sh.test_file", "echo data > g; [ -s g ] && cat g; rm g; [ -e g ] || echo removed", "data\nremoved\n", 0);
	sh_check("sh.ln_readlink", "ln -s target l && readlink l && rm l", "target\n", 0);
	sh_check("sh.uname", "uname -m", "x86_64\n", 0);
	sh_check("sh.date_plausible", "[ $(date +%Y) -ge 2020 ] && echo ok", "ok\n", 0);
	sh_check("sh.cat_proc", "grep -c '^MemTotal:' /proc/meminfo", "1\n", 0);
	sh_check("sh.ps_free_uptime", "ps >/dev/null && free >/dev/null && uptime >/dev/null && echo ok", "ok\n", 0);
	sh_check("sh.ps_sees_self", "ps -o pid,comm | grep -c '^ *'$$' '", "1\n", 0);
	sh_check("sh.here_doc", "cat <<EOF\nline $((1+1))\nEOF", "line 2\n", 0);
	sh_check("sh.while_read", "printf '1\\n2\\n3\\n' | while read n; do echo $((n*n)); done", "1\n4\n9\n", 0);
	sh_check("sh.xargs", "echo 1 2 3 | xargs -n 1 echo x", "x 1\nx 2\nx 3\n", 0);
	sh_check("sh.cmp_cp", "echo abc > a && cp a b && cmp a b && echo same && rm a b", "same\n", 0);
	sh_check("sh.tar_roundtrip", "mkdir t && echo z > t/z && tar cf t.tar t && rm -r t && tar xf t.tar && cat t/z && rm -r t t.tar",
		 "z\n", 0);
	sh_check("sh.gzip_roundtrip", "seq 1 1000 > n && gzip n && gunzip n.gz && wc -l < n && rm n", "1000\n", 0);
	/* scheduling attributes and names (t_sched checks the calls themselves) */
	sh_check("sh.nice_renice", "nice -n 5 nice; renice -n 3 -p $$ && nice", "5\n3\n", 0);
	sh_check("sh.ionice", "ionice -c 2 -n 5 ionice", "best-effort: prio 5\n", 0);
	sh_check("sh.chrt", "chrt -r 7 sh -c 'chrt -p $$' | sed 's/pid [0-9]*/pid/'",
		 "pid's current scheduling policy: SCHED_RR\npid's current scheduling priority: 7\n", 0);
	sh_check("sh.hostname", "old=$(hostname); hostname sb-shell && hostname && uname -n; hostname \"$old\"",
		 "sb-shell\nsb-shell\n", 0);
	sh_check("sh.dmesg", "dmesg -s 65536 >/dev/null && echo ok", "ok\n", 0);
	sh_check("sh.top_mpstat_iostat", "top -b -n 1 | head -n 2 | cut -d: -f1; mpstat >/dev/null && iostat -c >/dev/null && echo ok",
		 "Mem\nCPU\nok\n", 0);
	sh_check("sh.stat_f", "stat -f -c '%T %s' / /proc", "tmpfs 4096\nproc 4096\n", 0);
	sh_check("sh.df_proc", "df -P /proc",
		 "Filesystem           1024-blocks    Used Available Capacity Mounted on\n"
		 "proc                         0         0         0   0% /proc\n", 0);
	/* flock(1): a second, non-blocking lock on the held file fails (1) */
	sh_check("sh.flock", "touch fl && flock -x fl -c 'flock -n -s fl -c true; echo $?' && flock -n fl echo free && rm fl",
		 "1\nfree\n", 0);
	/* date -s sets the wall clock (and puts it back) */
	sh_check("sh.date_set", "old=$(date +%s); date -s @$((old+1000)) >/dev/null; new=$(date +%s); "
		 "date -s @$((new-1000)) >/dev/null; d=$((new-old)); [ $d -ge 1000 ] && [ $d -le 1003 ] && echo ok",
		 "ok\n", 0);
	sh_check("sh.fallocate", "fallocate -l 10000 fa && stat -c %s fa && rm fa", "10000\n", 0);
	/* chroot(1) runs a program inside a tree of its own */
	char script[600];
	snprintf(script, sizeof script,
		 "mkdir -p j/bin j/etc && cp %s j/bin/busybox && echo jailed > j/etc/x && "
		 "chroot j /bin/busybox sh -c 'cd /../.. && /bin/busybox pwd && /bin/busybox cat /etc/x'; rm -r j",
		 busybox);
	sh_check("sh.chroot", script, "/\njailed\n", 0);
	char want[32];
	snprintf(want, sizeof want, "%u\n", getuid());
	sh_check("sh.id", "id -u", want, 0);

	/* cleanup: the applet links, bin, the temp dir */
	DIR *d = opendir(bindir);
	struct dirent *e;
	char path[700];
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", bindir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	CHECK_SYS("cleanup.bin", rmdir(bindir));
	CHECK_SYS("cleanup.chdir", chdir("/"));
	CHECK_SYS("cleanup.rmdir", rmdir(tmp));
	return check_done();
}
