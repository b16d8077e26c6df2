// Allocation and free sites: a frame-pointer walk (cheap enough for every
// malloc, unlike a DWARF unwind) kept in a deduplicating depot, so that a
// site costs 4 bytes per object however often it recurs.
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define DEPOT_TRACES (1u << 20)	// ids are 20 bits; DEPOT_TRACES means unknown
#define INDEX_SLOTS (1u << 18)

// Traces are stored in order of arrival, so the pages they use are full;
// a hash index of 4-byte slots finds them.
struct trace {
	uint64_t hash;
	uintptr_t pc[HG_TRACE_DEPTH];
};

static struct trace *traces;
static _Atomic uint32_t *trace_index;	// 0 empty, else trace id + 1
static atomic_uint trace_count;
static atomic_int depot_state;	// 0 unmapped, 1 mapping, 2 ready, 3 failed

extern void *__libc_stack_end;

static void *reserve(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int depot_ready(void)
{
	int s = atomic_load_explicit(&depot_state, memory_order_acquire);
	if (s >= 2)
		return s == 2;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&depot_state, &zero, 1))
		return 0;	// another thread maps it; this trace goes unrecorded
	traces = reserve(DEPOT_TRACES * sizeof(struct trace));
	trace_index = reserve(INDEX_SLOTS * sizeof(uint32_t));
	atomic_store_explicit(&depot_state, traces && trace_index ? 2 : 3, memory_order_release);
	return traces && trace_index;
}

// The top of the calling thread's stack, or 0 when the stack is not one
// whose bounds are known (an alternate signal stack, a coroutine's).
static uintptr_t stack_top(uintptr_t sp)
{
	uintptr_t main_top = (uintptr_t)__libc_stack_end;
	if (sp < main_top && main_top - sp < (64UL << 20))
		return main_top;
	// glibc puts a thread's descriptor right above its stack.
	uintptr_t self = (uintptr_t)pthread_self();
	if (sp < self && self - sp < (64UL << 20))
		return self;
	return 0;
}

static uint64_t hash(const uintptr_t *pc, int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < n; i++)
		h = (h ^ pc[i]) * 0x100000001b3ULL;
	return h | 2;
}

static uint32_t intern(const uintptr_t *pc)
{
	uint64_t h = hash(pc, HG_TRACE_DEPTH);
	uint32_t mine = DEPOT_TRACES;
	for (uint32_t i = 0, s = (uint32_t)h & (INDEX_SLOTS - 1); i < 64; i++, s = (s + 1) & (INDEX_SLOTS - 1)) {
		uint32_t slot = atomic_load_explicit(&trace_index[s], memory_order_acquire);
		if (slot == 0) {
			if (mine == DEPOT_TRACES) {
				mine = atomic_fetch_add(&trace_count, 1);
				if (mine >= DEPOT_TRACES)
					return DEPOT_TRACES;	// full: the site is unknown
				traces[mine].hash = h;
				memcpy(traces[mine].pc, pc, sizeof traces[mine].pc);
			}
			if (atomic_compare_exchange_strong_explicit(&trace_index[s], &slot, mine + 1,
								    memory_order_release, memory_order_acquire))
				return mine;
		}
		// Taken, by this trace (return it) or another (probe on).
		const struct trace *t = &traces[slot - 1];
		if (t->hash == h && memcmp(t->pc, pc, sizeof t->pc) == 0)
			return slot - 1;
	}
	return DEPOT_TRACES;
}

// hg_trace_here records the stack from frame, the frame of the allocator's
// entry point: its return address is the call site. Only addresses
// between the current stack pointer and the stack's top are read, so a
// caller without frame pointers yields a short (possibly partly wrong)
// trace, never a fault.
uint32_t hg_trace_here(void *frame)
{
	if (!depot_ready())
		return DEPOT_TRACES;
	uintptr_t pc[HG_TRACE_DEPTH] = {0};
	uintptr_t fp = (uintptr_t)frame, lo = (uintptr_t)__builtin_frame_address(0);
	uintptr_t hi = stack_top(lo);
	pc[0] = ((uintptr_t *)fp)[1];
	for (int i = 1; i < HG_TRACE_DEPTH && hi; i++) {
		uintptr_t next = ((uintptr_t *)fp)[0];
		if (next <= fp || next > hi - 16 || next % 8)
			break;
		fp = next;
		pc[i] = ((uintptr_t *)fp)[1];
	}
	return intern(pc);
}

// hg_trace_get fills out with trace id's frames; 0 if id names no trace.
int hg_trace_get(uint32_t id, uintptr_t out[HG_TRACE_DEPTH])
{
	if (atomic_load(&depot_state) != 2 || id >= atomic_load(&trace_count) || id >= DEPOT_TRACES)
		return 0;
	memcpy(out, traces[id].pc, sizeof traces[id].pc);
	int n = 0;
	while (n < HG_TRACE_DEPTH && out[n])
		n++;
	return n;
}
