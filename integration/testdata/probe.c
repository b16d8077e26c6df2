/*
 * probe makes the system calls its arguments name, once each, and prints a
 * line per call: "NAME: ok", or "NAME: " and the errno's name. It is the
 * whole root filesystem of the containers oci_test.go runs, so it is built
 * with gcc -static. Every call goes through syscall(2), so that what is
 * called does not depend on which syscall the C library would choose.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

struct check {
	const char *name;
	long (*call)(void);
};

static long call_getpid(void) { return syscall(SYS_getpid); }

/* The test looks for /x in the root filesystem afterwards. */
static long call_mkdir(void) { return syscall(SYS_mkdir, "/x", 0755); }

static long call_socket_unix(void) { return syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0); }
static long call_socket_inet(void) { return syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0); }
static long call_socket_vsock(void) { return syscall(SYS_socket, AF_VSOCK, SOCK_STREAM, 0); }

/* Fails with EINVAL when allowed: the arguments are too short. */
static long call_clone3(void) { return syscall(SYS_clone3, NULL, 0); }

/* Fails with EFAULT when allowed: there are no attributes to read. */
static long call_perf_event_open(void) { return syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0); }

static const struct check checks[] = {
	{"getpid", call_getpid},
	{"mkdir", call_mkdir},
	{"socket-unix", call_socket_unix},
	{"socket-inet", call_socket_inet},
	{"socket-vsock", call_socket_vsock},
	{"clone3", call_clone3},
	{"perf_event_open", call_perf_event_open},
};

static const struct check *find(const char *name)
{
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		if (strcmp(checks[i].name, name) == 0)
			return &checks[i];
	return NULL;
}

/* report prints the outcome; an errno without a name prints as a number. */
static void report(const char *name, long ret, int err)
{
	const char *errname;

	if (ret >= 0) {
		printf("%s: ok\n", name);
		return;
	}
	errname = strerrorname_np(err);
	if (errname != NULL)
		printf("%s: %s\n", name, errname);
	else
		printf("%s: errno %d\n", name, err);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const struct check *c = find(argv[i]);
		long ret;

		if (c == NULL) {
			fprintf(stderr, "probe: unknown call %s\n", argv[i]);
			return 2;
		}
		errno = 0;
		ret = c->call();
		report(c->name, ret, errno);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
