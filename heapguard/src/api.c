// The allocator's entry points, interposed on glibc's by LD_PRELOAD.
// Every one passes its own frame, so the recorded site is its caller's.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "internal.h"

#define API __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static int ours(uintptr_t a)
{
	return (hg.small && hg_in_small(a)) || (hg.large && hg_in_large(a)) || hd_owns(a);
}

// guarded_alloc makes an object of size bytes in room bytes or more (room
// >= size).
static void *guarded_alloc(size_t size, size_t room, size_t align, uint32_t trace)
{
	if (hg_mode == HG_DEFERRED)
		return hd_alloc(size, room, align, trace);
	int cls = hg_small_class(room, align);
	return cls >= 0 ? hg_small_alloc(cls, size, trace) : hg_large_alloc(size, align, trace);
}

// Growth (strict mode, where each move of realloc is a revocation): the
// sites whose small objects realloc grows past their class get that much
// room from the start. sqlite3 makes 16-byte objects it grows to 40 bytes:
// 30,000 moves, 12 % of its CPU time. Kept per allocation site and class
// of the requested size (hashed; a collision only misplaces room), as a
// score: a growth adds GROWTH_CREDIT, an object made with room takes 1,
// so that at most GROWTH_CREDIT objects get room per object seen growing.
// A site most of whose objects do not grow (Python's allocator wraps
// malloc, so all its objects share a few sites) stops getting it: memory
// and the fresh frames room takes cost more than the rare moves.
#define GROWTH_BITS 12
#define GROWTH_CREDIT 8
#define GROWTH_MAX 1024
static struct growth {
	atomic_int score;
	atomic_uint to;		// the size an object made here last grew to
} growth[1u << GROWTH_BITS];

static struct growth *growth_of(uint32_t site, int cls)
{
	uint32_t h = (site * HG_CLASSES + (uint32_t)cls) * 0x9e3779b9u;
	return &growth[h >> (32 - GROWTH_BITS)];
}

// strict_room returns the room a strict-mode object of size bytes made at
// site gets.
static size_t strict_room(size_t size, size_t room, size_t align, uint32_t site)
{
	int cls = hg_small_class(size, align);
	if (cls < 0)
		return room;
	struct growth *g = growth_of(site, cls);
	size_t to = atomic_load_explicit(&g->to, memory_order_relaxed);
	int score = atomic_load_explicit(&g->score, memory_order_relaxed);
	if (score <= 0 || to <= room || to > 4 * size)
		return room;
	atomic_store_explicit(&g->score, score - 1, memory_order_relaxed);
	return to;
}

// strict_grew notes that realloc grows a strict-mode object made at site,
// of requested size was, to size bytes: past its request's class, it
// credits the site. Not past the small classes: room there would make a
// small object a large one, fresh pages of its own.
static void strict_grew(uint32_t site, size_t was, size_t size)
{
	int cls = hg_small_class(was, 16);
	if (cls < 0 || size <= hg_class_size[cls] || size > HG_SMALL_MAX)
		return;
	struct growth *g = growth_of(site, cls);
	int score = atomic_load_explicit(&g->score, memory_order_relaxed) + GROWTH_CREDIT;
	atomic_store_explicit(&g->score, score < GROWTH_MAX ? score : GROWTH_MAX, memory_order_relaxed);
	atomic_store_explicit(&g->to, (unsigned)size, memory_order_relaxed);
}

// alloc_in makes an object of size bytes in room bytes or more.
static void *alloc_in(size_t size, size_t room, size_t align, void *frame)
{
	hg_init();
	if (!atomic_load_explicit(&hg.fallback, memory_order_relaxed)) {
		uint32_t trace = hg_trace_here(frame);
		if (hg_mode == HG_STRICT)
			room = strict_room(size, room, align, trace);
		void *p = guarded_alloc(size, room, align, trace);
		if (p || !atomic_load(&hg.fallback)) {
			if (!p)
				errno = ENOMEM;
			return p;
		}
	}
	return align <= 16 ? __libc_malloc(size) : __libc_memalign(align, size);
}

static void *alloc(size_t size, size_t align, void *frame)
{
	return alloc_in(size, size, align, frame);
}

// realloc_room: the room a small object that realloc moves gets: twice
// what is asked, so that an object grown step by step (a string, a vector)
// moves half as often; each move costs a revocation in strict mode, and a
// copy and fresh memory in deferred mode.
static size_t realloc_room(size_t size)
{
	size_t most = hg_mode == HG_DEFERRED ? HD_SMALL_MAX : HG_SMALL_MAX;
	if (size > most)
		return size;
	return size * 2 < most ? size * 2 : most;
}

// strict_realloc notes, before realloc grows strict-mode object p to size
// bytes, which site made it and what it asked for (a record's alloc is
// the trace id + 1, with the class above bit 24: small.c, large.c).
static void strict_realloc(void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p, start;
	const struct hg_record *r = hg.small && hg_in_small(a) ? hg_small_record(a) : hg_large_find(a, &start);
	if (r)
		strict_grew((atomic_load(&r->alloc) - 1) & 0xffffff, r->size, size);
}

static void release(void *p, void *frame)
{
	uintptr_t a = (uintptr_t)p;
	hg_init();
	if (hg.small && hg_in_small(a))
		hg_small_free(p, hg_trace_here(frame));
	else if (hg.large && hg_in_large(a))
		hg_large_free(p, hg_trace_here(frame));
	else if (hd_owns(a))
		hd_free(p, hg_trace_here(frame));
	else if (atomic_load(&hg.fallback))
		__libc_free(p);
	else
		hg_report_free_error("invalid free (not a heap pointer)", p, NULL, hg_trace_here(frame));
}

// usable returns p's usable size, reporting p if it is not a live object;
// the stack is walked only for a report (redis asks for every object it
// makes and frees).
static size_t usable(void *p, void *frame)
{
	uintptr_t a = (uintptr_t)p;
	if (hg.small && hg_in_small(a))
		return hg_small_usable(p, frame);
	if (hd_owns(a))
		return hd_usable(p, frame);
	return hg_large_usable(p, frame);
}

static int power_of_two(size_t x)
{
	return x && !(x & (x - 1));
}

API void *malloc(size_t size)
{
	return alloc(size, 16, __builtin_frame_address(0));
}

API void free(void *p)
{
	if (p)
		release(p, __builtin_frame_address(0));
}

API void *calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc(total, 16, __builtin_frame_address(0));
	// Large objects are always fresh pages, already zero; frames of small
	// ones are reused (strict), or may have been written past the end of a
	// neighbour (deferred).
	if (p && !(hg.large && hg_in_large((uintptr_t)p)) && !(hd_owns((uintptr_t)p) && hd_fresh(p)))
		memset(p, 0, total);
	return p;
}

API void *realloc(void *p, size_t size)
{
	void *frame = __builtin_frame_address(0);
	if (!p)
		return alloc(size, 16, frame);
	if (size == 0) {
		release(p, frame);
		return NULL;
	}
	hg_init();
	if (!ours((uintptr_t)p))
		return __libc_realloc(p, size);
	size_t old = usable(p, frame);
	if (hg_mode == HG_STRICT)
		strict_realloc(p, size);
	if (size <= old || (hd_owns((uintptr_t)p) && hd_grow(p, size)))
		return p;
	void *q = alloc_in(size, realloc_room(size), 16, frame);
	if (q) {
		memcpy(q, p, old);
		release(p, frame);
	}
	return q;
}

API void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

API int posix_memalign(void **out, size_t align, size_t size)
{
	if (!power_of_two(align) || align % sizeof(void *))
		return EINVAL;
	void *p = alloc(size, align, __builtin_frame_address(0));
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

API void *aligned_alloc(size_t align, size_t size)
{
	if (!power_of_two(align)) {
		errno = EINVAL;
		return NULL;
	}
	return alloc(size, align, __builtin_frame_address(0));
}

// memalign, like glibc's, rounds a bad alignment up to a power of two.
API void *memalign(size_t align, size_t size)
{
	if (align > ((size_t)1 << 62)) {
		errno = EINVAL;
		return NULL;
	}
	size_t a = 16;
	while (a < align)
		a <<= 1;
	return alloc(size, a, __builtin_frame_address(0));
}

API void *valloc(size_t size)
{
	return alloc(size, HG_PAGE, __builtin_frame_address(0));
}

API void *pvalloc(size_t size)
{
	size_t rounded;
	if (__builtin_add_overflow(size, HG_PAGE - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	return alloc(rounded & ~(HG_PAGE - 1), HG_PAGE, __builtin_frame_address(0));
}

API size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	hg_init();
	if (ours((uintptr_t)p))
		return usable(p, __builtin_frame_address(0));
	// A glibc object (after a fallback): ask glibc's own function.
	size_t (*next)(void *) = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	return next ? next(p) : 0;
}
