/*
 * syscell-shim: the process syscell run starts a command through under a
 * whole-process policy (package enforce, whose doc.go says what the shim
 * does and why). This is the shim's own binary, which Run prefers next to
 * syscell: a C program starts in a fraction of the time the Go runtime
 * takes, and its execve(2) has no other threads to end. The Go shim
 * (shim.go) is the same, for a binary with no such file next to it; both
 * read the request as request.go encodes it and speak the same protocol.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* shim.go's constants. */
#define ENV "SYSCELL_RUN_SHIM"
#define FD 3
#define FAILED 127
#define READY 'R'
#define LISTENER 'L'
#define FAIL 'E'

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define PENDING -1

struct request {
	bool listen;
	struct sock_fprog prog;
	const char *path;
	char **argv, **envp;
};

/* What the filtered thread publishes, without a system call, for the
   voice: an unfiltered thread that speaks to the supervisor for it. */
static int listener = PENDING;
static int exec_errno;

/* errstr is e's message as Go's syscall.Errno says it, which the Go shim
   reports: glibc's with a lowercase first letter. */
static const char *errstr(int e)
{
	static char msg[256];
	snprintf(msg, sizeof msg, "%s", strerror(e));
	if (msg[0] >= 'A' && msg[0] <= 'Z')
		msg[0] += 'a' - 'A';
	return msg;
}

/* fail tells the supervisor why the command was not started, and ends
   the shim. */
static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	char msg[4096] = {FAIL};
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg + 1, sizeof msg - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof msg - 2)
		n = sizeof msg - 2;
	/* A supervisor gone would raise SIGPIPE: the shim ends all the same. */
	send(FD, msg, 1 + n, MSG_NOSIGNAL);
	_exit(FAILED);
}

static char *read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	*len = 0;
	for (;;) {
		if (buf == NULL)
			fail("read request: out of memory");
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("read request: %s", errstr(errno));
		if (n == 0)
			return buf;
		*len += n;
		if (*len == cap)
			buf = realloc(buf, cap *= 2);
	}
}

/* A cursor over the request, as request.go's decoder reads it. */
struct cursor {
	const char *p, *end;
};

static const char *take(struct cursor *c, uint64_t n)
{
	if ((uint64_t)(c->end - c->p) < n)
		fail("shim: decode request: cut short: %llu bytes wanted, %td left", (unsigned long long)n, c->end - c->p);
	const char *p = c->p;
	c->p += n;
	return p;
}

static uint32_t take_u32(struct cursor *c)
{
	const unsigned char *p = (const unsigned char *)take(c, 4);
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* take_string copies a string out, NUL-terminated. */
static char *take_string(struct cursor *c)
{
	uint32_t n = take_u32(c);
	const char *p = take(c, n);
	if (memchr(p, 0, n) != NULL)
		fail("shim: decode request: a string holds a NUL byte");
	char *s = strndup(p, n);
	if (s == NULL)
		fail("decode request: out of memory");
	return s;
}

static char **take_strings(struct cursor *c)
{
	uint32_t n = take_u32(c);
	if (n > (uint64_t)(c->end - c->p) / 4)
		fail("shim: decode request: cut short: %u strings", n);
	char **list = calloc(n + 1, sizeof *list);
	if (list == NULL)
		fail("decode request: out of memory");
	for (uint32_t i = 0; i < n; i++)
		list[i] = take_string(c);
	return list;
}

static struct request decode(const char *buf, size_t len)
{
	struct cursor c = {buf, buf + len};
	struct request r;
	r.listen = *take(&c, 1) != 0;
	uint32_t size = take_u32(&c);
	const char *prog = take(&c, size);
	if (size % sizeof(struct sock_filter) != 0 || size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		fail("bpf: decode: %u bytes are no program", size);
	r.prog.len = size / sizeof(struct sock_filter);
	r.prog.filter = malloc(size + 1);
	if (r.prog.filter == NULL)
		fail("decode request: out of memory");
	memcpy(r.prog.filter, prog, size);
	r.path = take_string(&c);
	r.argv = take_strings(&c);
	r.envp = take_strings(&c);
	if (c.p != c.end)
		fail("shim: decode request: %td bytes after its end", c.end - c.p);
	if (r.argv[0] == NULL)
		fail("shim: decode request: no arguments, not even the command's name");
	return r;
}

/* close_on_exec marks every descriptor but the standard streams
   close-on-exec: the socket, which os/exec hands over without the flag,
   and whatever the supervisor inherited without it from its own parent. */
static void close_on_exec(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	/* A kernel older than 5.11: each open descriptor, as listed. */
	DIR *dir = opendir("/proc/self/fd");
	if (dir == NULL)
		fail("list open descriptors: %s", errstr(errno));
	for (struct dirent *e; (e = readdir(dir)) != NULL;) {
		int fd = atoi(e->d_name);
		if (fd > 2 && fd != dirfd(dir))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(dir);
}

static void send_listener(int fd)
{
	char byte = LISTENER;
	char control[CMSG_SPACE(sizeof fd)] = {0};
	struct iovec iov = {&byte, 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof fd);
	memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
	if (sendmsg(FD, &msg, MSG_NOSIGNAL) != 1)
		fail("send the listener: %s", errstr(errno));
}

/* voice sends the listener once there is one, then waits for execve to
   fail, reports why, and ends the process. If execve succeeds, the kernel
   ends this thread first. */
static void *voice(void *arg)
{
	const struct request *r = arg;
	if (r->listen) {
		int fd;
		while ((fd = __atomic_load_n(&listener, __ATOMIC_ACQUIRE)) == PENDING)
			sched_yield();
		send_listener(fd);
	}
	int err;
	while ((err = __atomic_load_n(&exec_errno, __ATOMIC_ACQUIRE)) == 0) {
		struct timespec pause = {0, 20000};
		nanosleep(&pause, NULL);
	}
	fail("execute %s: %s", r->path, errstr(err));
}

int main(void)
{
	if (getenv(ENV) == NULL) {
		fprintf(stderr, "syscell-shim: syscell run starts this program; it is not run by hand\n");
		return 2;
	}
	size_t len;
	char *buf = read_all(FD, &len);
	struct request r = decode(buf, len);
	free(buf);
	close_on_exec();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fail("filter: set no_new_privs: %s", errstr(errno));
	pthread_t t;
	int err = pthread_create(&t, NULL, voice, &r);
	if (err != 0)
		fail("start the shim's voice: %s", errstr(err));
	if (send(FD, (char[]){READY}, 1, MSG_NOSIGNAL) != 1)
		fail("write to the supervisor: %s", errstr(errno));
	/* From the install on, this thread makes no system call but execve:
	   the policy may deny any other. */
	unsigned flags = r.listen ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &r.prog);
	if (fd < 0)
		fail("filter: install: %s", errstr(errno));
	__atomic_store_n(&listener, (int)fd, __ATOMIC_RELEASE);
	syscall(SYS_execve, r.path, r.argv, r.envp);
	__atomic_store_n(&exec_errno, errno, __ATOMIC_RELEASE);
	for (;;)
		;
}
