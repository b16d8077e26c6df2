/*
 * The stub window: slot i, at window + (i << shift), holds a copy of the
 * stub block for compartment i. It is mapped where the launcher chose,
 * filled, then made read+exec and sealed before the filter is installed;
 * so is every object's code, once loaded (object.c).
 * The epoch page after it tells the supervisor when the loader changed
 * the process's objects.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"
#include "stubs.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
/* mseal(2), Linux 6.10; older headers lack the number. */
#define SYS_MSEAL 462
#define PAGE 4096UL

/* What the supervisor reads: a cookie unique to this image of the
   program, and a counter the loader's changes make odd while they last. */
struct epoch {
	uint64_t cookie;
	uint64_t count;
};

static struct epoch *epoch;
static int seal_errno;
static int *(*errno_location)(void);
/* The executable, whose global scope has the program's libc. */
static struct link_map *program;
/* What the stubs read as __libc_single_threaded until the program's is
   known: the loader runs on the only thread there is. */
static const char loader_single_threaded = 1;

static size_t window_size(void)
{
	return (size_t)config.nslots << config.shift;
}

uintptr_t window_slot(unsigned slot)
{
	return config.window + ((uintptr_t)slot << config.shift);
}

/* map_fixed maps size bytes at addr, populated: every page of the window
   is written at once, and a fault for each page costs more than the call
   filling them all in one go. */
static void *map_fixed(uintptr_t addr, size_t size, const char *what)
{
	void *p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		die("map the %s at %#lx: %s", what, (unsigned long)addr, strerror(errno));
	if (p != (void *)addr) /* a kernel older than 4.17 takes the address as a hint */
		die("map the %s at %#lx: the kernel put it at %p", what, (unsigned long)addr, p);
	return p;
}

static void protect_window(int prot)
{
	if (mprotect((void *)config.window, window_size(), prot) != 0)
		die("mprotect the stub window: %s", strerror(errno));
}

void window_reserve(void)
{
	if (stub_block_size() > 1UL << config.shift)
		die("the stub block (%zu bytes) does not fit a slot of %lu bytes", stub_block_size(), 1UL << config.shift);
	/* The window and the epoch page after it in one mapping: in an image
	   an exec started, each call here is a round trip to the supervisor. */
	map_fixed(config.window, window_size() + PAGE, "stub window");
	/* The stubs work from now on: the loader calls the program's malloc
	   (jemalloc's, say) before relocation ends, and its wrappers are
	   already bound to stubs. */
	void *failed = syscell_stub_failed;
	const void *single = &loader_single_threaded;
	for (unsigned i = 0; i < config.nslots; i++) {
		char *slot = (char *)window_slot(i);
		memcpy(slot, stub_block(), stub_block_size());
		memcpy(slot + STUB_FAILED, &failed, sizeof failed);
		memcpy(slot + STUB_SINGLE, &single, sizeof single);
	}
	protect_window(PROT_READ | PROT_EXEC);
	char *runtime = stub_runtime_pointers();
	memcpy(runtime + STUB_FAILED, &failed, sizeof failed);
	memcpy(runtime + STUB_SINGLE, &single, sizeof single);
	epoch = (struct epoch *)(config.window + window_size());
	/* The kernel's random bytes for this image, which need no call. */
	memcpy(&epoch->cookie, (const void *)getauxval(AT_RANDOM), sizeof epoch->cookie);
}

uintptr_t window_epoch(void)
{
	return (uintptr_t)epoch;
}

void window_epoch_change(bool done)
{
	/* Odd while a change lasts, even once it is done. */
	if ((epoch->count & 1) == done)
		__atomic_add_fetch(&epoch->count, 1, __ATOMIC_RELEASE);
}

void window_program(struct link_map *executable)
{
	program = executable;
}

/* lookup finds name in the program's global scope, as dlsym on the
   executable's link map does: the first of its objects, in load order,
   that defines the symbol's default version. Until the first consistent
   state, when it is called, the namespace's objects are those the
   program started with, its global scope. */
static void *lookup(const char *name)
{
	for (const struct link_map *m = program; m != NULL; m = m->l_next) {
		struct symbols s = symbols_of(m);
		uintptr_t at = symbols_lookup(&s, name);
		if (at != 0)
			return (void *)at;
	}
	return NULL;
}

long syscell_stub_failed(long negative_errno)
{
	/* A stub fails before window_finish when the loader runs program code. */
	if (errno_location == NULL && program != NULL)
		errno_location = lookup("__errno_location");
	if (errno_location == NULL)
		die("a system call failed before the program's errno was known");
	*errno_location() = -negative_errno;
	return -1;
}

static void *program_symbol(const char *name)
{
	void *p = lookup(name);
	if (p == NULL)
		die("the program has no %s", name);
	return p;
}

void window_finish(void)
{
	void *single = program_symbol("__libc_single_threaded");
	void *canceltype = program_symbol("pthread_setcanceltype");
	errno_location = program_symbol("__errno_location");
	/* Still the loader's only thread: no stub runs while this lasts. */
	protect_window(PROT_READ | PROT_WRITE);
	for (unsigned i = 0; i < config.nslots; i++) {
		char *slot = (char *)window_slot(i);
		memcpy(slot + STUB_SINGLE, &single, sizeof single);
		memcpy(slot + STUB_CANCELTYPE, &canceltype, sizeof canceltype);
	}
	protect_window(PROT_READ | PROT_EXEC);
	char *runtime = stub_runtime_pointers();
	memcpy(runtime + STUB_SINGLE, &single, sizeof single);
	memcpy(runtime + STUB_CANCELTYPE, &canceltype, sizeof canceltype);
	window_seal((struct range){config.window, config.window + window_size()});
}

void window_seal(struct range r)
{
	if (seal_errno != 0 || syscall(SYS_MSEAL, r.start, r.end - r.start, 0) == 0)
		return;
	/* Without mseal (a kernel older than 6.10, or an outer filter that
	   denies it) code allowed to call mprotect or mmap can remap what
	   this library would seal; the launcher reports it. */
	if (errno != ENOSYS && errno != EPERM)
		die("seal %#lx-%#lx: %s", (unsigned long)r.start, (unsigned long)r.end, strerror(errno));
	seal_errno = errno;
}

int window_seal_errno(void)
{
	return seal_errno;
}
