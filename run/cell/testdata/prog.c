// prog makes system calls from chosen places and prints, one line each,
// what they returned: "WHAT RESULT ERRNO" (ERRNO is "-" for success).
// argv[1] chooses the mode, argv[2] is a scratch directory:
//
//   lib      libgetpid.so calls getpid; libmk.so calls mkdir(DIR/lib)
//   main     prog calls getpid by its wrapper, by syscall(), and inline
//   stdio    libmk.so and prog fopen DIR/file: openat from libc's code,
//            called through their bindings (libmk.so's by a tail call too);
//            libmk.so opendir(DIR), whose openat libc's hidden
//            __open_nocancel makes, and __open_2(DIR/file), which jumps
//            to open
//   stdio-pointer  the same through pointers to libc's fopen, which pass
//            no binding
//   stdio-longjmp  prog flushes a stream whose write function longjmps
//            out of fflush, then libmk.so opens DIR/file through a
//            pointer, in the slot fflush's return address took
//   ctor     reports what libmk.so's constructor's mkdir(DIR/ctor) did
//   loader   reports the getpid and the failed mkdir libgetpid.so's
//            calloc made when the loader called it, before any constructor
//   thread   a thread does what lib does, mkdir(DIR/thread)
//   stdio-threads  four threads do what stdio and stdio-pointer do, 50
//            times each, and count the opens that failed (libmk.so's) and
//            worked (prog's)
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
//   vfork    libmk.so runs argv[3] (with the arguments that follow) in a
//            child made by vfork, then by posix_spawn: "vfork-status N"
//            and "spawn-status N", each child's wait status
//   cancel   cancels a thread in libgetpid.so's pause: once with the
//            request pending before the call, once while it waits (the
//            request comes from libgetpid.so, which may call getpid)
//   abi      mkdir through the i386 ABI (int $0x80) and the x32 ABI (the
//            x32 bit in the number), by libmk.so (DIR/int80, DIR/x32) and
//            by prog (DIR/main-int80, DIR/main-x32), each in a child; for
//            each child "WHAT killed SIGNAL" or "WHAT exited STATUS", and
//            WHAT-call with the call's result if it returned
//   jit      libmk.so calls mkdir(DIR/jit) from code it wrote into
//            anonymous memory
//   window   prog finds the stub window (the mapping where libgetpid.so's
//            getpid goes: window-mapping START-END, window-stub ADDR),
//            tries to make it writable, map over it, unmap it and discard
//            its pages, then calls lib_getpid; and tries to make libc's and
//            the loader's code writable
//
// Built with gcc -O2 -fomit-frame-pointer, as Debian builds its programs.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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
int lib_opendir(const char *path);
int lib_open_2(const char *path);
FILE *lib_fopen_tail(const char *path);
int lib_fopen_pointer(const char *path);
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

// Each thread of the stdio-threads mode opens DIR/file through stdio
// this many times from libmk.so and from prog, through their bindings
// (the kernel decides each openat) and through pointers (the supervisor
// does, several at once).
#define STDIO_ROUNDS 50
#define STDIO_THREADS 4

// main_fopen_pointer is libc's own fopen, as libmk.so's fopen_pointer.
static FILE *(*volatile main_fopen_pointer)(const char *, const char *) = fopen;

// jump_write is the write function of stdio-longjmp's stream: it leaves
// the fflush that called it, through its gate, by a longjmp.
static jmp_buf stdio_jump;
static ssize_t jump_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	(void)buf;
	(void)n;
	longjmp(stdio_jump, 1);
}

// main_fopen opens DIR/file through prog's binding of fopen, or through
// the pointer.
static int main_fopen(bool pointer)
{
	FILE *f = pointer ? main_fopen_pointer(path("file"), "r") : fopen(path("file"), "r");
	if (f == NULL)
		return -1;
	fclose(f);
	return 0;
}

struct stdio_counts {
	int denied, allowed, pointer_denied, pointer_allowed;
};
static struct stdio_counts stdio_counts[STDIO_THREADS];

static void *stdio_main(void *arg)
{
	struct stdio_counts *c = &stdio_counts[(long)arg];
	for (int r = 0; r < STDIO_ROUNDS; r++) {
		c->denied += lib_fopen(path("file")) != 0;
		c->allowed += main_fopen(false) == 0;
		c->pointer_denied += lib_fopen_pointer(path("file")) != 0;
		c->pointer_allowed += main_fopen(true) == 0;
	}
	return NULL;
}

static void stdio_threads(void)
{
	pthread_t t[STDIO_THREADS];
	struct stdio_counts sum = {0};
	for (long i = 0; i < STDIO_THREADS; i++)
		if (pthread_create(&t[i], NULL, stdio_main, (void *)i) != 0)
			exit(1);
	for (int i = 0; i < STDIO_THREADS; i++) {
		pthread_join(t[i], NULL);
		sum.denied += stdio_counts[i].denied;
		sum.allowed += stdio_counts[i].allowed;
		sum.pointer_denied += stdio_counts[i].pointer_denied;
		sum.pointer_allowed += stdio_counts[i].pointer_allowed;
	}
	printf("threads-lib-fopen-denied %d -\nthreads-main-fopen-allowed %d -\n", sum.denied, sum.allowed);
	printf("threads-lib-pointer-denied %d -\nthreads-main-pointer-allowed %d -\n", sum.pointer_denied,
	       sum.pointer_allowed);
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

// The modes abi, jit and window take libmk.so's and libgetpid.so's
// functions from dlsym and make prog's own calls by sys: prog imports no
// symbol more for them. Each import grows the headers in the pages
// before prog's code, which in the position-dependent build must start
// at 0x401000, where other's does (TestExecCollision).

// lib_fn returns the function named name, or exits.
static void *lib_fn(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);
	if (fn == NULL) {
		printf("dlsym %s\n", dlerror());
		exit(1);
	}
	return fn;
}

// sys makes a system call from prog's own code, as inline_getpid does,
// and returns the kernel's result as it is.
static long sys(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "+a"(nr)
			 : "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return nr;
}

// main_int80_mkdir and main_x32_mkdir are libmk.so's lib_int80_mkdir
// and lib_x32_mkdir in prog's own code: mkdir(path, 0700) by int $0x80
// with i386's number of mkdir, the path copied below 4 GiB for 32-bit
// pointers, and by syscall with x32's.
static long main_int80_mkdir(const char *path)
{
	long low = sys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low < 0 || snprintf((char *)low, 4096, "%s", path) >= 4096) {
		printf("main-int80 no path below 4 GiB: %ld\n", low);
		exit(1);
	}
	long ret = 39;
	__asm__ volatile("int $0x80"
			 : "+a"(ret)
			 : "b"((uint32_t)low), "c"(0700)
			 : "r8", "r9", "r10", "r11", "memory");
	return ret;
}

static long main_x32_mkdir(const char *path)
{
	return sys(83 | 0x40000000, (long)path, 0700, 0, 0, 0, 0);
}

// in_child makes call(DIR/name) in a child, which reports its result as
// WHAT-call if it returns, and reports how the child ended. The child
// dumps no core: a kill-process action ends it as SIGSYS would.
static void in_child(const char *what, long (*call)(const char *), const char *name)
{
	pid_t child = fork();
	if (child == 0) {
		char line[64];
		struct rlimit none = {0, 0};
		sys(SYS_prlimit64, 0, RLIMIT_CORE, (long)&none, 0, 0, 0);
		snprintf(line, sizeof line, "%s-call", what);
		raw(line, call(path(name)));
		_exit(0);
	}
	int status;
	if (child < 0 || waitpid(child, &status, 0) != child) {
		printf("wait %s failed\n", what);
		exit(1);
	}
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		printf("%s killed SIGSYS\n", what);
	else if (WIFSIGNALED(status))
		printf("%s killed %d\n", what, WTERMSIG(status));
	else
		printf("%s exited %d\n", what, WEXITSTATUS(status));
	fflush(stdout);
}

// abi has libmk.so and prog call mkdir through the i386 and x32 ABIs.
static void abi(void)
{
	in_child("lib-int80", lib_fn("lib_int80_mkdir"), "int80");
	in_child("lib-x32", lib_fn("lib_x32_mkdir"), "x32");
	in_child("main-int80", main_int80_mkdir, "main-int80");
	in_child("main-x32", main_x32_mkdir, "main-x32");
}

// A mapping of /proc/self/maps: its range, perms and path ("" for
// anonymous memory).
struct mapping {
	unsigned long start, end;
	char perms[5];
	const char *path;
};

// maps holds /proc/self/maps as read once, its lines cut at their ends.
static char maps[1 << 20];

// read_maps reads /proc/self/maps into maps, or exits.
static void read_maps(void)
{
	long fd = sys(SYS_openat, AT_FDCWD, (long)"/proc/self/maps", O_RDONLY, 0, 0, 0);
	size_t n = 0;
	long got = 1;
	while (fd >= 0 && got > 0 && n < sizeof maps - 1) {
		got = read(fd, maps + n, sizeof maps - 1 - n);
		n += got > 0 ? got : 0;
	}
	sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (fd < 0 || got < 0 || n == sizeof maps - 1) {
		printf("read /proc/self/maps failed: %ld %ld\n", fd, got);
		exit(1);
	}
	maps[n] = 0;
}

// parse_mapping parses the line at *p of maps, moves *p to the next one,
// and returns 0, or -1 at the end.
static int parse_mapping(char **p, struct mapping *m)
{
	char *line = *p, *q;
	if (*line == 0)
		return -1;
	for (q = line; *q != '\n' && *q != 0; q++)
		;
	*p = *q ? q + 1 : q;
	*q = 0;
	// START-END PERMS OFFSET DEV INODE PATH; [vsyscall]'s range does
	// not fit a long, and strtol stops it at LONG_MAX, which is no
	// matter here.
	m->start = strtol(line, &q, 16);
	m->end = strtol(q + 1, &q, 16);
	snprintf(m->perms, sizeof m->perms, "%s", q + 1);
	for (int field = 0; field < 4 && *q != 0; field++) {
		for (q++; *q != ' ' && *q != 0; q++)
			;
	}
	while (*q == ' ')
		q++;
	m->path = q;
	return 0;
}

// find_mapping finds, in maps as read_maps read it, the mapping that
// holds addr (file NULL), or the first with perms whose file name is
// file; it returns 0, or -1 with errno ENOENT.
static int find_mapping(uintptr_t addr, const char *file, const char *perms, struct mapping *m)
{
	read_maps();
	for (char *p = maps; parse_mapping(&p, m) == 0;) {
		const char *base = m->path;
		for (const char *c = m->path; *c != 0; c++)
			if (*c == '/')
				base = c + 1;
		if (file == NULL ? m->start <= addr && addr < m->end
				 : strcmp(base, file) == 0 && strcmp(m->perms, perms) == 0)
			return 0;
	}
	errno = ENOENT;
	return -1;
}

// window tries to undo the stub window's protection, which mseal makes
// impossible even for code allowed to call mprotect, mmap, munmap and
// madvise (prog's); libgetpid.so's stub must work afterwards. The
// window is the mapping that holds libgetpid.so's binding of getpid: it
// must be anonymous read+exec memory. The runtime's code is sealed too.
static void window(void)
{
	uintptr_t stub = (uintptr_t)((void *(*)(void))lib_fn("lib_getpid_stub"))();
	struct mapping m;
	int found = find_mapping(stub, NULL, NULL, &m);
	if (found == 0 && (strcmp(m.perms, "r-xp") != 0 || m.path[0] != 0)) {
		printf("window-found %s %s\n", m.perms, m.path);
		exit(1);
	}
	report("window-found", found);
	if (found != 0)
		exit(1);
	printf("window-mapping %lx-%lx -\nwindow-stub %lx -\n", m.start, m.end, (unsigned long)stub);
	long w = m.start, size = m.end - m.start;
	raw("window-mprotect", sys(SYS_mprotect, w, size, PROT_READ | PROT_WRITE, 0, 0, 0));
	raw("window-mmap", sys(SYS_mmap, w, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	raw("window-munmap", sys(SYS_munmap, w, size, 0, 0, 0, 0));
	raw("window-madvise", sys(SYS_madvise, w, size, MADV_DONTNEED, 0, 0, 0));
	report("window-getpid", lib_getpid());
	const char *runtime[][2] = {{"libc", "libc.so.6"}, {"loader", "ld-linux-x86-64.so.2"}};
	for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++) {
		char what[64];
		snprintf(what, sizeof what, "%s-found", runtime[i][0]);
		found = find_mapping(0, runtime[i][1], "r-xp", &m);
		report(what, found);
		if (found != 0)
			exit(1);
		// Were it allowed, the next call into the runtime would fault.
		snprintf(what, sizeof what, "%s-mprotect", runtime[i][0]);
		raw(what, sys(SYS_mprotect, m.start, m.end - m.start, PROT_READ | PROT_WRITE, 0, 0, 0));
	}
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
		report("lib-fopen-tail", lib_fopen_tail(path("file")) ? 0 : -1);
		report("main-fopen", main_fopen(false));
		report("lib-opendir", lib_opendir(path("")));
		report("lib-open-2", lib_open_2(path("file")));
		// More arguments than registers: printf's gate passes the
		// ones on the stack on.
		printf("main-varargs %d %d %d %d %d %d %d %d %d %d %d %d %.1f %.1f -\n", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
		       11, 12, 0.5, 1.5);
	} else if (strcmp(mode, "stdio-longjmp") == 0) {
		// No call through a gate between the longjmp and libmk.so's
		// open: none drops fflush's mark before the open.
		char *file = path("file");
		FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){.write = jump_write});
		if (f != NULL && setjmp(stdio_jump) == 0) {
			fputs("x", f);
			fflush(f);
		}
		report("lib-fopen", lib_fopen_pointer(file));
	} else if (strcmp(mode, "stdio-pointer") == 0) {
		report("lib-fopen", lib_fopen_pointer(path("file")));
		report("main-fopen", main_fopen(true));
	} else if (strcmp(mode, "ctor") == 0) {
		errno = lib_ctor_errno;
		report("ctor-mkdir", lib_ctor_result);
	} else if (strcmp(mode, "loader") == 0) {
		printf("loader-getpid %ld -\n", lib_loader_getpid);
		printf("loader-mkdir -1 %s\n", strerrorname_np(*(int *)lib_fn("lib_loader_errno")));
	} else if (strcmp(mode, "stdio-threads") == 0) {
		stdio_threads();
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
	} else if (strcmp(mode, "abi") == 0) {
		abi();
	} else if (strcmp(mode, "jit") == 0) {
		raw("lib-jit-mkdir", ((long (*)(const char *))lib_fn("lib_jit_mkdir"))(path("jit")));
	} else if (strcmp(mode, "window") == 0) {
		window();
	} else if (strcmp(mode, "vfork") == 0 && argc > 3) {
		int (*run)(char *const[]) = (int (*)(char *const[]))lib_fn("lib_vfork_exec");
		printf("vfork-status %d -\n", run(argv + 3));
		fflush(stdout);
		run = (int (*)(char *const[]))lib_fn("lib_spawn");
		printf("spawn-status %d -\n", run(argv + 3));
	} else if (strcmp(mode, "exec") == 0 && argc > 3) {
		execv(argv[3], argv + 3);
		report("exec", -1);
	} else {
		return 2;
	}
	return 0;
}
