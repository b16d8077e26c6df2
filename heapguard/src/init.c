// Lazy start-up of the heap guard: the first malloc may come before any
// constructor (from ld.so, from another library's constructor), so every
// entry point calls hg_init, and nothing here calls malloc until the heap
// is usable.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct hg_state hg = {.memfd = -1};
int hg_mode;

atomic_int hg_ready;	// 0: not started, 1: starting, 2: usable
static pthread_key_t exit_key;

// Never a silent loss of the guarantee: say it once, loudly.
void hg_fallback(const char *why)
{
	if (atomic_exchange(&hg.fallback, 1))
		return;
	hg_say("heapguard: WARNING: ");
	hg_say(why);
	hg_say("; from now on new allocations come from glibc malloc and use-after-free of them is NOT detected\n");
}

// hg_reserve maps len bytes of fresh address space, aligned to 2 MiB: a
// released (or dropped) aligned 2 MiB piece of it then frees a page-table
// page too.
void *hg_reserve(size_t len, int prot)
{
	// Whole pages: munmap refuses to trim from an address inside a page.
	len = (len + HG_PAGE - 1) & ~(HG_PAGE - 1);
	char *p = mmap(NULL, len + HG_PMD, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + HG_PMD - 1) & ~(HG_PMD - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + len, (size_t)(p + HG_PMD - a));
	return a;
}

// hg_drop frees the memory of part of a readable reservation (it reads as
// zeros again): a new mapping over it frees the page-table pages of the
// whole 2 MiB pieces in it too (MADV_DONTNEED keeps them, and they would
// grow with every allocation ever made), and merges with its neighbours.
// In a forked child it splits the mapping instead; when the mappings run
// out, the memory alone is freed.
void hg_drop(void *p, size_t len)
{
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		madvise(p, len, MADV_DONTNEED);
}

static int start_heap(void)
{
	// The windows are placed inside a reservation so that no other mapping
	// can ever take an address a dangling pointer may hold.
	hg.small = hg_reserve(HG_WINDOWS * HG_FILE, PROT_NONE);
	hg.large = hg_reserve(HG_LARGE_SPAN, PROT_READ | PROT_WRITE);
	hg.small_rec = hg_reserve(HG_WINDOWS * HG_FRAMES * sizeof(struct hg_record), PROT_READ | PROT_WRITE);
	hg.large_rec = hg_reserve(HG_LARGE_SPAN / HG_PAGE * sizeof(struct hg_record), PROT_READ | PROT_WRITE);
	hg.large_live = hg_reserve(HG_LARGE_BLOCKS * sizeof(atomic_int), PROT_READ | PROT_WRITE);
	hg.runs = hg_reserve(HG_FRAMES / 2 * sizeof(struct hg_run), PROT_READ | PROT_WRITE);
	hg.owner = hg_reserve(HG_FRAMES / 2 * sizeof(uint32_t), PROT_READ | PROT_WRITE);
	if (!hg.small || !hg.large || !hg.small_rec || !hg.large_rec || !hg.large_live || !hg.runs || !hg.owner)
		return -1;
	hg.memfd = memfd_create("heapguard", MFD_CLOEXEC);
	if (hg.memfd < 0 || ftruncate(hg.memfd, HG_FILE) != 0)
		return -1;
	return 0;
}

extern void *__libc_stack_end;

// env_mode reads SYSCELL_HEAPGUARD from the process's initial environment,
// found above argv on the stack: the first malloc may come before libc has
// set environ.
static int env_mode(void)
{
	static const char key[] = "SYSCELL_HEAPGUARD=";
	uintptr_t *sp = __libc_stack_end;
	if (!sp)
		return HG_STRICT;
	char **envp = (char **)(sp + 1 + sp[0] + 1);
	for (; *envp; envp++) {
		const char *e = *envp;
		size_t i = 0;
		while (key[i] && e[i] == key[i])
			i++;
		if (!key[i]) {
			if (strcmp(e + i, "deferred") == 0)
				return HG_DEFERRED;
			if (e[i] && strcmp(e + i, "strict") != 0)
				hg_say("heapguard: WARNING: SYSCELL_HEAPGUARD is neither strict nor deferred; strict mode\n");
			return HG_STRICT;
		}
	}
	return HG_STRICT;
}

static void finish_start(void)
{
	pthread_key_create(&exit_key, hg_mode == HG_DEFERRED ? hd_thread_exit : hg_thread_exit);
	if (hg_mode == HG_DEFERRED)
		hd_install_fork_handlers();
	else
		hg_install_fork_handlers();
	hg_install_fault_handler();
}

// hg_start starts the guard, or waits for the thread that does (hg_init).
void hg_start(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&hg_ready, &expected, 1)) {
		while (atomic_load(&hg_ready) != 2)
			sched_yield();
		return;
	}
	hg_mode = env_mode();
	if (hg_mode == HG_DEFERRED)
		hg_trace_depth = HD_TRACE_DEPTH;
	if ((hg_mode == HG_DEFERRED ? hd_start() : start_heap()) != 0)
		hg_fallback("cannot reserve the guarded heap's address space");
	atomic_store_explicit(&hg_ready, 2, memory_order_release);
	// These may allocate; the heap is usable now.
	finish_start();
}

// hg_thread_registered makes the thread's exit hand its partly used runs
// back (hg_thread_exit).
void hg_thread_registered(void *cache)
{
	pthread_setspecific(exit_key, cache);
}
