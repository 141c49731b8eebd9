/*
 * Helpers shared by the mailbench programs (mailbench, mail-enqueue,
 * mail-qman, mail-deliver). See apps/mailbench/README.md for the spool
 * layout and the protocol between them.
 */
#ifndef MAILBENCH_COMMON_H
#define MAILBENCH_COMMON_H

#include <stddef.h>
#include <sys/types.h>

/* Datagram a client sends after enqueueing: the message id in decimal.
 * This one asks mail-qman to finish the deliveries it started and exit. */
#define QMAN_QUIT "quit"
#define QMAN_SOCK "qman.sock"

/* prog is the program name used in every message (set by main). */
extern const char *prog;

/* Prints "prog: fmt" and exits with status 1; fmt may end in ':' to
 * append strerror(errno). */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Full-length I/O: short counts and EINTR are retried, errors die. */
void write_all(int fd, const void *buf, size_t n, const char *what);
size_t read_full(int fd, void *buf, size_t n, const char *what);

/* Copies everything from one descriptor to the other. */
void copy_fd(int from, int to, const char *fromname, const char *toname);

/* snprintf into a PATH_MAX buffer, dying if the path does not fit. */
void path_fmt(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sends msg as one datagram to the queue manager's socket in spool. */
void notify_qman(const char *spool, const char *msg);

/* Parses a positive decimal number, dying with the option's name if the
 * text is not one or is above max. */
long parse_count(const char *text, const char *name, long max);

#endif
