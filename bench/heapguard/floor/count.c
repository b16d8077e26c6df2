// count: an LD_PRELOAD library that counts a program's calls into the C
// allocator (the entry points heapguard replaces) and forwards each to
// glibc. At exit it appends one line to the file named by COUNT_OUT:
//
//   pid=P ppid=Q exe=NAME via=exit|exec frees=F free_null=.. malloc=..
//   calloc=.. realloc=.. realloc_moved=.. realloc_free=.. reallocarray=..
//   posix_memalign=.. aligned_alloc=.. memalign=.. valloc=.. pvalloc=..
//   malloc_usable_size=.. bytes=B threads=N max_thread_frees=.. exit_thread_frees=..
//   exit_thread_allocs=.. exit_thread_bytes=.. exit_thread_cpu=S proc_cpu=S alloc_s=S
//   exit_thread_alloc_s=S delay_s=S
//
// alloc_s is the time spent inside glibc's allocator functions by all the
// process's threads (rdtsc around each forwarded call, so it includes the
// timing's own cost: an overestimate); exit_thread_* are those of the thread
// that called exit (or execve). A design that replaced glibc's allocator by
// one costing nothing would save at most alloc_s.
//
// frees = free(p) with p != NULL, plus realloc(p, 0) with p != NULL (which
// frees p): the calls after which a guard must have revoked an object.
// A realloc that moves the object (realloc_moved) is not included: a design
// could sometimes grow in place, so leaving it out keeps the count a lower
// bound.
//
// bytes = the sizes of new objects (malloc, calloc, the aligned
// allocations, a realloc that moves or starts from NULL), each rounded up
// to 16: the fresh memory an allocator that never reuses an address takes.
//
// With FREE_DELAY_NS=N in the environment, every free that counts in
// `frees` also busy-waits N ns on the freeing thread before it returns (and
// the allocator is not timed): glibc plus the CPU time of one revocation per
// free, measured end to end, overlaps between threads and processes
// included; delay_s is the time spent waiting. Frees before the library's
// constructor runs are not delayed.
//
// Counters are per thread (a slot of a static table, so that they outlive
// the thread) and summed when the process exits. A forked child starts from
// zero and appends its own line; execve appends the line of the image it
// replaces first. Processes that end by _exit or a signal append nothing:
// their frees are missed, which only lowers the count.
//
//   gcc -O2 -shared -fPIC -o count.so count.c -ldl
//   COUNT_OUT=/tmp/counts LD_PRELOAD=./count.so CMD
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern char *program_invocation_short_name;

enum {
	C_FREE,
	C_FREE_NULL,
	C_MALLOC,
	C_CALLOC,
	C_REALLOC,
	C_REALLOC_MOVED,
	C_REALLOC_FREE,
	C_REALLOCARRAY,
	C_POSIX_MEMALIGN,
	C_ALIGNED_ALLOC,
	C_MEMALIGN,
	C_VALLOC,
	C_PVALLOC,
	C_USABLE_SIZE,
	C_BYTES,  // bytes allocated, each object rounded up to 16
	C_CYCLES, // TSC cycles inside glibc's allocator (not printed as a count)
	C_DELAY,  // ns spent in revoke_delay (not printed as a count)
	NCOUNT
};

static const char *const names[NCOUNT] = {
	"frees", "free_null", "malloc", "calloc", "realloc", "realloc_moved",
	"realloc_free", "reallocarray", "posix_memalign", "aligned_alloc",
	"memalign", "valloc", "pvalloc", "malloc_usable_size", "bytes", "cycles", "delay",
};

// One slot per thread; threads past the table share the last slot
// (atomically). Only a slot's owner writes it.
#define SLOTS 8192
struct slot {
	_Atomic uint64_t n[NCOUNT];
} __attribute__((aligned(64)));

static struct slot slots[SLOTS];
static atomic_uint nslots;
static __thread struct slot *mine __attribute__((tls_model("initial-exec")));
static __thread int shared_slot __attribute__((tls_model("initial-exec")));
static long delay_ns;       // FREE_DELAY_NS
static int timing = 1;      // time glibc's allocator (off while delaying)
static uint64_t tsc_cost;   // least cycles between two rdtsc, taken off each timed call

static inline void add(int what, uint64_t n)
{
	struct slot *s = mine;
	if (__builtin_expect(s == NULL, 0)) {
		unsigned i = atomic_fetch_add_explicit(&nslots, 1, memory_order_relaxed);
		if (i >= SLOTS - 1) {
			i = SLOTS - 1;
			shared_slot = 1;
		}
		s = mine = &slots[i];
	}
	if (shared_slot)
		atomic_fetch_add_explicit(&s->n[what], n, memory_order_relaxed);
	else
		atomic_store_explicit(&s->n[what],
				      atomic_load_explicit(&s->n[what], memory_order_relaxed) + n,
				      memory_order_relaxed);
}

static inline void count(int what) { add(what, 1); }

// allocated counts the bytes of a new object: an allocator that never
// reuses an address takes that much fresh memory.
static inline void allocated(size_t n) { add(C_BYTES, n ? (n + 15) & ~(size_t)15 : 16); }

static inline void timed_add(uint64_t t0)
{
	uint64_t d = __rdtsc() - t0;
	add(C_CYCLES, d > tsc_cost ? d - tsc_cost : 0);
}

// TIMED(expr): evaluates a call into glibc's allocator, adding its cycles.
#define TIMED(expr)                                      \
	({                                               \
		__typeof__(expr) r_;                     \
		if (timing) {                            \
			uint64_t t0_ = __rdtsc();        \
			r_ = (expr);                     \
			timed_add(t0_);                  \
		} else {                                 \
			r_ = (expr);                     \
		}                                        \
		r_;                                      \
	})

static double now_s(void);

// The emulated revocation: delay_ns of this thread's time on average. Each
// thread keeps what it owes: a wait that overran (a clock read, an
// interrupt, preemption on this shared machine) shortens the next ones, so
// that the mean wait is delay_ns, not delay_ns plus the noise.
static __thread double owed __attribute__((tls_model("initial-exec")));

static void revoke_delay(void)
{
	double start = now_s(), t;
	owed += delay_ns * 1e-9;
	while ((t = now_s()) - start < owed)
		;
	owed -= t - start;
	add(C_DELAY, (uint64_t)((t - start) * 1e9));
}

void free(void *p)
{
	count(p ? C_FREE : C_FREE_NULL);
	if (timing) {
		uint64_t t0 = __rdtsc();
		__libc_free(p);
		timed_add(t0);
	} else {
		__libc_free(p);
	}
	if (delay_ns && p)
		revoke_delay();
}

void *malloc(size_t n)
{
	count(C_MALLOC);
	allocated(n);
	return TIMED(__libc_malloc(n));
}

void *calloc(size_t a, size_t b)
{
	count(C_CALLOC);
	allocated(a * b);
	return TIMED(__libc_calloc(a, b));
}

static void *do_realloc(void *p, size_t n)
{
	void *q = TIMED(__libc_realloc(p, n));
	if (p && n == 0) {
		count(C_REALLOC_FREE); // glibc frees p and returns NULL
		if (delay_ns)
			revoke_delay();
	} else if (p && q && q != p) {
		count(C_REALLOC_MOVED);
		allocated(n);
	} else if (!p && q) {
		allocated(n);
	}
	return q;
}

void *realloc(void *p, size_t n)
{
	count(C_REALLOC);
	return do_realloc(p, n);
}

// glibc's reallocarray calls its realloc internally, past this library.
void *reallocarray(void *p, size_t a, size_t b)
{
	size_t n;
	count(C_REALLOCARRAY);
	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(p, n);
}

// glibc's own definition of NAME: not dlsym(RTLD_NEXT), which may find
// another allocator's (redis-server links libjemalloc, whose
// malloc_usable_size and posix_memalign come before glibc's).
static void *libc_sym(const char *name)
{
	static void *libc;
	if (!libc)
		libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	void *f = libc ? dlsym(libc, name) : NULL;
	if (!f)
		abort();
	return f;
}

static int (*next_posix_memalign)(void **, size_t, size_t);

int posix_memalign(void **out, size_t align, size_t n)
{
	count(C_POSIX_MEMALIGN);
	if (!next_posix_memalign) // dlopen/dlsym may call calloc: ours forwards directly
		next_posix_memalign = (int (*)(void **, size_t, size_t))libc_sym("posix_memalign");
	allocated(n);
	return TIMED(next_posix_memalign(out, align, n));
}

void *aligned_alloc(size_t align, size_t n)
{
	count(C_ALIGNED_ALLOC);
	allocated(n);
	return TIMED(__libc_memalign(align, n)); // glibc 2.36: the same function
}

void *memalign(size_t align, size_t n)
{
	count(C_MEMALIGN);
	allocated(n);
	return TIMED(__libc_memalign(align, n));
}

void *valloc(size_t n)
{
	count(C_VALLOC);
	allocated(n);
	return TIMED(__libc_valloc(n));
}

void *pvalloc(size_t n)
{
	count(C_PVALLOC);
	allocated(n);
	return TIMED(__libc_pvalloc(n));
}

static size_t (*next_usable_size)(void *);

size_t malloc_usable_size(void *p)
{
	count(C_USABLE_SIZE);
	if (!next_usable_size)
		next_usable_size = (size_t (*)(void *))libc_sym("malloc_usable_size");
	return TIMED(next_usable_size(p));
}

static double secs(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

// The TSC's rate, from the process's start (or its last report) to now.
static uint64_t tsc0;
static double time0;

static double tsc_hz(void)
{
	double dt = now_s() - time0;
	uint64_t dc = __rdtsc() - tsc0;
	return dt > 0 && dc > 0 ? dc / dt : 1e9;
}

static uint64_t allocs(struct slot *s)
{
	uint64_t n = 0;
	for (int k = C_MALLOC; k <= C_PVALLOC; k++)
		if (k != C_REALLOC_MOVED && k != C_REALLOC_FREE)
			n += atomic_load(&s->n[k]);
	return n;
}

// report appends this process's line (one write, O_APPEND: lines of
// concurrent processes do not mix) and zeroes the counters. No allocation.
static void report(const char *via)
{
	const char *path = getenv("COUNT_OUT");
	if (!path || !*path)
		return;
	unsigned used = atomic_load(&nslots);
	if (used > SLOTS)
		used = SLOTS;
	uint64_t sum[NCOUNT] = {0}, max_frees = 0;
	for (unsigned i = 0; i < used; i++) {
		uint64_t f = atomic_load(&slots[i].n[C_FREE]) + atomic_load(&slots[i].n[C_REALLOC_FREE]);
		if (f > max_frees)
			max_frees = f;
		for (int k = 0; k < NCOUNT; k++)
			sum[k] += atomic_load(&slots[i].n[k]);
	}
	uint64_t exit_frees = 0, exit_allocs = 0, exit_cycles = 0, exit_bytes = 0;
	if (mine) {
		exit_frees = atomic_load(&mine->n[C_FREE]) + atomic_load(&mine->n[C_REALLOC_FREE]);
		exit_allocs = allocs(mine);
		exit_cycles = atomic_load(&mine->n[C_CYCLES]);
		exit_bytes = atomic_load(&mine->n[C_BYTES]);
	}
	double hz = tsc_hz();
	struct timespec tc;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &tc);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);

	char buf[1024];
	int len = snprintf(buf, sizeof buf, "pid=%d ppid=%d exe=%s via=%s", (int)getpid(), (int)getppid(),
			   program_invocation_short_name, via);
	sum[C_FREE] += sum[C_REALLOC_FREE];
	for (int k = 0; k < C_CYCLES; k++)
		len += snprintf(buf + len, sizeof buf - len, " %s=%llu", names[k], (unsigned long long)sum[k]);
	len += snprintf(buf + len, sizeof buf - len,
			" threads=%u max_thread_frees=%llu exit_thread_frees=%llu exit_thread_allocs=%llu"
			" exit_thread_bytes=%llu exit_thread_cpu=%.6f proc_cpu=%.6f alloc_s=%.6f"
			" exit_thread_alloc_s=%.6f delay_s=%.6f\n",
			used, (unsigned long long)max_frees, (unsigned long long)exit_frees,
			(unsigned long long)exit_allocs, (unsigned long long)exit_bytes, tc.tv_sec + tc.tv_nsec / 1e9,
			secs(ru.ru_utime) + secs(ru.ru_stime), sum[C_CYCLES] / hz, exit_cycles / hz,
			sum[C_DELAY] * 1e-9);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, len) < 0) {
		}
		close(fd);
	}
	for (unsigned i = 0; i < used; i++)
		for (int k = 0; k < NCOUNT; k++)
			atomic_store(&slots[i].n[k], 0);
}

// The child has only the forking thread: its slot stays its own, zeroed.
static void child_after_fork(void)
{
	unsigned used = atomic_load(&nslots);
	if (used > SLOTS)
		used = SLOTS;
	for (unsigned i = 0; i < used; i++)
		for (int k = 0; k < NCOUNT; k++)
			atomic_store(&slots[i].n[k], 0);
}

static int (*next_execve)(const char *, char *const[], char *const[]);

int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!next_execve)
		next_execve = (int (*)(const char *, char *const[], char *const[]))libc_sym("execve");
	report("exec"); // if execve fails, counting goes on from zero: no double count
	return next_execve(path, argv, envp);
}

__attribute__((constructor)) static void init(void)
{
	uint64_t least = UINT64_MAX;
	for (int i = 0; i < 1000; i++) {
		uint64_t a = __rdtsc(), b = __rdtsc();
		if (b - a < least)
			least = b - a;
	}
	tsc_cost = least;
	const char *d = getenv("FREE_DELAY_NS");
	if (d && atol(d) > 0) {
		delay_ns = atol(d);
		timing = 0;
	}
	tsc0 = __rdtsc();
	time0 = now_s();
	pthread_atfork(NULL, NULL, child_after_fork);
}

__attribute__((destructor)) static void fini(void) { report("exit"); }
