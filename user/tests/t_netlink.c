/* AF_NETLINK, NETLINK_ROUTE: links, addresses and routes as busybox ip,
 * getifaddrs and if_nameindex list and change them, cross-checked
 * against the interface ioctls. Only lo is assumed to exist; the test
 * adds an address and routes to it and removes them again. */
#include "check.h"
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* linux/netlink.h and linux/rtnetlink.h, which musl does not ship. */
#ifndef AF_NETLINK
#define AF_NETLINK 16
#endif
#define NETLINK_ROUTE 0
struct nlmsghdr {
	uint32_t nlmsg_len;
	uint16_t nlmsg_type, nlmsg_flags;
	uint32_t nlmsg_seq, nlmsg_pid;
};
struct sockaddr_nl {
	unsigned short nl_family, nl_pad;
	uint32_t nl_pid, nl_groups;
};
struct nlmsgerr {
	int error;
	struct nlmsghdr msg;
};
struct ifinfomsg {
	unsigned char ifi_family, pad;
	unsigned short ifi_type;
	int ifi_index;
	unsigned ifi_flags, ifi_change;
};
struct ifaddrmsg {
	unsigned char ifa_family, ifa_prefixlen, ifa_flags, ifa_scope;
	unsigned ifa_index;
};
struct rtmsg {
	unsigned char rtm_family, rtm_dst_len, rtm_src_len, rtm_tos, rtm_table, rtm_protocol, rtm_scope, rtm_type;
	unsigned rtm_flags;
};
struct rtattr {
	unsigned short rta_len, rta_type;
};
enum { NLM_F_REQUEST = 1, NLM_F_MULTI = 2, NLM_F_ACK = 4, NLM_F_DUMP = 0x300, NLM_F_REPLACE = 0x100, NLM_F_EXCL = 0x200, NLM_F_CREATE = 0x400 };
enum { NLMSG_ERROR = 2, NLMSG_DONE = 3 };
enum { RTM_NEWLINK = 16, RTM_GETLINK = 18, RTM_NEWADDR = 20, RTM_DELADDR, RTM_GETADDR, RTM_NEWROUTE = 24, RTM_DELROUTE, RTM_GETROUTE };
enum { IFLA_ADDRESS = 1, IFLA_IFNAME = 3, IFLA_MTU = 4 };
enum { IFA_ADDRESS = 1, IFA_LOCAL = 2, IFA_LABEL = 3 };
enum { RTA_DST = 1, RTA_OIF = 4, RTA_GATEWAY = 5, RTA_TABLE = 15 };
enum { RT_TABLE_MAIN = 254, RT_TABLE_LOCAL = 255, RTN_UNICAST = 1, RTN_LOCAL = 2, RTPROT_KERNEL = 2, RTPROT_STATIC = 4 };
enum { RT_SCOPE_UNIVERSE = 0, RT_SCOPE_LINK = 253, RT_SCOPE_HOST = 254, RT_SCOPE_NOWHERE = 255 };
#define NLA(n) (((n) + 3) & ~3)

static unsigned seq = 100;

static int nl_open(void)
{
	return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}

/* A request being built: header, fixed part and attributes. */
struct req {
	struct nlmsghdr h;
	char body[512];
};

static void req_init(struct req *r, int type, int flags, const void *fixed, size_t n)
{
	memset(r, 0, sizeof *r);
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = NLM_F_REQUEST | flags;
	r->h.nlmsg_seq = ++seq;
	memcpy(r->body, fixed, n);
	r->h.nlmsg_len = sizeof r->h + NLA(n);
}

static void req_attr(struct req *r, int type, const void *v, size_t n)
{
	struct rtattr *a = (void *)((char *)r + r->h.nlmsg_len);
	a->rta_len = sizeof *a + n;
	a->rta_type = type;
	memcpy(a + 1, v, n);
	r->h.nlmsg_len += NLA(a->rta_len);
}

static int req_send(int fd, struct req *r)
{
	struct sockaddr_nl k = {.nl_family = AF_NETLINK};
	return sendto(fd, r, r->h.nlmsg_len, 0, (void *)&k, sizeof k) == (ssize_t)r->h.nlmsg_len ? 0 : -1;
}

/* One reply message handed to a visitor. */
typedef void (*visit_fn)(struct nlmsghdr *h, void *arg);

/* Reads replies to request seq s until NLMSG_DONE or NLMSG_ERROR and
 * returns: 1 for DONE, 0 or a negative errno for ERROR, -1000 for a
 * reply that breaks the rules (wrong seq or pid, a dump part without
 * NLM_F_MULTI), -2000 when nothing came. */
static int replies(int fd, unsigned s, int dump, visit_fn f, void *arg)
{
	static char buf[32768];
	struct sockaddr_nl me;
	socklen_t ml = sizeof me;
	getsockname(fd, (void *)&me, &ml);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) != 1)
			return -2000;
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			return -2000;
		for (struct nlmsghdr *h = (void *)buf; n >= (ssize_t)sizeof *h && h->nlmsg_len >= sizeof *h && h->nlmsg_len <= n;) {
			if (h->nlmsg_seq != s || h->nlmsg_pid != me.nl_pid)
				return -1000;
			if (h->nlmsg_type == NLMSG_DONE)
				return 1;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)(h + 1))->error;
			if (dump && !(h->nlmsg_flags & NLM_F_MULTI))
				return -1000;
			if (f)
				f(h, arg);
			size_t adv = NLA(h->nlmsg_len);
			n -= adv;
			h = (void *)((char *)h + adv);
		}
		if (!dump)
			return 0;
	}
}

/* Sends r and collects its replies. */
static int call(int fd, struct req *r, visit_fn f, void *arg)
{
	if (req_send(fd, r) < 0)
		return -3000;
	return replies(fd, r->h.nlmsg_seq, (r->h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP, f, arg);
}

static struct rtattr *attr(struct nlmsghdr *h, size_t fixed, int type)
{
	char *p = (char *)(h + 1) + NLA(fixed), *end = (char *)h + h->nlmsg_len;
	while (p + sizeof(struct rtattr) <= end) {
		struct rtattr *a = (void *)p;
		if (a->rta_len < sizeof *a || p + a->rta_len > end)
			return NULL;
		if (a->rta_type == type)
			return a;
		p += NLA(a->rta_len);
	}
	return NULL;
}

static void *rta_data(struct rtattr *a) { return a + 1; }

static int ioctl_index(const char *name)
{
	struct ifreq r = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	strncpy(r.ifr_name, name, IFNAMSIZ - 1);
	int rc = ioctl(s, SIOCGIFINDEX, &r);
	close(s);
	return rc < 0 ? -1 : r.ifr_ifindex;
}

static int ioctl_flags(const char *name)
{
	struct ifreq r = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	strncpy(r.ifr_name, name, IFNAMSIZ - 1);
	int rc = ioctl(s, SIOCGIFFLAGS, &r);
	close(s);
	return rc < 0 ? -1 : (unsigned short)r.ifr_flags;
}

static int ioctl_mtu(const char *name)
{
	struct ifreq r = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	strncpy(r.ifr_name, name, IFNAMSIZ - 1);
	int rc = ioctl(s, SIOCGIFMTU, &r);
	close(s);
	return rc < 0 ? -1 : r.ifr_mtu;
}

/* --- links --- */

struct links {
	int n, agree, lo_index, lo_flags, lo_type, lo_mtu_ok;
};

static void on_link(struct nlmsghdr *h, void *arg)
{
	struct links *l = arg;
	if (h->nlmsg_type != RTM_NEWLINK)
		return;
	struct ifinfomsg *i = (void *)(h + 1);
	struct rtattr *name = attr(h, sizeof *i, IFLA_IFNAME), *mtu = attr(h, sizeof *i, IFLA_MTU);
	l->n++;
	if (!name)
		return;
	const char *nm = rta_data(name);
	/* Every link agrees with what the ioctls say about it. */
	if (ioctl_index(nm) == i->ifi_index && ioctl_flags(nm) == (int)(i->ifi_flags & 0xffff) &&
	    mtu && ioctl_mtu(nm) == (int)*(unsigned *)rta_data(mtu))
		l->agree++;
	if (strcmp(nm, "lo") == 0) {
		l->lo_index = i->ifi_index;
		l->lo_flags = i->ifi_flags;
		l->lo_type = i->ifi_type;
	}
}

static int set_lo(int fd, int index, int up)
{
	struct ifinfomsg i = {.ifi_index = index, .ifi_change = IFF_UP, .ifi_flags = up ? IFF_UP : 0};
	struct req r;
	req_init(&r, RTM_NEWLINK, NLM_F_ACK, &i, sizeof i);
	return call(fd, &r, NULL, NULL);
}

static void test_socket(void)
{
	CHECK_ERR("socket.stream", socket(AF_NETLINK, SOCK_STREAM, NETLINK_ROUTE), ESOCKTNOSUPPORT);
	CHECK_ERR("socket.bad_protocol", socket(AF_NETLINK, SOCK_RAW, 32), EPROTONOSUPPORT);
	int a = nl_open(), b = nl_open();
	CHECK_SYS("socket.raw", a);
	int d = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_ROUTE);
	CHECK_SYS("socket.dgram", d);
	close(d);
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	CHECK_ERR("bind.short", bind(a, (void *)&sa, 4), EINVAL);
	CHECK_SYS("bind.auto", bind(a, (void *)&sa, sizeof sa));
	socklen_t sl = sizeof sa;
	CHECK_SYS("getsockname", getsockname(a, (void *)&sa, &sl));
	CHECK_EQ("getsockname.len", sl, sizeof sa);
	CHECK_EQ("getsockname.family", sa.nl_family, AF_NETLINK);
	CHECK_EQ("bind.auto_is_pid", sa.nl_pid, (uint32_t)getpid());
	struct sockaddr_nl sb = {.nl_family = AF_NETLINK, .nl_pid = sa.nl_pid};
	CHECK_ERR("bind.in_use", bind(b, (void *)&sb, sizeof sb), EADDRINUSE);
	/* b binds on its first send: another, unique port ID. */
	struct ifinfomsg i = {0};
	struct req r;
	req_init(&r, RTM_GETLINK, NLM_F_DUMP, &i, sizeof i);
	CHECK_EQ("autobind.dump", call(b, &r, NULL, NULL), 1);
	sl = sizeof sb;
	getsockname(b, (void *)&sb, &sl);
	CHECK("autobind.unique", sb.nl_pid != 0 && sb.nl_pid != sa.nl_pid);
	/* A message shorter than its header is dropped without a reply. */
	struct nlmsghdr shorth = {.nlmsg_len = 8, .nlmsg_type = RTM_GETLINK, .nlmsg_flags = NLM_F_REQUEST};
	send(a, &shorth, sizeof shorth, 0);
	char buf[64];
	CHECK_ERR("short_message.no_reply", recv(a, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	/* An unknown type is EOPNOTSUPP. */
	req_init(&r, 200, NLM_F_ACK, &i, sizeof i);
	CHECK_EQ("unknown_type.eopnotsupp", call(a, &r, NULL, NULL), -EOPNOTSUPP);
	/* MSG_PEEK|MSG_TRUNC with no buffer gives the datagram's size, as
	 * libnl and iproute2 size their buffers. */
	req_init(&r, RTM_GETLINK, NLM_F_DUMP, &i, sizeof i);
	req_send(a, &r);
	struct pollfd p = {.fd = a, .events = POLLIN};
	poll(&p, 1, 5000);
	ssize_t want = recv(a, NULL, 0, MSG_PEEK | MSG_TRUNC);
	CHECK("peek_trunc.size", want > (ssize_t)sizeof(struct nlmsghdr));
	char small[16];
	struct iovec iov = {small, sizeof small};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t got = recvmsg(a, &mh, 0);
	CHECK_EQ("trunc.got", got, (ssize_t)sizeof small);
	CHECK("trunc.flag", mh.msg_flags & MSG_TRUNC);
	/* The rest of that dump is still there. */
	CHECK_EQ("trunc.rest_of_dump", replies(a, r.h.nlmsg_seq, 1, NULL, NULL), 1);
	close(a);
	close(b);
}

static int test_links(int fd)
{
	struct links l = {0};
	struct ifinfomsg i = {0};
	struct req r;
	req_init(&r, RTM_GETLINK, NLM_F_DUMP, &i, sizeof i);
	CHECK_EQ("getlink.dump_done", call(fd, &r, on_link, &l), 1);
	CHECK("getlink.found_lo", l.lo_index > 0);
	/* Linux's lo starts down in the test image: down (a no-op there)
	 * and up through netlink, seen by SIOCGIFFLAGS, then dump again. */
	CHECK_EQ("setlink.down_ack", set_lo(fd, l.lo_index, 0), 0);
	CHECK("setlink.down_seen", !(ioctl_flags("lo") & IFF_UP));
	CHECK_EQ("setlink.up_ack", set_lo(fd, l.lo_index, 1), 0);
	CHECK("setlink.up_seen", ioctl_flags("lo") & IFF_UP);
	memset(&l, 0, sizeof l);
	req_init(&r, RTM_GETLINK, NLM_F_DUMP, &i, sizeof i);
	CHECK_EQ("getlink.dump_again", call(fd, &r, on_link, &l), 1);
	CHECK_EQ("getlink.lo_index_is_ioctls", l.lo_index, ioctl_index("lo"));
	CHECK_EQ("getlink.lo_type", l.lo_type, 772);
	CHECK("getlink.lo_flags", (l.lo_flags & IFF_LOOPBACK) && (l.lo_flags & IFF_UP));
	CHECK_EQ("getlink.all_agree_with_ioctls", l.agree, l.n);
	unsigned idx = if_nametoindex("lo");
	CHECK_EQ("if_nametoindex", (int)idx, l.lo_index);
	struct if_nameindex *ni = if_nameindex();
	int n = 0;
	for (struct if_nameindex *p = ni; p && p->if_index; p++)
		n++;
	CHECK_EQ("if_nameindex.count", n, l.n);
	if (ni)
		if_freenameindex(ni);

	/* One link by index, and by name. */
	struct links one = {0};
	i.ifi_index = l.lo_index;
	req_init(&r, RTM_GETLINK, 0, &i, sizeof i);
	CHECK_EQ("getlink.by_index", call(fd, &r, on_link, &one), 0);
	CHECK_EQ("getlink.by_index_lo", one.lo_index, l.lo_index);
	memset(&one, 0, sizeof one);
	i.ifi_index = 0;
	req_init(&r, RTM_GETLINK, 0, &i, sizeof i);
	req_attr(&r, IFLA_IFNAME, "lo", 3);
	CHECK_EQ("getlink.by_name", call(fd, &r, on_link, &one), 0);
	CHECK_EQ("getlink.by_name_lo", one.lo_index, l.lo_index);
	i.ifi_index = 9999;
	req_init(&r, RTM_GETLINK, 0, &i, sizeof i);
	CHECK_EQ("getlink.no_such_index", call(fd, &r, NULL, NULL), -ENODEV);
	return l.lo_index;
}

/* --- addresses --- */

struct addrs {
	int lo_index, v4_lo, found_test, test_prefix, test_label, other_family;
	int family;
	in_addr_t test;
};

static void on_addr(struct nlmsghdr *h, void *arg)
{
	struct addrs *a = arg;
	if (h->nlmsg_type != RTM_NEWADDR)
		return;
	struct ifaddrmsg *m = (void *)(h + 1);
	if (a->family && m->ifa_family != a->family)
		a->other_family++;
	if (m->ifa_family != AF_INET)
		return;
	struct rtattr *loc = attr(h, sizeof *m, IFA_LOCAL), *lab = attr(h, sizeof *m, IFA_LABEL);
	if (!loc)
		return;
	in_addr_t v = *(in_addr_t *)rta_data(loc);
	if ((int)m->ifa_index == a->lo_index && v == htonl(INADDR_LOOPBACK) && m->ifa_prefixlen == 8 &&
	    m->ifa_scope == RT_SCOPE_HOST)
		a->v4_lo++;
	if (v == a->test) {
		a->found_test++;
		a->test_prefix = m->ifa_prefixlen;
		a->test_label = lab && strcmp(rta_data(lab), "lo") == 0;
	}
}

static int addr_req(int fd, int type, int flags, int lo, in_addr_t v, int plen)
{
	struct ifaddrmsg m = {.ifa_family = AF_INET, .ifa_prefixlen = plen, .ifa_index = lo};
	struct req r;
	req_init(&r, type, flags | NLM_F_ACK, &m, sizeof m);
	req_attr(&r, IFA_LOCAL, &v, 4);
	req_attr(&r, IFA_ADDRESS, &v, 4);
	return call(fd, &r, NULL, NULL);
}

static int dump_addrs(int fd, struct addrs *a, int family)
{
	struct ifaddrmsg m = {.ifa_family = family};
	struct req r;
	a->family = family;
	req_init(&r, RTM_GETADDR, NLM_F_DUMP, &m, sizeof m);
	return call(fd, &r, on_addr, a);
}

static int has_ifaddr(in_addr_t v)
{
	struct ifaddrs *ifa;
	int found = 0;
	if (getifaddrs(&ifa) < 0)
		return -1;
	for (struct ifaddrs *p = ifa; p; p = p->ifa_next)
		if (p->ifa_addr && p->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)p->ifa_addr)->sin_addr.s_addr == v && strcmp(p->ifa_name, "lo") == 0)
			found = 1;
	freeifaddrs(ifa);
	return found;
}

/* --- routes --- */

struct routes {
	in_addr_t dst;
	int len, found, table, type, proto, scope, oif;
	in_addr_t gw;
};

static void on_route(struct nlmsghdr *h, void *arg)
{
	struct routes *q = arg;
	if (h->nlmsg_type != RTM_NEWROUTE)
		return;
	struct rtmsg *m = (void *)(h + 1);
	struct rtattr *d = attr(h, sizeof *m, RTA_DST), *o = attr(h, sizeof *m, RTA_OIF), *g = attr(h, sizeof *m, RTA_GATEWAY),
		      *t = attr(h, sizeof *m, RTA_TABLE);
	if (m->rtm_family != AF_INET || m->rtm_dst_len != q->len || !d || *(in_addr_t *)rta_data(d) != q->dst)
		return;
	if (t && *(unsigned *)rta_data(t) != m->rtm_table && m->rtm_table != 252)
		return;
	q->found++;
	q->table = m->rtm_table;
	q->type = m->rtm_type;
	q->proto = m->rtm_protocol;
	q->scope = m->rtm_scope;
	q->oif = o ? (int)*(unsigned *)rta_data(o) : 0;
	q->gw = g ? *(in_addr_t *)rta_data(g) : 0;
}

static int find_route(int fd, struct routes *q)
{
	struct rtmsg m = {.rtm_family = AF_INET};
	struct req r;
	q->found = 0;
	req_init(&r, RTM_GETROUTE, NLM_F_DUMP, &m, sizeof m);
	return call(fd, &r, on_route, q);
}

/* A route request as ip sends it: a new route's scope follows from its
 * gateway; a route to delete matches any scope (RT_SCOPE_NOWHERE)
 * unless scope is given. */
static int route_req_scope(int fd, int type, int flags, in_addr_t dst, int len, in_addr_t gw, int oif, int scope)
{
	struct rtmsg m = {.rtm_family = AF_INET, .rtm_dst_len = len, .rtm_table = RT_TABLE_MAIN,
			  .rtm_protocol = RTPROT_STATIC, .rtm_scope = scope, .rtm_type = RTN_UNICAST};
	struct req r;
	req_init(&r, type, flags | NLM_F_ACK, &m, sizeof m);
	req_attr(&r, RTA_DST, &dst, 4);
	if (gw)
		req_attr(&r, RTA_GATEWAY, &gw, 4);
	if (oif)
		req_attr(&r, RTA_OIF, &oif, 4);
	return call(fd, &r, NULL, NULL);
}

static int route_req(int fd, int type, int flags, in_addr_t dst, int len, in_addr_t gw, int oif)
{
	int scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	if (type == RTM_DELROUTE)
		scope = RT_SCOPE_NOWHERE;
	return route_req_scope(fd, type, flags, dst, len, gw, oif, scope);
}

static void test_addrs_routes(int fd, int lo)
{
	struct addrs a = {.lo_index = lo, .test = inet_addr("10.9.8.7")};
	CHECK_EQ("getaddr.dump_done", dump_addrs(fd, &a, AF_INET), 1);
	CHECK_EQ("getaddr.lo_127", a.v4_lo, 1);
	CHECK_EQ("getaddr.family_filter", a.other_family, 0);
	CHECK_EQ("getaddr.no_test_addr_yet", a.found_test, 0);

	CHECK_EQ("newaddr.ack", addr_req(fd, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, lo, a.test, 24), 0);
	CHECK_EQ("newaddr.again_excl", addr_req(fd, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, lo, a.test, 24), -EEXIST);
	CHECK_EQ("newaddr.bad_prefix", addr_req(fd, RTM_NEWADDR, NLM_F_CREATE, lo, inet_addr("10.9.9.9"), 33), -EINVAL);
	CHECK_EQ("newaddr.no_such_link", addr_req(fd, RTM_NEWADDR, NLM_F_CREATE, 9999, inet_addr("10.9.9.9"), 24), -ENODEV);
	a.found_test = 0;
	dump_addrs(fd, &a, AF_INET);
	CHECK_EQ("newaddr.listed", a.found_test, 1);
	CHECK_EQ("newaddr.prefix", a.test_prefix, 24);
	CHECK("newaddr.label", a.test_label);
	CHECK_EQ("newaddr.getifaddrs", has_ifaddr(a.test), 1);

	/* The address's prefix route: on a loopback link Linux puts it in
	 * the local table as a local route. */
	struct routes q = {.dst = inet_addr("10.9.8.0"), .len = 24};
	CHECK_EQ("getroute.dump_done", find_route(fd, &q), 1);
	CHECK_EQ("prefix_route.found", q.found, 1);
	CHECK_EQ("prefix_route.table", q.table, RT_TABLE_LOCAL);
	CHECK_EQ("prefix_route.type", q.type, RTN_LOCAL);
	CHECK_EQ("prefix_route.proto", q.proto, RTPROT_KERNEL);
	CHECK_EQ("prefix_route.oif", q.oif, lo);

	/* A route through lo, then one through a gateway on it. */
	in_addr_t net = inet_addr("10.99.0.0"), net2 = inet_addr("10.98.0.0"), gw = inet_addr("10.99.0.1");
	CHECK_EQ("newroute.no_create", route_req(fd, RTM_NEWROUTE, 0, net, 16, 0, lo), -ENOENT);
	CHECK_EQ("newroute.dev", route_req(fd, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, net, 16, 0, lo), 0);
	CHECK_EQ("newroute.dev_again", route_req(fd, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, net, 16, 0, lo), -EEXIST);
	CHECK_EQ("newroute.unreachable_gw", route_req(fd, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, net2, 16, inet_addr("192.0.2.1"), 0), -ENETUNREACH);
	CHECK_EQ("newroute.gw", route_req(fd, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, net2, 16, gw, 0), 0);
	q = (struct routes){.dst = net, .len = 16};
	find_route(fd, &q);
	CHECK_EQ("route_dev.found", q.found, 1);
	CHECK_EQ("route_dev.table", q.table, RT_TABLE_MAIN);
	CHECK_EQ("route_dev.type", q.type, RTN_UNICAST);
	CHECK_EQ("route_dev.proto", q.proto, RTPROT_STATIC);
	CHECK_EQ("route_dev.scope", q.scope, RT_SCOPE_LINK);
	CHECK_EQ("route_dev.oif", q.oif, lo);
	q = (struct routes){.dst = net2, .len = 16};
	find_route(fd, &q);
	CHECK_EQ("route_gw.found", q.found, 1);
	CHECK("route_gw.gateway", q.gw == gw);
	CHECK_EQ("route_gw.oif_from_gateway", q.oif, lo);
	CHECK_EQ("route_gw.scope", q.scope, RT_SCOPE_UNIVERSE);

	/* A non-root caller can read but not change. */
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534) < 0)
			_exit(10);
		int f = nl_open();
		struct addrs b = {.lo_index = lo, .test = a.test};
		if (dump_addrs(f, &b, AF_INET) != 1 || b.found_test != 1)
			_exit(11);
		_exit(route_req(f, RTM_DELROUTE, 0, net2, 16, 0, 0) == -EPERM ? 0 : 12);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("nonroot.reads_but_cannot_change", WEXITSTATUS(st), 0);

	CHECK_EQ("delroute.scope_mismatch", route_req_scope(fd, RTM_DELROUTE, 0, net2, 16, 0, 0, RT_SCOPE_LINK), -ESRCH);
	CHECK_EQ("delroute.gw", route_req(fd, RTM_DELROUTE, 0, net2, 16, 0, 0), 0);
	CHECK_EQ("delroute.dev", route_req(fd, RTM_DELROUTE, 0, net, 16, 0, 0), 0);
	CHECK_EQ("delroute.again", route_req(fd, RTM_DELROUTE, 0, net, 16, 0, 0), -ESRCH);
	q = (struct routes){.dst = net, .len = 16};
	find_route(fd, &q);
	CHECK_EQ("delroute.gone", q.found, 0);

	CHECK_EQ("deladdr.ack", addr_req(fd, RTM_DELADDR, 0, lo, a.test, 24), 0);
	CHECK_EQ("deladdr.again", addr_req(fd, RTM_DELADDR, 0, lo, a.test, 24), -EADDRNOTAVAIL);
	a.found_test = 0;
	dump_addrs(fd, &a, AF_INET);
	CHECK_EQ("deladdr.gone", a.found_test, 0);
	CHECK_EQ("deladdr.getifaddrs", has_ifaddr(a.test), 0);
	q = (struct routes){.dst = inet_addr("10.9.8.0"), .len = 24};
	find_route(fd, &q);
	CHECK_EQ("deladdr.prefix_route_gone", q.found, 0);
}

/* busybox ip reads the same tables. */
static void test_busybox_ip(void)
{
	FILE *f = popen("ip addr show dev lo 2>&1", "r");
	char line[256];
	int lo = 0, v4 = 0;
	while (f && fgets(line, sizeof line, f)) {
		if (strstr(line, "lo:") && strstr(line, "LOOPBACK"))
			lo = 1;
		if (strstr(line, "inet 127.0.0.1/8"))
			v4 = 1;
	}
	int st = f ? pclose(f) : -1;
	CHECK_EQ("ip_addr.status", st, 0);
	CHECK("ip_addr.lo", lo);
	CHECK("ip_addr.127", v4);
	f = popen("ip route add 10.77.0.0/16 dev lo && ip route show && ip route del 10.77.0.0/16 dev lo", "r");
	int seen = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "10.77.0.0/16 dev lo"))
			seen = 1;
	st = f ? pclose(f) : -1;
	CHECK_EQ("ip_route.status", st, 0);
	CHECK("ip_route.listed", seen);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_socket();
	int fd = nl_open();
	int lo = test_links(fd);
	if (lo > 0)
		test_addrs_routes(fd, lo);
	close(fd);
	test_busybox_ip();
	return check_done();
}
