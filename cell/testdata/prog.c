// prog makes system calls from chosen places and prints, one line each,
// what they returned: "WHAT RESULT ERRNO" (ERRNO is "-" for success).
// argv[1] chooses the mode, argv[2] is a scratch directory:
//
//   lib      libgetpid.so calls getpid; libmk.so calls mkdir(DIR/lib)
//   main     prog calls getpid by its wrapper, by syscall(), and inline
//   stdio    libmk.so and prog fopen DIR/file: openat from libc's code
//   ctor     reports what libmk.so's constructor's mkdir(DIR/ctor) did
//   loader   reports the getpid libgetpid.so's calloc made when the
//            loader called it, before any constructor
//   thread   a thread does what lib does, mkdir(DIR/thread)
//   fork     a child and a grandchild do what lib does (DIR/child, DIR/grandchild)
//   dlopen   libplug.so (argv[3]) calls getpid and mkdir(DIR/plug)
//   errno    errno after a denied call, and after an allowed one
//   vdso     libgetpid.so and prog read the CPU time, for which the
//            vDSO's clock_gettime makes the system call
//   mkdir    prog's own mkdir(DIR/main), which its compartment allows
//   loop N   calls lib_getpid() N times in each of 9 rounds and prints
//            the nanoseconds per call of each round
//   indirect N  the same with lib_getpid_indirect(), whose getpid the
//            supervisor decides
//   wait     prints "ready", reads a byte from its standard input, then
//            opens DIR/file through libmk.so and does what lib does
//            (DIR/after)
//   exec     executes argv[3] (with the arguments that follow)
//   cancel   cancels a thread in libgetpid.so's pause: once with the
//            request pending before the call, once while it waits (the
//            request comes from libgetpid.so, which may call getpid)
//
// Built with gcc -O2 -fomit-frame-pointer, as Debian builds its programs.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

long lib_getpid(void);
long lib_getpid_indirect(void);
long lib_pause(void);
int lib_cancel(pthread_t t);
int lib_cputime(void);
int lib_mkdir(const char *path);
int lib_fopen(const char *path);
extern int lib_ctor_result, lib_ctor_errno;
extern long lib_loader_getpid;

static const char *dir;

static void report(const char *what, long ret)
{
	printf("%s %ld %s\n", what, ret, ret < 0 ? strerrorname_np(errno) : "-");
	fflush(stdout);
}

// raw reports a call that returns the kernel's result as it is, errno
// untouched: getpid's wrapper, or a syscall instruction.
static void raw(const char *what, long ret)
{
	printf("%s %ld %s\n", what, ret, ret < 0 ? strerrorname_np(-ret) : "-");
	fflush(stdout);
}

static char *path(const char *name)
{
	static __thread char buf[4096];
	snprintf(buf, sizeof buf, "%s/%s", dir, name);
	return buf;
}

static void from_libs(const char *who)
{
	char what[64];
	snprintf(what, sizeof what, "%s-getpid", who);
	report(what, lib_getpid());
	snprintf(what, sizeof what, "%s-mkdir", who);
	report(what, lib_mkdir(path(who)));
}

static long inline_getpid(void)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_getpid) : "rcx", "r11", "memory");
	return ret;
}

static void *thread_main(void *arg)
{
	(void)arg;
	from_libs("thread");
	return NULL;
}

static void wait_for(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("wait %d failed\n", (int)pid);
		exit(1);
	}
}

static void forks(void)
{
	pid_t child = fork();
	if (child == 0) {
		from_libs("child");
		pid_t grandchild = fork();
		if (grandchild == 0) {
			from_libs("grandchild");
			_exit(0);
		}
		wait_for(grandchild);
		_exit(0);
	}
	wait_for(child);
}

static void plugin(const char *file)
{
	void *h = dlopen(file, RTLD_NOW);
	if (h == NULL) {
		printf("dlopen %s\n", dlerror());
		exit(1);
	}
	long (*plug_getpid)(void) = (long (*)(void))dlsym(h, "plug_getpid");
	long (*plug_inline_getpid)(void) = (long (*)(void))dlsym(h, "plug_inline_getpid");
	int (*plug_mkdir)(const char *) = (int (*)(const char *))dlsym(h, "plug_mkdir");
	report("plug-getpid", plug_getpid());
	report("plug-inline-getpid", plug_inline_getpid());
	report("plug-mkdir", plug_mkdir(path("plug")));
}

static int cleanups;

static void cleanup(void *arg)
{
	(void)arg;
	cleanups++;
}

static void *pauser(void *pending)
{
	pthread_cleanup_push(cleanup, NULL);
	if (pending)
		pthread_cancel(pthread_self());
	long ret = lib_pause();
	printf("pause-returned %ld\n", ret);
	pthread_cleanup_pop(0);
	return NULL;
}

// cancel cancels a thread in lib_pause; the blocked case gives the thread
// a tenth of a second to reach the call.
static void cancel(const char *name, int pending)
{
	pthread_t t;
	void *ret;
	if (pthread_create(&t, NULL, pauser, pending ? &t : NULL) != 0)
		exit(1);
	if (!pending) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
		lib_cancel(t);
	}
	pthread_join(t, &ret);
	printf("%s %s %d\n", name, ret == PTHREAD_CANCELED ? "canceled" : "returned", cleanups);
}

static void loop(long n, long (*call)(void))
{
	for (int round = 0; round < 9; round++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long i = 0; i < n; i++)
			call();
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("round %.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	dir = argv[2];
	if (strcmp(mode, "lib") == 0) {
		from_libs("lib");
	} else if (strcmp(mode, "main") == 0) {
		raw("main-getpid", getpid());
		report("main-syscall-getpid", syscall(SYS_getpid));
		raw("main-inline-getpid", inline_getpid());
	} else if (strcmp(mode, "stdio") == 0) {
		report("lib-fopen", lib_fopen(path("file")));
		FILE *f = fopen(path("file"), "r");
		report("main-fopen", f ? 0 : -1);
	} else if (strcmp(mode, "ctor") == 0) {
		errno = lib_ctor_errno;
		report("ctor-mkdir", lib_ctor_result);
	} else if (strcmp(mode, "loader") == 0) {
		printf("loader-getpid %ld -\n", lib_loader_getpid);
	} else if (strcmp(mode, "thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
	} else if (strcmp(mode, "fork") == 0) {
		forks();
	} else if (strcmp(mode, "dlopen") == 0 && argc > 3) {
		plugin(argv[3]);
	} else if (strcmp(mode, "errno") == 0) {
		errno = 0;
		long ret = lib_mkdir(path("errno"));
		printf("errno-denied %ld %s\n", ret, strerrorname_np(errno));
		errno = 0;
		lib_getpid();
		printf("errno-allowed %s\n", errno == 0 ? "0" : strerrorname_np(errno));
	} else if (strcmp(mode, "vdso") == 0) {
		struct timespec ts;
		report("lib-cputime", lib_cputime());
		report("main-cputime", clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts));
	} else if (strcmp(mode, "mkdir") == 0) {
		report("main-mkdir", mkdir(path("main"), 0700));
	} else if (strcmp(mode, "loop") == 0 && argc > 3) {
		loop(atol(argv[3]), lib_getpid);
	} else if (strcmp(mode, "indirect") == 0 && argc > 3) {
		loop(atol(argv[3]), lib_getpid_indirect);
	} else if (strcmp(mode, "wait") == 0) {
		char c;
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 1;
		report("lib-fopen", lib_fopen(path("file")));
		from_libs("after");
	} else if (strcmp(mode, "cancel") == 0) {
		cancel("cancel-pending", 1);
		cancel("cancel-blocked", 0);
	} else if (strcmp(mode, "exec") == 0 && argc > 3) {
		execv(argv[3], argv + 3);
		report("exec", -1);
	} else {
		return 2;
	}
	return 0;
}
