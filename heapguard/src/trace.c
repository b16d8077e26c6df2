// Allocation and free sites: a frame-pointer walk (cheap enough for every
// malloc, unlike a DWARF unwind) kept in a deduplicating depot, so that a
// site costs 4 bytes per object however often it recurs.
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define DEPOT_TRACES (1u << 20)	// ids are 20 bits; DEPOT_TRACES means unknown
#define FIRST_SLOTS (1u << 10)
#define LAST_SLOTS (DEPOT_TRACES * 2)

// Traces are stored in order of arrival, so the pages they use are full;
// a hash index of 4-byte slots finds them. The index doubles when half
// full, so that its pages are full too (a fixed table big enough for a
// large program would touch a page per trace of a small one). Tables are
// carved in turn from one reservation and never freed: a thread still
// probing an old one reads valid, if incomplete, slots. A trace inserted
// into the old table while it is copied is missed by the new one, and
// stored again under a second id the next time it is seen: harmless.
struct trace {
	uint64_t hash;
	uintptr_t pc[HG_TRACE_DEPTH];
};

struct index {
	uint32_t mask;
	_Atomic uint32_t slot[];	// 0 empty, else trace id + 1
};

static struct trace *traces;
static char *index_area;		// every table, in order of growth
static _Atomic(struct index *) trace_index;
static atomic_int growing;
static atomic_uint trace_count;
static atomic_int depot_state;	// 0 unmapped, 1 mapping, 2 ready, 3 failed

extern void *__libc_stack_end;

int hg_trace_depth = HG_TRACE_DEPTH;

static int depot_ready(void)
{
	int s = atomic_load_explicit(&depot_state, memory_order_acquire);
	if (s >= 2)
		return s == 2;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&depot_state, &zero, 1))
		return 0;	// another thread maps it; this trace goes unrecorded
	traces = hg_reserve(DEPOT_TRACES * sizeof(struct trace), PROT_READ | PROT_WRITE);
	index_area = hg_reserve(2 * (LAST_SLOTS * sizeof(uint32_t) + sizeof(struct index)), PROT_READ | PROT_WRITE);
	if (index_area) {
		struct index *first = (struct index *)index_area;
		first->mask = FIRST_SLOTS - 1;
		atomic_store(&trace_index, first);
	}
	atomic_store_explicit(&depot_state, traces && index_area ? 2 : 3, memory_order_release);
	return traces && index_area;
}

// The calling thread's stack top, once found (a call per malloc costs).
static __thread uintptr_t thread_top __attribute__((tls_model("initial-exec")));

static int below(uintptr_t sp, uintptr_t top)
{
	return sp < top && top - sp < (64UL << 20);
}

// The top of the calling thread's stack, or 0 when the stack is not one
// whose bounds are known (an alternate signal stack, a coroutine's).
static uintptr_t stack_top(uintptr_t sp)
{
	if (below(sp, thread_top))
		return thread_top;
	uintptr_t main_top = (uintptr_t)__libc_stack_end;
	// glibc puts a thread's descriptor right above its stack.
	uintptr_t self = (uintptr_t)pthread_self();
	uintptr_t top = below(sp, main_top) ? main_top : below(sp, self) ? self : 0;
	if (top)
		thread_top = top;
	return top;
}

// A trace's hash: a sum of each frame times a constant of its position,
// summed as the stack is walked (in registers: reloading the frames from
// memory cost 15 % of a malloc and free pair), then mixed.
static const uint64_t position[HG_TRACE_DEPTH] = {
	0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL, 0x165667b19e3779f9ULL, 0xd6e8feb86659fd93ULL,
	0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL, 0x94d049bb133111ebULL, 0xbf58476d1ce4e5b9ULL,
};

static uint64_t mix(uint64_t h)
{
	return (h ^ h >> 31) | 2;
}

// place puts trace id (with hash h) in idx; 0 if its probe run is full.
static int place(struct index *idx, uint64_t h, uint32_t id)
{
	for (uint32_t i = 0, s = (uint32_t)h & idx->mask; i < 64; i++, s = (s + 1) & idx->mask) {
		uint32_t empty = 0;
		if (atomic_compare_exchange_strong(&idx->slot[s], &empty, id + 1))
			return 1;
	}
	return 0;
}

// grow moves the index to a table twice its size, if no other thread is.
static void grow(struct index *old)
{
	if (old->mask + 1 >= LAST_SLOTS || atomic_exchange(&growing, 1))
		return;
	if (atomic_load(&trace_index) == old) {
		struct index *new = (struct index *)&old->slot[old->mask + 1];
		new->mask = old->mask * 2 + 1;
		for (uint32_t s = 0; s <= old->mask; s++) {
			uint32_t id = atomic_load(&old->slot[s]);
			if (id)
				place(new, traces[id - 1].hash, id - 1);
		}
		atomic_store_explicit(&trace_index, new, memory_order_release);
	}
	atomic_store(&growing, 0);
}

// intern returns the id of trace pc (depth frames, the process's), whose
// hash is h, storing it if new. Only depth frames are compared: the
// process records no more, and the rest of every stored trace is zero.
static inline __attribute__((always_inline)) uint32_t intern(const uintptr_t *pc, uint64_t h, int depth)
{
	uint32_t mine = DEPOT_TRACES;
	struct index *idx = atomic_load_explicit(&trace_index, memory_order_acquire);
	for (uint32_t i = 0, s = (uint32_t)h & idx->mask; i < 64; i++, s = (s + 1) & idx->mask) {
		uint32_t slot = atomic_load_explicit(&idx->slot[s], memory_order_acquire);
		if (slot == 0) {
			if (mine == DEPOT_TRACES) {
				mine = atomic_fetch_add(&trace_count, 1);
				if (mine >= DEPOT_TRACES)
					return DEPOT_TRACES;	// full: the site is unknown
				traces[mine].hash = h;
				memset(traces[mine].pc, 0, sizeof traces[mine].pc);
				memcpy(traces[mine].pc, pc, (size_t)depth * sizeof *pc);
			}
			if (atomic_compare_exchange_strong_explicit(&idx->slot[s], &slot, mine + 1,
								    memory_order_release, memory_order_acquire)) {
				if (mine * 2 > idx->mask)
					grow(idx);
				return mine;
			}
		}
		// Taken, by this trace (return it) or another (probe on).
		const struct trace *t = &traces[slot - 1];
		if (t->hash == h && memcmp(t->pc, pc, (size_t)depth * sizeof *pc) == 0)
			return slot - 1;
	}
	return DEPOT_TRACES;
}

// A thread's memo of recent traces, by the sum the walk computes: a trace
// found there costs the walk and one load, where the depot needs the hash
// mixed, then its index slot, then the trace (loads each waiting for the
// last: most of a lookup's time). An entry is the whole 64-bit sum and the
// id, 16 bytes, so that the memo stays in the cache between allocations
// of a program that streams through fresh memory: entries holding the
// frames themselves (40 bytes in deferred mode, 72 in strict) made the
// entry's load, a cache miss, binary-trees' hottest instruction.
// The sum stands for the frames: two traces whose sums agree in all 64
// bits (each frame times its own odd constant) would share an id, and a
// report would name the other's site. Keyed by the whole trace, not its
// first frame: a program's hot call sites are many (gcc inlines
// binary-trees' recursive allocation into some 200), and the traces of one
// site reached through different callers would take turns in one entry.
// 1,024 entries (16 KiB a thread): binary-trees' 246 traces collided in
// 256, missing one lookup in six. Deferred binary-trees 23.4 -> 20.8 ms
// of CPU (glibc 9.7; docs/PERFORMANCE.md, sixth pass).
#define MEMO_BITS 10
#define MEMO (1u << MEMO_BITS)
struct memo {
	uint64_t sum;
	uint32_t id;
};
static __thread struct memo memo[MEMO] __attribute__((tls_model("initial-exec")));

// walk records depth frames from frame (see hg_trace_here). Inlined once
// per mode's depth, so that the loop has a constant bound: a malloc and
// free pair 1-2 ns cheaper in deferred mode.
static inline __attribute__((always_inline)) uint32_t walk(void *frame, int depth)
{
	uintptr_t pc[HG_TRACE_DEPTH] = {0};
	uintptr_t fp = (uintptr_t)frame, lo = (uintptr_t)__builtin_frame_address(0);
	uintptr_t hi = stack_top(lo);
	pc[0] = ((uintptr_t *)fp)[1];
	uint64_t h = pc[0] * position[0];
	for (int i = 1; i < depth && hi; i++) {
		uintptr_t next = ((uintptr_t *)fp)[0];
		if (next <= fp || next > hi - 16 || next % 8)
			break;
		fp = next;
		pc[i] = ((uintptr_t *)fp)[1];
		h += pc[i] * position[i];
	}
	// The sum's top bits depend on every frame (odd multipliers).
	struct memo *m = &memo[h >> (64 - MEMO_BITS)];
	if (m->sum == h)
		return m->id;
	uint32_t id = intern(pc, mix(h), depth);
	if (id != DEPOT_TRACES) {
		m->sum = h;
		m->id = id;
	}
	return id;
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
	return hg_trace_depth == HD_TRACE_DEPTH ? walk(frame, HD_TRACE_DEPTH) : walk(frame, HG_TRACE_DEPTH);
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
