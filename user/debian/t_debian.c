/* t_debian: Debian's own dynamically linked programs, unchanged (bash 5.2,
 * coreutils 9.1, glibc 2.36's loader and libraries; user/debian/build.sh
 * puts them in /debian/bin and /lib/x86_64-linux-gnu). Checks that the
 * dynamic loader really ran (its auxiliary vector as glibc's
 * LD_SHOW_AUXV prints it, matched against /proc/self/maps and the
 * program's own ELF header; bases random from run to run), bash scripts
 * (variables, arrays, loops, pipes, command substitution, subshells,
 * functions, here-documents, background jobs) and coreutils commands with
 * their output compared exactly, coreutils against busybox on the same
 * files, and exec's errors for programs whose loader is missing or
 * broken (ENOENT, ELIBBAD, ENOEXEC, as Linux); python3.11 (python3-minimal)
 * running a script with threads and a subprocess; redis-server and
 * redis-cli on a unix socket.
 * Run by `make debian-test` on both kernels (tools/run-cmd.sh). */
#define _GNU_SOURCE
#include "check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define BIN "/debian/bin/"

static char dir[64];
static char *env[] = { "PATH=/debian/bin", "LC_ALL=C", "TZ=UTC", "HOME=/", NULL };

/* runs argv in dir with env (NULL: the default), stdout and stderr into
 * out; returns the exit status, or 1000+signal */
static int run(char *const argv[], char *const envp[], char *out, size_t outsz)
{
	return check_run(argv[0], argv, envp ? envp : env, dir, out, outsz);
}

static char out[1 << 16];

/* bash -c script: output and status exactly */
static void bash(const char *name, const char *script, const char *want, int want_status)
{
	char *argv[] = { BIN "bash", "-c", (char *)script, NULL };
	int st = run(argv, NULL, out, sizeof out);
	char n[128];
	snprintf(n, sizeof n, "%s.status", name);
	CHECK_EQ(n, st, want_status);
	snprintf(n, sizeof n, "%s.output", name);
	CHECK_STR(n, out, want);
}

struct auxv {
	unsigned long base, phdr, phent, phnum, pagesz, entry, secure, random, hwcap;
	char execfn[80];
};

/* parses LD_SHOW_AUXV's "AT_NAME:   value" lines */
static int parse_auxv(const char *text, struct auxv *a)
{
	memset(a, 0, sizeof *a);
	int found = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char key[32];
		char val[80];
		if (sscanf(l, "AT_%31[A-Z_0-9]: %79s", key, val) != 2)
			continue;
		/* glibc prints AT_HWCAP in hex without "0x" */
		unsigned long v = strtoul(val, NULL, strcmp(key, "HWCAP") == 0 ? 16 : 0);
		struct { const char *k; unsigned long *p; } keys[] = {
			{ "BASE", &a->base }, { "PHDR", &a->phdr }, { "PHENT", &a->phent }, { "PHNUM", &a->phnum },
			{ "PAGESZ", &a->pagesz }, { "ENTRY", &a->entry }, { "SECURE", &a->secure },
			{ "RANDOM", &a->random }, { "HWCAP", &a->hwcap },
		};
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (strcmp(key, keys[i].k) == 0) {
				*keys[i].p = v;
				found++;
			}
		if (strcmp(key, "EXECFN") == 0) {
			snprintf(a->execfn, sizeof a->execfn, "%s", val);
			found++;
		}
	}
	return found;
}

/* the lowest mapping of a file whose path ends in name, and whether one
 * of its mappings is executable and contains addr (0: any) */
static unsigned long map_base(const char *maps, const char *name, unsigned long addr, int *exec_has)
{
	unsigned long base = 0;
	*exec_has = 0;
	for (const char *l = maps; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long lo, hi;
		char perm[8];
		char path[256] = "";
		if (sscanf(l, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perm, path) < 3)
			continue;
		size_t pl = strlen(path), nl = strlen(name);
		if (pl < nl || strcmp(path + pl - nl, name) != 0)
			continue;
		if (!base || lo < base)
			base = lo;
		if (perm[2] == 'x' && (addr == 0 || (addr >= lo && addr < hi)))
			*exec_has = 1;
	}
	return base;
}

static void loader_ran(void)
{
	/* cat prints its own maps; glibc's loader prints the auxiliary
	 * vector it was given first */
	Elf64_Ehdr eh;
	int fd = open(BIN "cat", O_RDONLY);
	CHECK_SYS("elf.open", fd);
	CHECK_EQ("elf.read", read(fd, &eh, sizeof eh), sizeof eh);
	close(fd);
	CHECK_EQ("elf.type_dyn", eh.e_type, ET_DYN);

	char *envp[] = { "LD_SHOW_AUXV=1", "LC_ALL=C", NULL };
	char *argv[] = { BIN "cat", "/proc/self/maps", NULL };
	unsigned long bases[2], loaders[2];
	for (int round = 0; round < 2; round++) {
		int st = run(argv, envp, out, sizeof out);
		CHECK_EQ("auxv.cat_status", st, 0);
		struct auxv a;
		CHECK("auxv.fields", parse_auxv(out, &a) >= 10);
		CHECK_EQ("auxv.pagesz", a.pagesz, 4096);
		CHECK_EQ("auxv.phent", a.phent, sizeof(Elf64_Phdr));
		CHECK_EQ("auxv.phnum", a.phnum, eh.e_phnum);
		CHECK_EQ("auxv.secure", a.secure, 0);
		CHECK("auxv.random", a.random != 0);
		CHECK("auxv.hwcap", a.hwcap != 0);
		CHECK_STR("auxv.execfn", a.execfn, BIN "cat");
		int x;
		unsigned long ld = map_base(out, "/ld-linux-x86-64.so.2", 0, &x);
		CHECK("maps.loader_mapped", ld != 0 && x);
		CHECK_EQ("auxv.base_is_loader", a.base, ld);
		unsigned long libc = map_base(out, "/libc.so.6", 0, &x);
		CHECK("maps.libc_mapped", libc != 0 && x);
		unsigned long prog = map_base(out, BIN "cat", a.entry, &x);
		CHECK("maps.entry_in_program_text", prog != 0 && x);
		CHECK_EQ("auxv.entry", a.entry - prog, eh.e_entry);
		CHECK_EQ("auxv.phdr", a.phdr - prog, eh.e_phoff);
		CHECK("maps.program_not_at_zero", prog >= 0x10000);
		bases[round] = prog;
		loaders[round] = ld;
	}
	/* each exec chooses new places (a 1-in-2^28 chance to repeat) */
	CHECK("aslr.program", bases[0] != bases[1]);
	CHECK("aslr.loader", loaders[0] != loaders[1]);

	/* the loader run as a program, loading another */
	char *direct[] = { "/lib64/ld-linux-x86-64.so.2", BIN "echo", "direct", NULL };
	CHECK_EQ("ldso.direct_status", run(direct, NULL, out, sizeof out), 0);
	CHECK_STR("ldso.direct_output", out, "direct\n");
}

static void scripts(void)
{
	bash("vars", "x=6; y=$((x * 7)); s=hello; a=(one two three); echo $y ${s^^} ${s:1:3} ${a[1]} ${#a[@]}; "
		     "declare -A m=([k]=v); echo ${m[k]} ${#s}",
	     "42 HELLO ell two 3\nv 5\n", 0);
	bash("loops", "for i in $(seq 1 5); do printf '%d,' $((i * i)); done; echo; i=0; "
		      "while [ $i -lt 100 ]; do i=$((i + 7)); done; echo $i; "
		      "for ((j = 3; j > 0; j--)); do echo -n $j; done; echo",
	     "1,4,9,16,25,\n105\n321\n", 0);
	bash("pipes", "printf 'b\\na\\nc\\na\\nb\\na\\n' | sort | uniq -c | sort -rn | head -2; "
		      "seq 1 1000 | sort -rn | head -3 | tr '\\n' ' '; echo; seq 1 20000 | wc -l",
	     "      3 a\n      2 b\n1000 999 998 \n20000\n", 0);
	bash("subst", "v=1; (v=2; echo in $v); echo out $v; echo $(echo $(echo nested)); "
		      "n=$(seq 1 10 | tail -1); echo $((n * 2)); x=`basename /a/b/c.txt .txt`; echo $x",
	     "in 2\nout 1\nnested\n20\nc\n", 0);
	bash("functions", "f() { case $1 in a*) echo A;; *) echo other;; esac; return 3; }; f apple; f pear; "
			  "echo rc=$?; while read x y; do echo \"$y-$x\"; done <<EOF\n1 2\n3 4\nEOF\n",
	     "A\nother\nrc=3\n2-1\n4-3\n", 0);
	bash("status", "false || echo alt; set -o pipefail; false | true; echo $?; "
		       "(exit 4); echo sub=$?; bash -c 'exit 9'; echo nested=$?; exit 5",
	     "alt\n1\nsub=4\nnested=9\n", 5);
	bash("jobs", "sleep 0.2 & p=$!; (echo bg; exit 6) & q=$!; wait $q; echo q=$?; wait $p; echo p=$?; "
		     "trap 'echo trapped' EXIT; echo end",
	     "bg\nq=6\np=0\nend\ntrapped\n", 0);
	bash("redirect", "{ echo out; echo err >&2; } 2>e >o; cat o e; exec 3>f3; echo three >&3; exec 3>&-; "
			 "cat f3; echo app >> f3; wc -l < f3; rm o e f3",
	     "out\nerr\nthree\n2\n", 0);

	/* coreutils on files */
	bash("files", "umask 022; printf 'hello\\nworld\\n' > f; cp f g; wc -c < g; cat f g | wc -l; "
		      "sha256sum f; md5sum g; mkdir -p d/e; mv g d/e/h; ls d/e; ln -s d/e/h l; readlink l; "
		      "cat l | tr a-z A-Z; rm -r d l f; ls",
	     "12\n4\n4a1e67f2fe1d1cc7b31d0ca2ec441da4778203a036a77da10344c85e24ff0f92  f\n"
	     "0f723ae7f9bf07744445e93ac5595156  g\nh\nd/e/h\nHELLO\nWORLD\n", 0);
	bash("stat", "umask 022; printf '12345' > s; touch -d '2001-02-03 04:05:06' s; "
		     "stat -c '%s %a %F %y' s; ls -l --time-style=+%F s; chmod 0 s 2>/dev/null; rm s",
	     "5 644 regular file 2001-02-03 04:05:06.000000000 +0000\n-rw-r--r-- 1 root root 5 2001-02-03 s\n", 0);
	bash("ls", "mkdir t; touch t/b t/a t/c; mkdir t/z; ls t | tr '\\n' ' '; echo; ls -l t | head -1; "
		   "ls -F t | tail -1; ls -a t | wc -l; rm -r t",
	     "a b c z \ntotal 0\nz/\n6\n", 0);
	bash("text", "printf 'c 3\\na 1\\nb 2\\n' > x; sort -k2 -n x | cut -d' ' -f1 | tr -d '\\n'; echo; "
		     "sort -r x | head -1; tail -n 2 x | tee y >/dev/null; cat y; expr 6 \\* 7; "
		     "printf '%05.1f|%-3s|%x\\n' 3.14159 ab 255; dirname /a/b/c; env -i A=1 env; rm x y",
	     "abc\nc 3\na 1\nb 2\n42\n003.1|ab |ff\n/a/b\nA=1\n", 0);
	bash("date", "date -u -d @1000000000 '+%F %T %a'; date -d '2024-02-28 + 1 day' +%F; id -u; id -un",
	     "2001-09-09 01:46:40 Sun\n2024-02-29\n0\nroot\n", 0);
}

/* coreutils and busybox give the same answers about the same files */
static void versus_busybox(void)
{
	char *gen[] = { BIN "bash", "-c",
			"seq 1 140000 > big; sha256sum big | cut -d' ' -f1 > a; /bin/busybox sha256sum big | cut -d' ' -f1 > b; "
			"[ \"$(cat a)\" = \"$(cat b)\" ] && echo same; wc -c < big; /bin/busybox wc -c < big; "
			"[ \"$(stat -c '%i %s %h %a' big)\" = \"$(/bin/busybox stat -c '%i %s %h %a' big)\" ] && echo stat-same; "
			"d1=$(date +%s); d2=$(/bin/busybox date +%s); [ $((d2 - d1)) -ge 0 ] && [ $((d2 - d1)) -le 60 ] && echo date-close; "
			"[ \"$(sort -R big | sort -n --parallel=2 -S 50M | sha256sum)\" = \"$(sha256sum < big)\" ] && echo sorted; rm big a b",
			NULL };
	int st = run(gen, NULL, out, sizeof out);
	CHECK_EQ("busybox.status", st, 0);
	CHECK_STR("busybox.output", out, "same\n868895\n868895\nstat-same\ndate-close\nsorted\n");
}

/* python3-minimal's interpreter: the standard library from /usr/lib,
 * threads, a subprocess, files */
static void python(void)
{
	static const char script[] =
		"import sys, os, re, struct, hashlib, subprocess, threading, tempfile, math\n"
		"print(sys.version_info[:2], sys.executable, sys.prefix)\n"
		"print(hashlib.sha256(b'abc').hexdigest())\n"
		"print(sum(i * i for i in range(100000)), math.factorial(20))\n"
		"print(re.findall(r'\\d+', 'a1b22c333'), struct.pack('<IH', 1, 2).hex())\n"
		"r = subprocess.run(['sort', '-r'], input=b'a\\nc\\nb\\n', capture_output=True)\n"
		"print(r.stdout.decode().split(), r.returncode)\n"
		"out = []\n"
		"ts = [threading.Thread(target=lambda k=k: out.append(k * k)) for k in range(8)]\n"
		"for t in ts: t.start()\n"
		"for t in ts: t.join()\n"
		"print(sorted(out))\n"
		"with tempfile.TemporaryDirectory() as d:\n"
		"    p = os.path.join(d, 'f')\n"
		"    with open(p, 'w') as f: f.write('x' * 5000)\n"
		"    print(os.stat(p).st_size, os.listdir(d))\n";
	char path[128];
	snprintf(path, sizeof path, "%s/t.py", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK("python.script_written", fd >= 0 && write(fd, script, sizeof script - 1) == sizeof script - 1);
	close(fd);
	char *argv[] = { "/usr/bin/python3.11", path, NULL };
	CHECK_EQ("python.status", run(argv, NULL, out, sizeof out), 0);
	CHECK_STR("python.output", out,
		  "(3, 11) /usr/bin/python3.11 /usr\n"
		  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n"
		  "333328333350000 2432902008176640000\n"
		  "['1', '22', '333'] 010000000200\n"
		  "['c', 'b', 'a'] 0\n"
		  "[0, 1, 4, 9, 16, 25, 36, 49]\n"
		  "5000 ['f']\n");
	unlink(path);
}

/* Debian's redis-server (jemalloc, OpenSSL, libsystemd) on a unix
 * socket, and redis-cli talking to it */
static void redis(void)
{
	char script[1024];
	snprintf(script, sizeof script,
		 "d=%s; cd $d; /usr/bin/redis-server --port 0 --unixsocket $d/r.sock --daemonize yes "
		 "--save '' --appendonly no --dir $d --logfile $d/redis.log || exit 1; "
		 "c() { /usr/bin/redis-cli -s $d/r.sock \"$@\"; }; "
		 "for i in $(seq 1 600); do [ \"$(c ping 2>/dev/null)\" = PONG ] && break; sleep 0.1; done; "
		 "c set k hello; c get k; c rpush l a b c; c lrange l 0 -1; c incrby n 5; c incrby n 5; "
		 "c info server | tr -d '\\r' | while read -r l; do case $l in redis_version:*|multiplexing_api:*) echo $l;; esac; done; "
		 "c shutdown nosave; for i in $(seq 1 600); do [ -e r.sock ] || break; sleep 0.1; done; "
		 "ls; rm -f redis.log",
		 dir);
	bash("redis", script,
	     "OK\nhello\n3\na\nb\nc\n5\n10\nredis_version:7.0.15\nmultiplexing_api:epoll\nredis.log\n", 0);
}

/* a copy of a dynamic program whose PT_INTERP names another file */
static int with_interp(const char *dst, const char *interp)
{
	int in = open(BIN "true", O_RDONLY);
	if (in < 0)
		return -1;
	static char buf[1 << 20];
	ssize_t n = read(in, buf, sizeof buf);
	close(in);
	if (n < (ssize_t)sizeof(Elf64_Ehdr))
		return -1;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	int done = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr *ph = (Elf64_Phdr *)(buf + eh->e_phoff + i * sizeof *ph);
		if (ph->p_type != PT_INTERP)
			continue;
		if (strlen(interp) + 1 > ph->p_filesz)
			return -1;
		memset(buf + ph->p_offset, 0, ph->p_filesz);
		memcpy(buf + ph->p_offset, interp, strlen(interp));
		if (strcmp(interp, "nonul") == 0)
			memset(buf + ph->p_offset, 'x', ph->p_filesz); /* no NUL at the end */
		done = 1;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0 || write(out, buf, n) != n)
		return -1;
	close(out);
	return done ? 0 : -1;
}

static int exec_errno(const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)path, NULL };
		execve(path, argv, env);
		_exit(errno);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *path, const void *b, size_t n, int mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd >= 0) {
		if (write(fd, b, n) != (ssize_t)n)
			perror(path);
		close(fd);
	}
}

static void bad_loaders(void)
{
	char p[128], interp[128];
	/* the loader copied elsewhere works */
	snprintf(interp, sizeof interp, "%s/ld", dir);
	int in = open("/lib64/ld-linux-x86-64.so.2", O_RDONLY);
	static char ld[1 << 20];
	ssize_t n = read(in, ld, sizeof ld);
	close(in);
	CHECK("loader.read", n > 4096);
	write_file(interp, ld, n, 0755);
	snprintf(p, sizeof p, "%s/prog", dir);
	CHECK_SYS("loader.patch", with_interp(p, interp));
	CHECK_EQ("loader.copy_runs", exec_errno(p), 0);

	/* missing: ENOENT; not executable: EACCES */
	snprintf(interp, sizeof interp, "%s/none", dir);
	CHECK_SYS("loader.patch_missing", with_interp(p, interp));
	CHECK_EQ("loader.missing", exec_errno(p), ENOENT);
	snprintf(interp, sizeof interp, "%s/ld", dir);
	chmod(interp, 0644);
	CHECK_SYS("loader.patch_noexec", with_interp(p, interp));
	CHECK_EQ("loader.not_executable", exec_errno(p), EACCES);

	/* not ELF, wrong machine, program headers cut: ELIBBAD */
	chmod(interp, 0755);
	static const char script[] = "#!/bin/sh\n# longer than an ELF header, which Linux reads whole first (EIO if short)\n";
	write_file(interp, script, sizeof script - 1, 0755);
	CHECK_EQ("loader.script", exec_errno(p), ELIBBAD);
	write_file(interp, ld, 63, 0755);
	CHECK_EQ("loader.shorter_than_header", exec_errno(p), EIO);
	memcpy(ld + 18, "\xb7\x00", 2); /* EM_AARCH64 */
	write_file(interp, ld, n, 0755);
	CHECK_EQ("loader.wrong_machine", exec_errno(p), ELIBBAD);
	memcpy(ld + 18, "\x3e\x00", 2);
	((Elf64_Ehdr *)ld)->e_phentsize = 20;
	write_file(interp, ld, n, 0755);
	CHECK_EQ("loader.bad_phentsize", exec_errno(p), ELIBBAD);
	/* a PT_INTERP path without its NUL: ENOEXEC */
	CHECK_SYS("loader.patch_nonul", with_interp(p, "nonul"));
	CHECK_EQ("loader.path_not_terminated", exec_errno(p), ENOEXEC);
	unlink(interp);
	unlink(p);
}

int main(int argc, char **argv)
{
	check_start(argv[0]);
	strcpy(dir, "/tmp/t_debian.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	loader_ran();
	scripts();
	versus_busybox();
	python();
	redis();
	bad_loaders();
	rmdir(dir);
	return check_done();
}
