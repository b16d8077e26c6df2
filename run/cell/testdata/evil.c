// evil runs one attack of libevil.so's (see libevil.c) and prints, one
// line each, what its steps returned: "WHAT RESULT ERRNO" (ERRNO is "-"
// for success). argv[1] chooses the attack, argv[2] is a scratch
// directory; the directory an attack tries to make is DIR/MODE.
//
//   forged-loader, forged-libc, forged-program
//            in a child, libc's mkdir on a stack that begins at the
//            loader's, libc's or the program's entry point; the child
//            never comes back from it: "MODE exited N" or "MODE killed SIG"
//   forged-exec  the same with execve of /usr/bin/touch DIR/forged-exec
//   forged-during-exec SLOWSTART
//            a child executes SLOWSTART, whose loader then waits in
//            libslow.so's resolver; meanwhile another child does what
//            forged-loader does (DIR/forged-during-exec)
//   forged-return, deputy, stub-number, stub-borrow, sigreturn,
//   callback, callback-bound, copy, copy-sealed, copy-late, uring-setup
//            the attack of that name, in this process
//   rewrite  rewrites libgood.so's code (rewrite-mprotect, -mmap, -call)
//   rewrite-dlopen PLUGIN  the same with libgoodplug.so, loaded later
//   reserved SLOT  the same where compartment SLOT's code lay in the image
//            that executed this one (run it with exec)
//   procmem  rewrites libgood.so's code through /proc/self/mem
//   uring    libgood.so sets up a ring and submits a nop; libevil.so
//            writes a mkdirat into the ring, which libgood.so submits
//   uring-sqpoll  libgood.so sets up a ring polled by the kernel
//   exec-evil ARGS, exec-good ARGS
//            libevil.so or libgood.so runs ARGS in a child: "MODE exited N"
//   exec ARGS  executes ARGS
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

long evil_forged_startup(const char *which, const char *path);
long evil_forged_startup_exec(char *const argv[]);
long evil_forged_return(const char *path);
long evil_deputy(const char *path);
long evil_callback(const char *path, bool pointer);
long evil_stub_number(const char *path);
long evil_stub_borrow(const char *path);
long evil_sigreturn(const char *path);
void evil_rewrite(const char *path);
void evil_rewrite_dlopen(const char *file, const char *fn, const char *path);
void evil_rewrite_reserved(int slot, const char *path);
long evil_copy(const char *path, int seal, int late);
void evil_proc_mem(const char *path);
long evil_uring_setup(void);
void evil_uring_mkdirat(const char *path);
int evil_exec(char *const argv[]);
long good_ring_setup(unsigned flags);
struct io_uring_sqe *good_ring_sqe(void);
long good_ring_submit(void);
int good_exec(char *const argv[]);

static const char *dir;

static char *path(const char *name)
{
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

// raw reports a kernel-style result: -errno on failure.
static void raw(const char *what, long ret)
{
	printf("%s %ld %s\n", what, ret, ret < 0 ? strerrorname_np(-ret) : "-");
	fflush(stdout);
}

// ended reports how child ended, as "WHAT exited N" or "WHAT killed SIG".
static void ended(const char *what, pid_t child)
{
	int status;
	if (child < 0 || waitpid(child, &status, 0) != child) {
		printf("wait %s failed\n", what);
		exit(1);
	}
	if (WIFSIGNALED(status))
		printf("%s killed %s\n", what, sigabbrev_np(WTERMSIG(status)));
	else
		printf("%s exited %d\n", what, WEXITSTATUS(status));
	fflush(stdout);
}

// quiet_child makes the calling child dump no core and end within ten
// seconds, whatever the code it is sent to does.
static void quiet_child(void)
{
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	alarm(10);
}

// forged runs a forged start-up mkdir in a child.
static void forged(const char *mode, const char *which)
{
	pid_t child = fork();
	if (child == 0) {
		quiet_child();
		evil_forged_startup(which, path(mode));
		_exit(0);
	}
	ended(mode, child);
}

// forged_during_exec has a child execute slowstart and, while its loader
// waits in libslow.so's resolver (descriptors 9 and 10), another child
// forge a start-up stack.
static void forged_during_exec(const char *slowstart)
{
	int loading[2], go[2];
	if (pipe(loading) != 0 || pipe(go) != 0)
		exit(1);
	pid_t starting = fork();
	if (starting == 0) {
		if (dup2(loading[1], 9) != 9 || dup2(go[0], 10) != 10)
			_exit(126);
		execl(slowstart, slowstart, (char *)NULL);
		_exit(127);
	}
	char c;
	if (read(loading[0], &c, 1) != 1) {
		printf("slowstart never reached its resolver\n");
		exit(1);
	}
	forged("forged-during-exec", "loader");
	if (write(go[1], "g", 1) != 1)
		exit(1);
	ended("slowstart", starting);
}

static void in_child(const char *what, int (*run)(char *const[]), char *const argv[])
{
	pid_t child = fork();
	if (child == 0) {
		run(argv);
		_exit(127);
	}
	ended(what, child);
}

static void uring(void)
{
	long r = good_ring_setup(0);
	raw("ring-setup", r);
	if (r != 0)
		return;
	memset(good_ring_sqe(), 0, sizeof(struct io_uring_sqe));
	raw("ring-nop", good_ring_submit());
	evil_uring_mkdirat(path("uring"));
	raw("ring-mkdirat", good_ring_submit());
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	dir = argv[2];
	char *touch[] = {"/usr/bin/touch", path("forged-exec"), NULL};
	if (strcmp(mode, "forged-loader") == 0) {
		forged(mode, "loader");
	} else if (strcmp(mode, "forged-libc") == 0) {
		forged(mode, "libc");
	} else if (strcmp(mode, "forged-program") == 0) {
		forged(mode, "program");
	} else if (strcmp(mode, "forged-exec") == 0) {
		pid_t child = fork();
		if (child == 0) {
			quiet_child();
			evil_forged_startup_exec(touch);
			_exit(0);
		}
		ended(mode, child);
	} else if (strcmp(mode, "forged-during-exec") == 0 && argc > 3) {
		forged_during_exec(argv[3]);
	} else if (strcmp(mode, "forged-return") == 0) {
		raw(mode, evil_forged_return(path(mode)));
	} else if (strcmp(mode, "deputy") == 0) {
		raw(mode, evil_deputy(path(mode)));
	} else if (strcmp(mode, "callback") == 0 || strcmp(mode, "callback-bound") == 0) {
		raw(mode, evil_callback(path(mode), strcmp(mode, "callback") == 0));
	} else if (strcmp(mode, "stub-number") == 0) {
		raw(mode, evil_stub_number(path(mode)));
	} else if (strcmp(mode, "stub-borrow") == 0) {
		raw(mode, evil_stub_borrow(path(mode)));
	} else if (strcmp(mode, "sigreturn") == 0) {
		raw(mode, evil_sigreturn(path(mode)));
	} else if (strcmp(mode, "copy") == 0) {
		raw(mode, evil_copy(path(mode), 0, 0));
	} else if (strcmp(mode, "copy-sealed") == 0) {
		raw(mode, evil_copy(path(mode), 1, 0));
	} else if (strcmp(mode, "copy-late") == 0) {
		raw(mode, evil_copy(path(mode), 0, 1));
	} else if (strcmp(mode, "rewrite") == 0) {
		evil_rewrite(path(mode));
	} else if (strcmp(mode, "rewrite-dlopen") == 0 && argc > 3) {
		evil_rewrite_dlopen(argv[3], "plug_getpid", path(mode));
	} else if (strcmp(mode, "reserved") == 0 && argc > 3) {
		evil_rewrite_reserved(atoi(argv[3]), path(mode));
	} else if (strcmp(mode, "procmem") == 0) {
		evil_proc_mem(path(mode));
	} else if (strcmp(mode, "uring-setup") == 0) {
		raw("evil-uring-setup", evil_uring_setup());
	} else if (strcmp(mode, "uring") == 0) {
		uring();
	} else if (strcmp(mode, "uring-sqpoll") == 0) {
		raw("ring-sqpoll", good_ring_setup(IORING_SETUP_SQPOLL));
	} else if (strcmp(mode, "exec-evil") == 0 && argc > 3) {
		in_child(mode, evil_exec, argv + 3);
	} else if (strcmp(mode, "exec-good") == 0 && argc > 3) {
		in_child(mode, good_exec, argv + 3);
	} else if (strcmp(mode, "exec") == 0 && argc > 3) {
		execv(argv[3], argv + 3);
		raw("exec", -errno);
	} else {
		return 2;
	}
	return 0;
}
