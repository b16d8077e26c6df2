// revoke: the cheapest way, on the running kernel, to make one populated
// page fault on every later load and store: what a free must do, at least
// once, before it returns, under heapguard's guarantee. Each mechanism
// revokes PAGES distinct populated pages (written first, so that each has
// a present translation, as a just-freed object's page has), one system
// call per page, single-threaded (no TLB-shootdown IPI: the cheapest case).
//
//   revoke [PAGES [ROUNDS]]   (defaults 20000, 7)
//
// Prints one markdown row per mechanism: the best round's mean ns per call
// (min over ROUNDS), the median round's, and over every call of every round
// timed on its own (clock_gettime, its own cost subtracted): the fastest
// call, the 1st percentile and the median. Then a line
//   t_min_ns=X mechanism=NAME
// with the best round mean of all mechanisms.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#define PAGE 4096UL

static size_t pages = 20000;
static int rounds = 7;
static int memfd, pidfd;
static double *calls; // every timed call, all rounds
static size_t ncalls;
static double timer_ns;

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static char *map(size_t n, int prot, int flags, int fd)
{
	char *p = mmap(NULL, n * PAGE, prot, flags, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void touch(char *base, size_t n, size_t stride)
{
	for (size_t i = 0; i < n; i += stride)
		base[i * PAGE] = 1;
}

// A round: set up, then revoke page i of `base` (every `stride`-th page) for
// i < pages, each call timed. Returns the round's mean ns per call.
typedef int (*revoke_fn)(char *page);

static double run(char *base, size_t stride, revoke_fn f)
{
	size_t n = 0;
	double start = now_ns();
	for (size_t i = 0; i < pages * stride; i += stride) {
		double t = now_ns();
		if (f(base + i * PAGE))
			die("revoke");
		calls[ncalls++] = now_ns() - t - timer_ns;
		n++;
	}
	double total = now_ns() - start - n * timer_ns * 2; // two timer reads a call
	return total / n;
}

static int r_guard(char *p) { return madvise(p, PAGE, MADV_GUARD_INSTALL); }
static int r_mprotect(char *p) { return mprotect(p, PAGE, PROT_NONE); }
static int r_munmap(char *p) { return munmap(p, PAGE); }
static int r_mmap_fixed(char *p)
{
	return mmap(p, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) ==
			       MAP_FAILED
		       ? -1
		       : 0;
}
static int r_process_madvise(char *p)
{
	struct iovec iov = {p, PAGE};
	return syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_GUARD_INSTALL, 0) == (long)PAGE ? 0 : -1;
}

// The memory a way of revoking is measured on.
enum setup {
	WINDOW,		// a shared window over the memfd, as the heap guard's
	ANON,		// private anonymous memory
	ANON_SPLIT,	// the same, every other page revoked: each call splits a VMA
	ONE_PAGE_VMAS,	// every other page a VMA of its own
};

struct way {
	const char *name;
	enum setup setup;
	revoke_fn revoke;
};

static char *shared_window(void)
{
	char *w = map(pages, PROT_READ | PROT_WRITE, MAP_SHARED, memfd);
	touch(w, pages, 1);
	return w;
}

static char *private_anon(size_t n)
{
	char *a = map(n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
	touch(a, n, 1);
	return a;
}

// One-page VMAs: every other page of a PROT_NONE reservation mapped on its
// own (with a different protection from its neighbours, so no merge).
static char *one_page_vmas(void)
{
	char *r = map(2 * pages, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
	for (size_t i = 0; i < 2 * pages; i += 2)
		if (mmap(r + i * PAGE, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
			die("mmap one page");
	touch(r, 2 * pages, 2);
	return r;
}

// measure runs one round of w on fresh memory, unmaps it, and returns the
// round's mean ns per call.
static double measure(const struct way *w)
{
	size_t stride = w->setup == WINDOW || w->setup == ANON ? 1 : 2;
	char *m;
	switch (w->setup) {
	case WINDOW:
		m = shared_window();
		break;
	case ONE_PAGE_VMAS:
		m = one_page_vmas();
		break;
	default:
		m = private_anon(stride * pages);
	}
	double r = run(m, stride, w->revoke);
	munmap(m, stride * pages * PAGE);
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double best = 1e30;
static const char *best_name;

static void row(const struct way *w)
{
	double r[64];
	ncalls = 0;
	for (int i = 0; i < rounds; i++)
		r[i] = measure(w);
	qsort(r, rounds, sizeof r[0], cmp);
	qsort(calls, ncalls, sizeof calls[0], cmp);
	printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", w->name, r[0], r[rounds / 2], calls[0],
	       calls[ncalls / 100], calls[ncalls / 2]);
	if (r[0] < best) {
		best = r[0];
		best_name = w->name;
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		pages = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (rounds < 1 || rounds > 64 || pages < 100 || pages > 30000) // one-page VMAs: < max_map_count
		return 2;
	calls = malloc(sizeof *calls * pages * rounds);
	memfd = memfd_create("revoke", 0);
	if (memfd < 0 || ftruncate(memfd, pages * PAGE))
		die("memfd");
	pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0)
		die("pidfd_open");
	char *w = shared_window(); // the frames exist: what follows measures mappings only
	munmap(w, pages * PAGE);
	double m = 1e30; // the timer's own cost, subtracted from every call
	for (int i = 0; i < 100000; i++) {
		double t = now_ns(), u = now_ns() - t;
		if (u < m)
			m = u;
	}
	timer_ns = m;

	printf("| revocation of one populated page (one call each) | best round mean ns | median round mean ns "
	       "| fastest call ns | 1st percentile ns | median call ns |\n"
	       "| --- | ---: | ---: | ---: | ---: | ---: |\n");
	static const struct way ways[] = {
		{"`madvise(MADV_GUARD_INSTALL)`, memfd window", WINDOW, r_guard},
		{"`madvise(MADV_GUARD_INSTALL)`, private anon", ANON, r_guard},
		{"`process_madvise(MADV_GUARD_INSTALL)`, 1 range, memfd window", WINDOW, r_process_madvise},
		{"`mprotect(PROT_NONE)`, splits the VMA", ANON_SPLIT, r_mprotect},
		{"`mprotect(PROT_NONE)` of a one-page VMA", ONE_PAGE_VMAS, r_mprotect},
		{"`munmap`, splits the VMA", ANON_SPLIT, r_munmap},
		{"`munmap` of a one-page VMA", ONE_PAGE_VMAS, r_munmap},
		{"`mmap(MAP_FIXED, PROT_NONE)` over the page", ANON_SPLIT, r_mmap_fixed},
	};
	for (size_t i = 0; i < sizeof ways / sizeof *ways; i++)
		row(&ways[i]);
	printf("\ntimer_ns=%.0f\nt_min_ns=%.1f mechanism=%s\n", timer_ns, best, best_name);
	return 0;
}
