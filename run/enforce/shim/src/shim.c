/*
 * syscell-shim: the process syscell run starts a command through under a
 * whole-process policy (package enforce, whose doc.go says what the shim
 * does and why). This is the shim's own binary, which Run prefers next to
 * syscell: a C program starts in a fraction of the time the Go runtime
 * takes, and its execve(2) has no other threads to end. The Go shim
 * (shim.go) is the same, for a binary with no such file next to it; both
 * read the request as request.go encodes it and speak the same protocol.
 *
 * It needs no C library: it is built static and freestanding with the
 * audit library's runtime (audit/rt.h) and starts at start.S. A C
 * library's start-up asks the CPU what it is some thirty times, and on a
 * virtual machine each CPUID instruction traps to the hypervisor: on the
 * machine syscell is measured on, a third of a millisecond of every run.
 */
#include <asm/prctl.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
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

#include "rt.h"

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
	char *s = malloc((size_t)n + 1);
	if (s == NULL)
		fail("decode request: out of memory");
	memcpy(s, p, n);
	s[n] = 0;
	if (strlen(s) != n)
		fail("shim: decode request: a string holds a NUL byte");
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

/* descriptor reads a name of /proc/self/fd, or -1 for another. */
static int descriptor(const char *name)
{
	int fd = 0;
	for (; *name >= '0' && *name <= '9'; name++)
		fd = fd * 10 + (*name - '0');
	return *name == 0 ? fd : -1;
}

/* close_on_exec marks every descriptor but the standard streams
   close-on-exec: the socket, which os/exec hands over without the flag,
   and whatever the supervisor inherited without it from its own parent. */
static void close_on_exec(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	/* A kernel older than 5.11: each open descriptor, as listed. */
	long dir = rt_call(SYS_openat, AT_FDCWD, (long)"/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (dir < 0)
		fail("list open descriptors: %s", errstr(-dir));
	char buf[4096] __attribute__((aligned(8)));
	long n;
	while ((n = rt_call(SYS_getdents64, dir, (long)buf, sizeof buf, 0, 0, 0)) > 0) {
		for (long at = 0; at < n;) {
			const struct dirent64 *e = (const struct dirent64 *)(buf + at);
			at += e->d_reclen;
			int fd = descriptor(e->d_name);
			if (fd > 2 && fd != dir)
				fcntl(fd, F_SETFD, FD_CLOEXEC);
		}
	}
	if (n < 0)
		fail("list open descriptors: %s", errstr(-n));
	close(dir);
}

static void send_listener(int fd)
{
	char byte = LISTENER;
	if (rt_send_fd(FD, &byte, 1, fd) != 1)
		fail("send the listener: %s", errstr(errno));
}

/* voice sends the listener once there is one, then waits for execve to
   fail, reports why, and ends the process. If execve succeeds, the kernel
   ends this thread first. */
static int voice(void *arg)
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
		syscall(SYS_nanosleep, &pause, NULL);
	}
	fail("execute %s: %s", r->path, errstr(err));
}

/* named says whether the environment has a variable starting so. */
static bool named(char **envp, const char *prefix)
{
	for (; *envp != NULL; envp++) {
		if (strncmp(*envp, prefix, strlen(prefix)) == 0)
			return true;
	}
	return false;
}

/* The voice's stack: it sends a message and formats another. */
static char voice_stack[64 << 10] __attribute__((aligned(16)));

static int shim(char **envp)
{
	if (!named(envp, ENV "=")) {
		static const char usage[] = "syscell-shim: syscell run starts this program; it is not run by hand\n";
		write(2, usage, sizeof usage - 1);
		return 2;
	}
	size_t len;
	char *buf = read_all(FD, &len);
	struct request r = decode(buf, len);
	close_on_exec();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fail("filter: set no_new_privs: %s", errstr(errno));
	/* The voice shares this thread's everything, its thread pointer
	   included: neither reads errno once both run. */
	if (clone(voice, voice_stack + sizeof voice_stack, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, &r) < 0)
		fail("start the shim's voice: %s", errstr(errno));
	long sent = rt_call(SYS_sendto, FD, (long)(char[]){READY}, 1, MSG_NOSIGNAL, 0, 0);
	if (sent < 0)
		fail("write to the supervisor: %s", errstr(-sent));
	/* From the install on, this thread makes no system call but execve:
	   the policy may deny any other. */
	unsigned flags = r.listen ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	long fd = rt_call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, (long)&r.prog, 0, 0, 0);
	if (fd < 0)
		fail("filter: install: %s", errstr(-fd));
	__atomic_store_n(&listener, (int)fd, __ATOMIC_RELEASE);
	long err = rt_call(SYS_execve, (long)r.path, (long)r.argv, (long)r.envp, 0, 0, 0);
	__atomic_store_n(&exec_errno, (int)-err, __ATOMIC_RELEASE);
	for (;;)
		;
}

/* The thread pointer's block. The runtime's errno is thread-local, and a
   static program finds its thread-local data right below the thread
   pointer, whose first word points to itself; nothing else sets it up
   without a C library. */
static struct {
	char data[256];
	void *self;
} tcb __attribute__((aligned(64)));

/* thread_pointer copies the program's thread-local data (PT_TLS, as the
   auxiliary vector after envp finds the program headers) below the
   thread pointer, and points the thread pointer at it. */
static void thread_pointer(char **envp)
{
	while (*envp != NULL)
		envp++;
	const Elf64_Phdr *ph = NULL;
	unsigned long n = 0;
	for (const Elf64_auxv_t *a = (const Elf64_auxv_t *)(envp + 1); a->a_type != AT_NULL; a++) {
		if (a->a_type == AT_PHDR)
			ph = (const Elf64_Phdr *)a->a_un.a_val;
		else if (a->a_type == AT_PHNUM)
			n = a->a_un.a_val;
	}
	for (unsigned long i = 0; ph != NULL && i < n; i++) {
		if (ph[i].p_type != PT_TLS)
			continue;
		/* The linker puts the block's end at the thread pointer,
		   rounded up to the block's alignment. */
		size_t size = (ph[i].p_memsz + ph[i].p_align - 1) & ~(ph[i].p_align - 1);
		if (size > sizeof tcb.data || ph[i].p_align > 64) {
			static const char big[] = "syscell-shim: its thread-local data outgrew its block\n";
			rt_call(SYS_write, 2, (long)big, sizeof big - 1, 0, 0, 0);
			rt_call(SYS_exit_group, FAILED, 0, 0, 0, 0, 0);
		}
		memcpy(tcb.data + sizeof tcb.data - size, (const void *)ph[i].p_vaddr, ph[i].p_filesz);
	}
	tcb.self = &tcb.self;
	rt_call(SYS_arch_prctl, ARCH_SET_FS, (long)&tcb.self, 0, 0, 0, 0);
}

/* start is where start.S enters, with the stack the kernel laid out:
   argc, argv, NULL, the environment, NULL, the auxiliary vector. */
void __attribute__((noreturn, used)) start(long *sp)
{
	char **envp = (char **)(sp + 1 + sp[0] + 1);
	thread_pointer(envp);
	_exit(shim(envp));
}
