// primitives: the cost of each kernel mechanism a use-after-free guard could
// revoke or create an alias with, on the running kernel. The heap guard's
// design (heapguard/DESIGN.md) is chosen from these numbers.
//
//   primitives [PAGES]   prints one markdown row per mechanism: median ns
//                        per page over 5 rounds of PAGES pages (default 20000)
//
// The last row is the price of a Dune-like design, in which every system
// call of the program leaves the VM: one KVM_RUN round trip of a guest that
// does nothing but exit (kvm_exit.c).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
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

double kvm_exit_ns(void);
double dead_page_ns(size_t pages, int move);
#define ROUNDS 5

static size_t pages = 20000;
static int memfd;

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

// window maps the whole memfd once, shared: the heap guard's alias space.
static char *window(void)
{
	char *w = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (w == MAP_FAILED)
		die("mmap window");
	return w;
}

static char *anon(void)
{
	char *a = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED)
		die("mmap anon");
	return a;
}

static void touch(char *base)
{
	for (size_t i = 0; i < pages; i++)
		base[i * PAGE] = 1;
}

// Each measurement returns ns per page for one round.

static double write_fault(char *base)
{
	double t = now_ns();
	touch(base);
	t = now_ns() - t;
	munmap(base, pages * PAGE);
	return t / pages;
}

// A read fault maps up to 16 neighbouring page-cache pages (fault-around).
static double m_read_fault_shared(void)
{
	char *w = window();
	volatile char sink = 0;
	double t = now_ns();
	for (size_t i = 0; i < pages; i++)
		sink += w[i * PAGE];
	t = now_ns() - t;
	(void)sink;
	munmap(w, pages * PAGE);
	return t / pages;
}

static double populate(char *base)
{
	double t = now_ns();
	for (size_t i = 0; i < pages; i += 512) {
		size_t n = pages - i < 512 ? pages - i : 512;
		if (madvise(base + i * PAGE, n * PAGE, MADV_POPULATE_WRITE))
			die("MADV_POPULATE_WRITE");
	}
	t = now_ns() - t;
	munmap(base, pages * PAGE);
	return t / pages;
}

static double m_write_fault_shared(void) { return write_fault(window()); }
static double m_populate_shared(void) { return populate(window()); }

// Fresh private memory, as an allocator that never reuses an address takes
// it: a write fault per page, or one MADV_POPULATE_WRITE per 2 MiB.
static double m_write_fault_anon(void) { return write_fault(anon()); }
static double m_populate_anon(void) { return populate(anon()); }

static double guard_each(char *base)
{
	touch(base);
	double t = now_ns();
	for (size_t i = 0; i < pages; i++)
		if (madvise(base + i * PAGE, PAGE, MADV_GUARD_INSTALL))
			die("MADV_GUARD_INSTALL");
	t = now_ns() - t;
	munmap(base, pages * PAGE);
	return t / pages;
}

static double m_guard_shared(void) { return guard_each(window()); }
static double m_guard_anon(void) { return guard_each(anon()); }

// Revoking a page never touched needs no TLB flush.
static double m_guard_untouched(void)
{
	char *a = anon();
	double t = now_ns();
	for (size_t i = 0; i < pages; i++)
		if (madvise(a + i * PAGE, PAGE, MADV_GUARD_INSTALL))
			die("MADV_GUARD_INSTALL");
	t = now_ns() - t;
	munmap(a, pages * PAGE);
	return t / pages;
}

// One call over a whole range: the cost per page when revocations can be
// made contiguous. On private memory it also frees the pages.
static double guard_range(char *base)
{
	touch(base);
	double t = now_ns();
	if (madvise(base, pages * PAGE, MADV_GUARD_INSTALL))
		die("MADV_GUARD_INSTALL");
	t = now_ns() - t;
	munmap(base, pages * PAGE);
	return t / pages;
}

static double m_guard_range(void) { return guard_range(window()); }
static double m_guard_range_anon(void) { return guard_range(anon()); }

// The system-call floor: a madvise that changes nothing.
static double m_madvise_noop(void)
{
	char *a = anon();
	double t = now_ns();
	for (size_t i = 0; i < pages; i++)
		madvise(a + i * PAGE, PAGE, MADV_NORMAL);
	t = now_ns() - t;
	munmap(a, pages * PAGE);
	return t / pages;
}

// process_madvise takes up to 1,024 ranges per call (UIO_MAXIOV); every
// other page, so that no two ranges merge.
// every_other: process_madvise(advice) over every other page of base (the
// pages are not contiguous), ranges a call; ns per page.
static double every_other(char *base, int ranges, const int *advice, int advices)
{
	struct iovec iov[1024];
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0)
		die("pidfd_open");
	touch(base);
	size_t n = 0, done = 0;
	double t = now_ns();
	for (size_t i = 0; i < pages; i += 2) {
		iov[n].iov_base = base + i * PAGE;
		iov[n].iov_len = PAGE;
		if (++n == (size_t)ranges || i + 2 >= pages) {
			for (int a = 0; a < advices; a++)
				if (syscall(SYS_process_madvise, pidfd, iov, n, advice[a], 0) < 0)
					die("process_madvise");
			done += n;
			n = 0;
		}
	}
	t = now_ns() - t;
	close(pidfd);
	munmap(base, pages * PAGE);
	return t / done;
}

static const int guard_only[] = {MADV_GUARD_INSTALL};
// Deferred mode's batch: the pages freed first (one TLB flush for all),
// then marked while empty (no flush).
static const int free_then_guard[] = {MADV_DONTNEED, MADV_GUARD_INSTALL};

static double m_guard_batch_shared(void) { return every_other(window(), 1024, guard_only, 1); }
static double m_batch16_anon(void) { return every_other(anon(), 16, free_then_guard, 2); }

// One small mapping per alias, as Oscar does: a VMA each.
static double m_alias_mmap_munmap(void)
{
	double t = now_ns();
	for (size_t i = 0; i < pages; i++) {
		char *a = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, (i % 512) * PAGE);
		if (a == MAP_FAILED)
			die("mmap alias");
		a[0] = 1;
		munmap(a, PAGE);
	}
	return (now_ns() - t) / pages;
}

// mprotect of single pages splits the VMA: the count grows by two per page.
static double m_mprotect_split(void)
{
	char *a = anon();
	touch(a);
	double t = now_ns();
	size_t n = pages < 20000 ? pages : 20000;
	for (size_t i = 0; i < n; i += 2)
		if (mprotect(a + i * PAGE, PAGE, PROT_NONE))
			die("mprotect");
	t = now_ns() - t;
	munmap(a, pages * PAGE);
	return t / (n / 2);
}

static double m_malloc_free(void)
{
	double t = now_ns();
	for (size_t i = 0; i < pages * 10; i++) {
		void *volatile p = malloc(32);
		free(p);
	}
	return (now_ns() - t) / (pages * 10);
}

static atomic_int spin_stop;

// spinner keeps the other CPU inside this mm, so revocations there need a
// TLB shootdown IPI, as in any multithreaded program.
static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

// with_spinner runs m with a second thread spinning: each TLB flush then
// interrupts its CPU.
static double with_spinner(double (*m)(void))
{
	pthread_t t;
	atomic_store(&spin_stop, 0);
	pthread_create(&t, NULL, spinner, NULL);
	double r = m();
	atomic_store(&spin_stop, 1);
	pthread_join(t, NULL);
	return r;
}

// Deferred mode's dead pages, freed and replaced or moved (move.c).
static double m_dead_freed(void) { return dead_page_ns(pages, 0); }
static double m_dead_moved(void) { return dead_page_ns(pages, 1); }

static double m_guard_shared_2threads(void) { return with_spinner(m_guard_shared); }
static double m_guard_anon_2threads(void) { return with_spinner(m_guard_anon); }
static double m_batch16_anon_2threads(void) { return with_spinner(m_batch16_anon); }
static double m_dead_freed_2threads(void) { return with_spinner(m_dead_freed); }
static double m_dead_moved_2threads(void) { return with_spinner(m_dead_moved); }

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void row(const char *name, double (*m)(void))
{
	double r[ROUNDS];
	for (int i = 0; i < ROUNDS; i++)
		r[i] = m();
	qsort(r, ROUNDS, sizeof r[0], cmp);
	printf("| %s | %.0f | %.0f–%.0f |\n", name, r[ROUNDS / 2], r[0], r[ROUNDS - 1]);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		pages = strtoul(argv[1], NULL, 10);
	memfd = memfd_create("primitives", 0);
	if (memfd < 0 || ftruncate(memfd, pages * PAGE))
		die("memfd");
	char *w = window();
	touch(w); // the frames exist: what follows measures mappings only
	munmap(w, pages * PAGE);

	printf("| mechanism (per page) | median ns | min–max |\n| --- | --- | --- |\n");
	row("glibc malloc(32)+free, for scale", m_malloc_free);
	row("write fault, memfd window", m_write_fault_shared);
	row("read fault, memfd window (fault-around)", m_read_fault_shared);
	row("MADV_POPULATE_WRITE, 2 MiB at a time", m_populate_shared);
	row("MADV_GUARD_INSTALL, one page, memfd window", m_guard_shared);
	row("MADV_GUARD_INSTALL, one page, private anon", m_guard_anon);
	row("MADV_GUARD_INSTALL, one page, 2nd thread running", m_guard_shared_2threads);
	row("MADV_GUARD_INSTALL, one page never touched", m_guard_untouched);
	row("MADV_GUARD_INSTALL, one call over all pages", m_guard_range);
	row("write fault, private anon (fresh page)", m_write_fault_anon);
	row("MADV_POPULATE_WRITE, private anon, 2 MiB at a time", m_populate_anon);
	row("MADV_GUARD_INSTALL, one call over all pages, private anon", m_guard_range_anon);
	row("madvise(MADV_NORMAL), syscall floor", m_madvise_noop);
	row("process_madvise GUARD_INSTALL, 1,024 ranges/call", m_guard_batch_shared);
	row("MADV_GUARD_INSTALL, one page, private anon, 2nd thread running", m_guard_anon_2threads);
	row("process_madvise DONTNEED then GUARD_INSTALL, 16 pages/call, private anon", m_batch16_anon);
	row("the same, 2nd thread running", m_batch16_anon_2threads);
	row("dead page freed in a batch of 16, fresh page populated for the next span", m_dead_freed);
	row("dead page moved to the next span (UFFDIO_MOVE), old page marked", m_dead_moved);
	row("dead page freed and replaced, 2nd thread running", m_dead_freed_2threads);
	row("dead page moved, 2nd thread running", m_dead_moved_2threads);
	row("alias mmap + touch + munmap (Oscar)", m_alias_mmap_munmap);
	row("mprotect(PROT_NONE) one page (splits VMA)", m_mprotect_split);
	row("KVM_RUN round trip (Dune-like syscall cost)", kvm_exit_ns);
	return 0;
}
