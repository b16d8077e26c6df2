// Test cases for the heap guard, one per run: `cases [probe] NAME`. Run
// with the guard preloaded; heapguard_test.go checks how each run ends (its
// signal and its report). Objects are made by alloc_site and freed by
// free_site so the reports' traces can be checked by name (they are global,
// and the program is linked with -rdynamic, so that dladdr names them).
//
// Every use of freed memory goes through use_freed. With `probe`, it first
// looks at what the use could reach: it allocates objects of many sizes
// (kept, so that they cannot reuse each other's memory) and reports
// whether one of them overlaps the freed byte ("reused": a dangling
// pointer reaches another object), else whether the byte still reads
// ("no reuse": it reads only memory that no object will ever be given)
// or faults ("fault"), and exits with PROBE_* accordingly.
//
// The cases misuse the heap on purpose: the compiler's warnings about it
// are expected here.
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PROBE_NO_REUSE = 10, PROBE_REUSED = 11, PROBE_FAULT = 12 };

static volatile char sink;
static int probing;

__attribute__((noinline)) char *alloc_site(size_t n)
{
	char *p = malloc(n);
	memset(p, 'a', n);
	return p;
}

__attribute__((noinline)) void free_site(void *p)
{
	free(p);
}

// readable tells whether p can be read, without faulting.
static int readable(const void *p)
{
	char c;
	struct iovec local = {&c, 1}, remote = {(void *)p, 1};
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

static void verdict(const char *what, int code)
{
	fprintf(stderr, "probe: %s\n", what);
	_exit(code);
}

static void probe(const char *p)
{
	static const size_t sizes[] = {8, 16, 24, 32, 40, 48, 64, 100, 128, 150, 200, 256, 300, 500,
				       1000, 2000, 4000, 5000, 8000, 16000, 40000, 100000};
	size_t n = sizeof sizes / sizeof sizes[0];
	for (size_t i = 0; i < 200 * n; i++) {
		char *q = malloc(sizes[i % n]);
		if (q <= p && p < q + sizes[i % n])
			verdict("reused", PROBE_REUSED);
	}
	if (!readable(p))
		verdict("fault", PROBE_FAULT);
	verdict("no reuse", PROBE_NO_REUSE);
}

// use_freed reads (or writes) the byte at p, which was freed.
__attribute__((noinline)) void use_freed(char *p, int write)
{
	if (probing)
		probe(p);
	if (write)
		*(volatile char *)p = 1;
	else
		sink = *(volatile char *)p;
}

int uaf_read(void)
{
	char *p = alloc_site(32);
	free_site(p);
	use_freed(p, 0);
	return 0;
}

int uaf_write(void)
{
	char *p = alloc_site(100);
	free_site(p);
	use_freed(p, 1);
	return 0;
}

int uaf_interior(void)
{
	char *p = alloc_site(200);
	char *inside = p + 150;
	free_site(p);
	use_freed(inside, 0);
	return 0;
}

int uaf_large(void)
{
	char *p = alloc_site(100000);
	free_site(p);
	use_freed(p + 70000, 0);
	return 0;
}

void *use_in_thread(void *p)
{
	use_freed(p, 0);
	return NULL;
}

int uaf_thread(void)
{
	char *p = alloc_site(48);
	free_site(p);
	pthread_t t;
	pthread_create(&t, NULL, use_in_thread, p);
	pthread_join(t, NULL);
	return 0;
}

void *free_in_thread(void *p)
{
	free_site(p);
	return NULL;
}

int uaf_freed_by_other_thread(void)
{
	char *p = alloc_site(64);
	pthread_t t;
	pthread_create(&t, NULL, free_in_thread, p);
	pthread_join(t, NULL);
	use_freed(p, 0);
	return 0;
}

int uaf_realloc(void)
{
	char *p = alloc_site(16);
	char *q = realloc(p, 5000);
	if (q == p)
		return 4;	// grown in place: nothing was freed
	if (q[15] != 'a')
		return 3;
	use_freed(p, 0);
	return 0;
}

int uaf_memalign(void)
{
	void *a, *b = aligned_alloc(4096, 4096), *c = memalign(64, 40);
	if (posix_memalign(&a, 256, 300) || (uintptr_t)a % 256 || (uintptr_t)b % 4096 || (uintptr_t)c % 64)
		return 3;
	free(a);
	free(b);
	free_site(c);
	use_freed(c, 0);
	return 0;
}

// fork_held forks a child that goes on only once the parent writes to
// *go: the child's pid in the parent, 0 in the child, -1 on failure.
static pid_t fork_held(int *go)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t child = fork();
	if (child == 0) {
		char c;
		if (read(p[0], &c, 1) != 1)
			_exit(4);
	}
	*go = p[1];
	return child;
}

// The child must fault on the parent's freed object and must not see the
// parent's writes made after fork.
int uaf_fork(void)
{
	char *keep = alloc_site(32), *gone = alloc_site(32);
	free_site(gone);
	int go;
	pid_t child = fork_held(&go);
	if (child < 0)
		return 3;
	if (child == 0) {
		if (keep[0] != 'a')
			_exit(4);
		char *fresh = alloc_site(32);
		free_site(fresh);
		use_freed(gone, 0);
		_exit(5);
	}
	keep[0] = 'P';
	if (write(go, "x", 1) != 1)
		return 3;
	int status;
	waitpid(child, &status, 0);
	if (probing && WIFEXITED(status) && WEXITSTATUS(status) >= PROBE_NO_REUSE)
		_exit(WEXITSTATUS(status));
	if (!WIFSIGNALED(status) || WTERMSIG(status) != 11)
		return 6;
	use_freed(gone, 0);
	return 0;
}

int double_free(void)
{
	char *p = alloc_site(24);
	free_site(p);
	free(p);
	return 0;
}

int invalid_free_interior(void)
{
	char *p = alloc_site(64);
	free(p + 16);
	return 0;
}

int invalid_free_stack(void)
{
	char local[16];
	free(local + sink);
	return 0;
}

void *churn(void *arg)
{
	long n = (long)arg;
	void *held[64] = {0};
	for (long i = 0; i < n; i++) {
		size_t k = (size_t)i % 64;
		free(held[k]);
		held[k] = malloc(16 + (size_t)(i * 7) % 3000);
	}
	for (int k = 0; k < 64; k++)
		free(held[k]);
	return NULL;
}

// 800,000 allocations on two threads, then a use-after-free must still
// fault: the heap recycles frames and windows, never an alias.
int stress(void)
{
	long n = 400000;
	pthread_t t;
	pthread_create(&t, NULL, churn, (void *)n);
	churn((void *)n);
	pthread_join(t, NULL);
	char *p = alloc_site(16);
	free_site(p);
	use_freed(p, 0);
	return 0;
}

void churn_16(long n)
{
	for (long i = 0; i < n; i++) {
		// volatile: the compiler may drop a malloc whose result is unused.
		void *volatile p = malloc(16);
		free(p);
	}
}

// Long after the free, the object's frames are retired and its chunk
// released (page tables and records): a use still faults and is reported.
int uaf_released(void)
{
	churn_16(300000);
	char *p = alloc_site(16);
	free_site(p);
	churn_16(600000);
	use_freed(p, 0);
	return 0;
}

// A child forked after chunks were released still faults on an object in
// one (its windows are new mappings, released again); the parent ends as
// the child did.
int uaf_fork_released(void)
{
	churn_16(300000);
	char *old = alloc_site(16);
	free_site(old);
	churn_16(600000);
	pid_t child = fork();
	if (child == 0) {
		free_site(alloc_site(16));
		use_freed(old, 0);
		_exit(5);
	}
	int status;
	waitpid(child, &status, 0);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
	}
	_exit(WEXITSTATUS(status));
}

// The same for a large object: its block of the large region is released
// once every object in it is dead and the region has moved past it.
int uaf_large_released(void)
{
	char *p = alloc_site(8000);
	free_site(p);
	for (int i = 0; i < 2000; i++) {
		void *volatile q = malloc(8000);
		free(q);
	}
	use_freed(p, 0);
	return 0;
}

// Freed memory that later frees push out of the deferred batch (4 MB of
// them, past any batch) faults, and its report names both sites; in strict
// mode it faulted from the start (the object kept alive holds its block).
int uaf_batched(void)
{
	char *volatile keep = malloc(3000);
	char *p = alloc_site(4000);
	free_site(p);
	for (int i = 0; i < 200; i++) {
		void *volatile q = malloc(20000);
		free(q);
	}
	use_freed(p + 100, 0);
	free(keep);
	return 0;
}

// heir makes and frees up to n objects of 4,000 bytes, each filled with
// 'a' as alloc_site fills them, until one holds a freed object's bytes
// before it is written: that one is returned, kept.
static char *heir(int n)
{
	for (int i = 0; i < n; i++) {
		// volatile: a store just before free is otherwise dropped.
		char *volatile q = malloc(4000);
		if (q[100] == 'a' && q[3999] == 'a')
			return q;
		memset(q, 'a', 4000);
		free(q);
	}
	return NULL;
}

// Deferred mode moves a dead page's memory, bytes and all, to a span not
// yet handed out (src/recycle.c): a new object finds a freed object's
// bytes (no fresh page would: the kernel zeroes those), and the freed
// object's address faults.
int uaf_recycled(void)
{
	char *p = alloc_site(4000);
	free_site(p);
	if (heir(64))
		fprintf(stderr, "uaf_recycled: a new object holds a freed object's bytes\n");
	use_freed(p + 100, 0);
	return 0;
}

// A forked child moves its own dead pages (through a userfaultfd of its
// own: the kernel refuses moves through its parent's, and of pages another
// process may map), and the parent's objects, its own pages since it wrote
// them, keep their bytes (else exit status 6).
int recycle_fork(void)
{
	enum { N = 64 };
	char *objs[N];
	free(heir(N));
	for (int i = 0; i < N; i++)
		objs[i] = alloc_site(4000);
	int go;
	pid_t child = fork_held(&go);
	if (child < 0)
		return 3;
	if (child == 0) {
		for (int i = 0; i < N; i++)
			free(objs[i]);
		if (heir(4 * N))
			fprintf(stderr, "recycle_fork: a new object of the child holds a freed object's bytes\n");
		_exit(0);
	}
	for (int i = 0; i < N; i++)
		memset(objs[i], 'P', 4000);
	int status;
	if (write(go, "x", 1) != 1 || waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return 5;
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 4000; k++)
			if (objs[i][k] != 'P') {
				fprintf(stderr, "recycle_fork: object %d lost its bytes\n", i);
				return 6;
			}
	return WEXITSTATUS(status);
}

// A large object is revoked when freed, in either mode.
int uaf_large_eager(void)
{
	char *p = alloc_site(200000);
	free_site(p);
	use_freed(p + 150000, 1);
	return 0;
}

// One allocation site reached through two callers: two traces that differ
// past their first frame. The object via_b made is used after it is freed:
// the report names via_b, not via_a, however the guard remembers recent
// traces. 200,000 bytes: revoked at its free in both modes.
__attribute__((noinline)) char *via_a(size_t n)
{
	char *p = alloc_site(n);
	sink = p[1];
	return p;
}

__attribute__((noinline)) char *via_b(size_t n)
{
	char *p = alloc_site(n);
	sink = p[2];
	return p;
}

int uaf_two_callers(void)
{
	for (int i = 0; i < 3; i++) {
		free(via_a(200000));
		free(via_b(200000));
	}
	char *a = via_a(200000), *b = via_b(200000);
	free_site(b);
	use_freed(b + 150000, 0);
	free(a);
	return 0;
}

// More traces than a thread's memo of recent ones holds (trace.c: 1,024
// entries, each naming its trace by the sum of its frames): 40 callers of
// 40 callers of alloc_site, 1,600 traces, each seen three times, taking
// each other's entries. The object outer_37 made through inner_14 is used
// after it is freed: the report names both. 200,000 bytes, revoked at its
// free in both modes.
#define TEN(X, t) X(t##0) X(t##1) X(t##2) X(t##3) X(t##4) X(t##5) X(t##6) X(t##7) X(t##8) X(t##9)
#define FORTY(X) TEN(X, 1) TEN(X, 2) TEN(X, 3) TEN(X, 4)
#define INNER(n)                                                  \
	__attribute__((noinline)) char *inner_##n(size_t size)   \
	{                                                         \
		char *p = alloc_site(size);                        \
		sink = p[3];                                       \
		return p;                                          \
	}
FORTY(INNER)
#define INNER_REF(n) inner_##n,
static char *(*const inner[])(size_t) = {FORTY(INNER_REF)};
#define OUTER(n)                                                  \
	__attribute__((noinline)) char *outer_##n(int i, size_t size) \
	{                                                         \
		char *p = inner[i](size);                          \
		sink = p[4];                                       \
		return p;                                          \
	}
FORTY(OUTER)
#define OUTER_REF(n) outer_##n,
static char *(*const outer[])(int, size_t) = {FORTY(OUTER_REF)};

int uaf_many_sites(void)
{
	for (int round = 0; round < 3; round++)
		for (int o = 0; o < 40; o++)
			for (int i = 0; i < 40; i++)
				free(outer[o](i, 200000));
	char *p = outer_37(4, 200000);	// inner[4]: inner_14
	free_site(p);
	use_freed(p + 150000, 0);
	return 0;
}

// A correct program: no report, exit 0.
int clean(void)
{
	char *s = calloc(100, 1);
	for (int i = 0; i < 100; i++)
		if (s[i])
			return 3;
	char *r = realloc(s, 10);
	r = reallocarray(r, 300, 10);
	if (!r || malloc_usable_size(r) < 3000)
		return 4;
	free(r);
	void *big = calloc(1, 10 << 20);
	if (((char *)big)[5 << 20])
		return 5;
	free(big);
	free(malloc(0));
	if (reallocarray(NULL, SIZE_MAX / 2, 4) || calloc(SIZE_MAX / 2, 4))
		return 6;
	free(valloc(10));
	free(pvalloc(10));
	return system("exit 0") == 0 ? 0 : 7;
}

// realloc_room: objects of one site that realloc grows from 16 to 40
// bytes. Exits 0 if at least 48 of 64 grew in place (strict mode gives the
// site's objects the room once it has seen some grow), else 1.
int realloc_room(void)
{
	char *grown[64];
	int in_place = 0;
	for (int i = 0; i < 64; i++) {
		char *p = alloc_site(16);
		grown[i] = realloc(p, 40);
		in_place += grown[i] == p;
	}
	for (int i = 0; i < 64; i++)
		free(grown[i]);
	printf("%d of 64 grew in place\n", in_place);
	return in_place >= 48 ? 0 : 1;
}

// Memory allocated before any constructor runs is guarded too.
char *early;
void before_constructors(int argc, char **argv, char **envp)
{
	(void)argc, (void)argv, (void)envp;
	early = alloc_site(40);
	free_site(early);
}
__attribute__((section(".preinit_array"), used)) static void (*preinit)(int, char **, char **) = before_constructors;

int uaf_before_constructors(void)
{
	use_freed(early, 0);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(void);
} cases[] = {
	{"uaf_read", uaf_read},
	{"uaf_write", uaf_write},
	{"uaf_interior", uaf_interior},
	{"uaf_large", uaf_large},
	{"uaf_thread", uaf_thread},
	{"uaf_freed_by_other_thread", uaf_freed_by_other_thread},
	{"uaf_realloc", uaf_realloc},
	{"uaf_memalign", uaf_memalign},
	{"uaf_fork", uaf_fork},
	{"uaf_before_constructors", uaf_before_constructors},
	{"double_free", double_free},
	{"invalid_free_interior", invalid_free_interior},
	{"invalid_free_stack", invalid_free_stack},
	{"stress", stress},
	{"uaf_released", uaf_released},
	{"uaf_large_released", uaf_large_released},
	{"uaf_fork_released", uaf_fork_released},
	{"uaf_batched", uaf_batched},
	{"uaf_large_eager", uaf_large_eager},
	{"uaf_recycled", uaf_recycled},
	{"recycle_fork", recycle_fork},
	{"uaf_two_callers", uaf_two_callers},
	{"uaf_many_sites", uaf_many_sites},
	{"clean", clean},
	{"realloc_room", realloc_room},
};

int main(int argc, char **argv)
{
	probing = argc == 3 && strcmp(argv[1], "probe") == 0;
	for (size_t i = 0; argc == 2 + probing && i < sizeof cases / sizeof cases[0]; i++)
		if (strcmp(argv[1 + probing], cases[i].name) == 0)
			return cases[i].run();
	fprintf(stderr, "usage: cases [probe] NAME\n");
	return 2;
}
