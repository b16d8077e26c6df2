// calls makes the system calls its arguments name, in order, and reports
// each result on standard output, one line each. Every call it tests goes
// through one syscall instruction, whose return address "ip" prints, so
// that a supervisor's reports can be checked against it.
//
//   sigsys        catch SIGSYS: print the trapped call and exit with status 3
//   ip            print the address just after the syscall instruction
//   getppid       getppid(2)
//   loop N        getppid(2) N times, quietly
//   mkdir PATH    mkdir(2)
//   mount         mount(2) with a null target, which fails with EFAULT
//   family        getppid from threads made before and after the main
//                 thread's own, from a child, its thread and a grandchild
//   fds           list the open file descriptors
//   touch PATH    create a file
//   exit N        exit with status N
//   exec PATH...  execve(2) the rest of the arguments
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern const char raw_syscall_ret[];

// raw_syscall returns the result or minus the errno, as the kernel does.
__attribute__((noinline)) static long raw_syscall(long nr, long a0, long a1, long a2) {
	long ret;
	__asm__ volatile("syscall\n"
	                 ".globl raw_syscall_ret\n"
	                 "raw_syscall_ret:\n"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a0), "S"(a1), "d"(a2)
	                 : "rcx", "r11", "memory");
	return ret;
}

// say writes one line unbuffered, so that nothing is written twice by a
// fork and lines from several processes come out whole.
static void say(const char *format, ...) {
	char line[256];
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(line, sizeof line - 1, format, ap);
	va_end(ap);
	line[n] = '\n';
	if (write(1, line, n + 1) != n + 1)
		_exit(100);
}

static void result(const char *what, long ret) {
	if (ret < 0)
		say("%s: errno %ld", what, -ret);
	else
		say("%s: ok", what);
}

static void on_sigsys(int sig, siginfo_t *info, void *ctx) {
	say("sigsys: syscall %d code %d", info->si_syscall, info->si_code);
	_exit(3);
}

static void *thread_getppid(void *who) {
	result(who, raw_syscall(SYS_getppid, 0, 0, 0));
	return NULL;
}

static void in_thread(const char *who) {
	pthread_t t;
	if (pthread_create(&t, NULL, thread_getppid, (void *)who) != 0 || pthread_join(t, NULL) != 0) {
		say("%s: cannot start", who);
		exit(101);
	}
}

static void in_child(void (*fn)(void)) {
	pid_t pid = fork();
	if (pid < 0) {
		say("fork: errno %d", errno);
		exit(102);
	}
	if (pid == 0) {
		fn();
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
}

static void grandchild(void) { result("grandchild", raw_syscall(SYS_getppid, 0, 0, 0)); }

static void child(void) {
	in_thread("child thread");
	result("child", raw_syscall(SYS_getppid, 0, 0, 0));
	in_child(grandchild);
}

// family runs a thread that started before the main thread's own call;
// the others start after it.
static void family(void) {
	pthread_t early;
	if (pthread_create(&early, NULL, thread_getppid, "thread before") != 0 || pthread_join(early, NULL) != 0)
		exit(101);
	result("main", raw_syscall(SYS_getppid, 0, 0, 0));
	in_thread("thread after");
	in_child(child);
}

static void fds(void) {
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		say("fds: errno %d", errno);
		return;
	}
	char list[200] = "fds:";
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		strncat(list, " ", sizeof list - strlen(list) - 1);
		strncat(list, e->d_name, sizeof list - strlen(list) - 1);
	}
	closedir(d);
	say("%s", list);
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		const char *op = argv[i];
		if (strcmp(op, "sigsys") == 0) {
			struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
			sigaction(SIGSYS, &sa, NULL);
		} else if (strcmp(op, "ip") == 0) {
			say("ip: %p", (const void *)raw_syscall_ret);
		} else if (strcmp(op, "getppid") == 0) {
			result(op, raw_syscall(SYS_getppid, 0, 0, 0));
		} else if (strcmp(op, "loop") == 0 && i + 1 < argc) {
			for (long n = atol(argv[++i]); n > 0; n--)
				raw_syscall(SYS_getppid, 0, 0, 0);
		} else if (strcmp(op, "mkdir") == 0 && i + 1 < argc) {
			result(op, raw_syscall(SYS_mkdir, (long)argv[++i], 0700, 0));
		} else if (strcmp(op, "mount") == 0) {
			result(op, raw_syscall(SYS_mount, 0, 0, 0));
		} else if (strcmp(op, "family") == 0) {
			family();
		} else if (strcmp(op, "fds") == 0) {
			fds();
		} else if (strcmp(op, "touch") == 0 && i + 1 < argc) {
			int fd = open(argv[++i], O_CREAT | O_WRONLY, 0644);
			result(op, fd < 0 ? -errno : 0);
		} else if (strcmp(op, "exit") == 0 && i + 1 < argc) {
			exit(atoi(argv[++i]));
		} else if (strcmp(op, "exec") == 0 && i + 1 < argc) {
			execv(argv[i + 1], argv + i + 1);
			result(op, -errno);
			return 0;
		} else {
			say("unknown operation %s", op);
			return 104;
		}
	}
	return 0;
}
