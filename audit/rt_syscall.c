/*
 * The runtime's system call wrappers: each makes the call glibc 2.36's
 * makes (stat is newfstatat, send is sendto...), so that the policies
 * and the supervisor's start-up rules see the calls they always saw,
 * and fails as it does, with -1 and errno. None is a cancellation point
 * (glibc's read, connect, send and sendmsg are): the library's own calls
 * are no program's to cancel.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

#define PAGE 4096L

static __thread int error __attribute__((tls_model("initial-exec")));

int *__errno_location(void)
{
	return &error;
}

long rt_result(long ret)
{
	if ((unsigned long)ret > -4096UL) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

#define CALL(nr, a, b, c, d, e, f) \
	rt_result(rt_call(nr, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)))

long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	return CALL(nr, a, b, c, d, e, f);
}

ssize_t read(int fd, void *buf, size_t n)
{
	return CALL(__NR_read, fd, buf, n, 0, 0, 0);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	return CALL(__NR_write, fd, buf, n, 0, 0, 0);
}

int close(int fd)
{
	return CALL(__NR_close, fd, 0, 0, 0, 0, 0);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	return CALL(__NR_fcntl, fd, cmd, arg, 0, 0, 0);
}

ssize_t readlink(const char *restrict path, char *restrict buf, size_t size)
{
	return CALL(__NR_readlink, path, buf, size, 0, 0, 0);
}

int stat(const char *restrict path, struct stat *restrict st)
{
	return CALL(__NR_newfstatat, AT_FDCWD, path, st, 0, 0, 0);
}

int fstat(int fd, struct stat *st)
{
	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	return CALL(__NR_newfstatat, fd, "", st, AT_EMPTY_PATH, 0, 0);
}

void *mmap(void *addr, size_t size, int prot, int flags, int fd, off_t offset)
{
	if (offset & (PAGE - 1)) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return (void *)CALL(__NR_mmap, addr, size, prot, flags, fd, offset);
}

int mprotect(void *addr, size_t size, int prot)
{
	return CALL(__NR_mprotect, addr, size, prot, 0, 0, 0);
}

int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long), d = va_arg(ap, long);
	va_end(ap);
	return CALL(__NR_prctl, option, a, b, c, d, 0);
}

pid_t getpid(void)
{
	return rt_call(__NR_getpid, 0, 0, 0, 0, 0, 0);
}

int kill(pid_t pid, int sig)
{
	return CALL(__NR_kill, pid, sig, 0, 0, 0, 0);
}

int sched_yield(void)
{
	return CALL(__NR_sched_yield, 0, 0, 0, 0, 0, 0);
}

int socket(int domain, int type, int protocol)
{
	return CALL(__NR_socket, domain, type, protocol, 0, 0, 0);
}

/* __CONST_SOCKADDR_ARG: a transparent union of sockaddr pointers under
   _GNU_SOURCE. */
int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len)
{
	return CALL(__NR_connect, fd, addr.__sockaddr__, len, 0, 0, 0);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	return CALL(__NR_sendto, fd, buf, n, flags, 0, 0);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return CALL(__NR_sendmsg, fd, msg, flags, 0, 0, 0);
}

void _exit(int status)
{
	for (;;) {
		rt_call(__NR_exit_group, status, 0, 0, 0, 0, 0);
		rt_call(__NR_exit, status, 0, 0, 0, 0, 0);
	}
}
