/*
 * t_xattr: the extended-attribute calls (get/set/list/remove, their l*
 * and f* forms) on tmpfs, which keeps no user.* attributes in Linux 6.1
 * (EOPNOTSUPP; lists are empty), and the checks that come first, in
 * Linux's order: the file (ENOENT, EBADF), flags (EINVAL), names
 * (ERANGE), sizes (E2BIG), and the namespaces' permission rules as
 * nobody (EACCES on root's files, user.* on a symlink EPERM/ENODATA,
 * trusted.* EPERM/ENODATA).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "probe.h"

#define F "/tmp/t_xattr_file"
#define L "/tmp/t_xattr_link"

static void nobody(int out)
{
	put(out, rc(setxattr(F, "user.x", "v", 1, 0)));
	char v[8];
	put(out, rc(getxattr("/tmp/t_xattr_private", "user.x", v, sizeof v)));
	put(out, rc(lsetxattr(L, "user.x", "v", 1, 0)));
	put(out, rc(lgetxattr(L, "user.x", v, sizeof v)));
	put(out, rc(setxattr(F, "trusted.x", "v", 1, 0)));
	put(out, rc(getxattr(F, "trusted.x", v, sizeof v)));
	put(out, rc(getxattr(F, "user.x", v, sizeof v)));
}

int main(void)
{
	check_prog = "t_xattr";
	int fd = open(F, O_RDWR | O_CREAT | O_TRUNC, 0644);
	close(open("/tmp/t_xattr_private", O_RDWR | O_CREAT | O_TRUNC, 0600));
	unlink(L);
	symlink(F, L);
	char v[64];

	CHECK_ERR("set.user", setxattr(F, "user.test", "value", 5, 0), EOPNOTSUPP);
	CHECK_ERR("lset.user", lsetxattr(F, "user.test", "value", 5, 0), EOPNOTSUPP);
	CHECK_ERR("fset.user", fsetxattr(fd, "user.test", "value", 5, XATTR_CREATE), EOPNOTSUPP);
	CHECK_ERR("get.user", getxattr(F, "user.test", v, sizeof v), EOPNOTSUPP);
	CHECK_ERR("get.through_link", getxattr(L, "user.test", v, sizeof v), EOPNOTSUPP);
	CHECK_ERR("fget.user", fgetxattr(fd, "user.test", v, sizeof v), EOPNOTSUPP);
	CHECK_ERR("get.unknown_namespace", getxattr(F, "bogus.x", v, sizeof v), EOPNOTSUPP);
	CHECK_EQ("list.empty", listxattr(F, v, sizeof v), 0);
	CHECK_EQ("llist.empty", llistxattr(L, v, sizeof v), 0);
	CHECK_EQ("flist.empty", flistxattr(fd, v, sizeof v), 0);
	CHECK_EQ("list.size_query", listxattr(F, NULL, 0), 0);
	CHECK_ERR("remove.user", removexattr(F, "user.test"), EOPNOTSUPP);
	CHECK_ERR("fremove.user", fremovexattr(fd, "user.test"), EOPNOTSUPP);
	CHECK_ERR("get.proc_file", getxattr("/proc/self/status", "user.x", v, sizeof v), EOPNOTSUPP);

	CHECK_ERR("set.flags", setxattr(F, "user.test", "v", 1, 4), EINVAL);
	CHECK_ERR("set.empty_name", setxattr(F, "", "v", 1, 0), ERANGE);
	CHECK_ERR("get.empty_name", getxattr(F, "", v, sizeof v), ERANGE);
	char longname[300];
	memset(longname, 'a', sizeof longname);
	memcpy(longname, "user.", 5);
	longname[256] = 0;
	CHECK_ERR("get.long_name", getxattr(F, longname, v, sizeof v), ERANGE);
	longname[255] = 0;
	CHECK_ERR("get.name_255", getxattr(F, longname, v, sizeof v), EOPNOTSUPP);
	static char big[65537];
	CHECK_ERR("set.too_big", setxattr(F, "user.test", big, sizeof big, 0), E2BIG);
	CHECK_ERR("set.missing_file", setxattr("/tmp/t_xattr_none", "user.x", "v", 1, 0), ENOENT);
	CHECK_ERR("get.missing_file", getxattr("/tmp/t_xattr_none", "user.x", v, sizeof v), ENOENT);
	CHECK_ERR("list.missing_file", listxattr("/tmp/t_xattr_none", v, sizeof v), ENOENT);
	CHECK_ERR("fget.badf", fgetxattr(-1, "user.x", v, sizeof v), EBADF);
	CHECK_ERR("flist.badf", flistxattr(-1, v, sizeof v), EBADF);
	CHECK_ERR("set.bad_name_pointer", setxattr(F, (char *)8, "v", 1, 0), EFAULT);

	int res[7];
	int got = probe(nobody, 1, res, 7);
	CHECK_EQ("nobody.probe", got, 7);
	if (got == 7) {
		CHECK_EQ("nobody.set_roots_file", res[0], EACCES);
		CHECK_EQ("nobody.get_unreadable", res[1], EACCES);
		CHECK_EQ("nobody.set_user_on_symlink", res[2], EPERM);
		CHECK_EQ("nobody.get_user_on_symlink", res[3], ENODATA);
		CHECK_EQ("nobody.set_trusted", res[4], EPERM);
		CHECK_EQ("nobody.get_trusted", res[5], ENODATA);
		CHECK_EQ("nobody.get_readable", res[6], EOPNOTSUPP);
	}
	close(fd);
	unlink(F);
	unlink(L);
	unlink("/tmp/t_xattr_private");
	return check_done();
}
