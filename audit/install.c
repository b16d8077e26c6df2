/*
 * Installing the compiled filter, and handing its listener to the
 * launcher.
 *
 * After the install every system call of the program's threads goes
 * through the filter, this library's included, and the program's policy
 * may deny or supervise sendmsg and close, which the hand-off needs (a
 * supervised call would wait for a supervisor that has no listener yet).
 * So the hand-off is made by a helper process created just before the
 * install: it shares this process's memory and descriptor table
 * (CLONE_VM | CLONE_FILES) but is not one of its threads, so the filter
 * (TSYNC reaches the thread group only) does not apply to it. The main
 * thread publishes the listener in memory and makes a mark the filter
 * notifies (an execveat the kernel would refuse, run/cell/startup.go): it
 * waits, asleep, until the supervisor answers, which the supervisor does
 * once the helper has sent the listener and closed this process's copies
 * of it and of the socket (the socket's end of file tells): a process
 * that kept its own listener could answer its own calls, and would keep
 * them waiting forever, rather than failing with ENOSYS, if the
 * supervisor died. If the helper fails, it kills the process. The helper is a child
 * of the launcher (CLONE_PARENT), which reaps it, when the launcher is
 * this process's parent. A supervisor the program connected to is not
 * (and a container's first process, the init of its PID namespace, may
 * not use CLONE_PARENT): the helper is then this process's child, one
 * that sends no signal when it exits, which the program's waits do not
 * see (only __WALL or __WCLONE do) and which stays a zombie until the
 * program exits; the launcher is told "helper 0", none of its own.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"
#include "rt.h"

#define PENDING -1
#define ABORT -2

/* handoff is the listener once installed, PENDING before, ABORT when the
   install failed. */
static int handoff = PENDING;
static pid_t process;
static char helper_stack[64 * 1024] __attribute__((aligned(16)));

static bool send_listener(int sock, int listener)
{
	char line[64];
	int n = snprintf(line, sizeof line, "listener %d\n", (int)getpid());
	return rt_send_fd(sock, line, n, listener) == n;
}

static int helper(void *arg)
{
	(void)arg;
	int listener;
	while ((listener = __atomic_load_n(&handoff, __ATOMIC_ACQUIRE)) == PENDING)
		sched_yield();
	if (listener == ABORT)
		return 0;
	bool sent = send_listener(channel_fd(), listener);
	close(listener);
	close(channel_fd());
	if (!sent) {
		/* The program must not go on without a supervisor that can
		   answer its supervised calls. */
		kill(process, SIGKILL);
		return 1;
	}
	return 0;
}

static void start_helper(void)
{
	process = getpid();
	int flags = CLONE_VM | CLONE_FILES | (channel_parent() ? CLONE_PARENT | SIGCHLD : 0);
	pid_t pid = clone(helper, helper_stack + sizeof helper_stack, flags, NULL);
	if (pid < 0)
		die("start the helper: %s", strerror(errno));
	channel_printf("helper %d\n", channel_parent() ? (int)pid : 0);
	channel_flush();
}

static struct sock_fprog receive_program(void)
{
	char *line = channel_line();
	if (strncmp(line, "fail ", 5) == 0)
		die("%s", line + 5);
	char *end;
	unsigned long n = strncmp(line, "program ", 8) == 0 ? strtoul(line + 8, &end, 10) : 0;
	if (n == 0 || n > BPF_MAXINSNS || *end != '\0')
		die("unexpected line from the launcher: %s", line);
	static struct sock_filter insns[BPF_MAXINSNS];
	channel_read(insns, n * sizeof *insns);
	return (struct sock_fprog){.len = n, .filter = insns};
}

static void abort_install(const char *what)
{
	int err = errno;
	__atomic_store_n(&handoff, ABORT, __ATOMIC_RELEASE);
	die("%s: %s", what, strerror(err));
}

void install_filter(void)
{
	struct sock_fprog prog = receive_program();
	start_helper();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		abort_install("set no_new_privs");
	long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC |
					SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
				&prog);
	if (listener < 0)
		abort_install("install the filter");
	__atomic_store_n(&handoff, (int)listener, __ATOMIC_RELEASE);
	if (syscall(SYS_execveat, -1, NULL, NULL, NULL, MARK_INSTALLED) != 0)
		die("wait for the supervisor: %s", strerror(errno));
}
