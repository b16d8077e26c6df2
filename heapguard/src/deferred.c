// Deferred mode: small objects. A thread carves each class from its own
// 64 KiB span in address order and never hands a slot out twice; a page
// whose slots are all dead goes to the batch (batch.c). The design and its
// measurements are in heapguard/README.md.
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/single_threaded.h>

#include "internal.h"

struct hd_state hd;

// Classes: 16-byte steps to 128, then four per power of two (at most 25 %
// of a slot is lost to rounding).
static const uint16_t class_size[HD_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256,
	320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 14336, 16384,
};

// slot = offset * class_magic >> 32 for every offset in a span: the error
// of the rounded reciprocal (< 2^16 / 2^32) never reaches 1 / size.
static uint64_t class_magic[HD_CLASSES];

struct class_cache {
	char *next, *end;		// the slots left in the current span
	char *ready;			// pages up to here populated, or left to fault
	atomic_uint_least64_t *rec;	// next's record
	unsigned ahead;			// pages populated at its last page crossing
};

struct thread_cache {
	int registered;
	int last_cross;			// the class + 1 that last crossed a page
	struct class_cache c[HD_CLASSES];
};

static __thread struct thread_cache cache __attribute__((tls_model("initial-exec")));

static void *reserve(size_t len)
{
	return hg_reserve(len, PROT_READ | PROT_WRITE);
}

int hd_start(void)
{
	for (int c = 0; c < HD_CLASSES; c++)
		class_magic[c] = ((1ULL << 32) / class_size[c]) + 1;
	hd.small.base = reserve(HD_REGION);
	hd.large.base = reserve(HD_REGION);
	hd.small.blocks = reserve(HD_BLOCKS * sizeof(struct hd_block));
	hd.large.blocks = reserve(HD_BLOCKS * sizeof(struct hd_block));
	hd.spans = reserve(HD_REGION / HD_SPAN * sizeof(struct hd_span));
	hd.small_rec = reserve(HD_BLOCKS * HD_REC_BLOCK);
	hd.rec_users = reserve(HD_BLOCKS * HD_REC_BLOCK / HG_PAGE);
	hd.large_rec = reserve(HD_REGION / HG_PAGE * sizeof(struct hd_large_rec));
	return hd.small.base && hd.large.base && hd.small.blocks && hd.large.blocks && hd.spans &&
			       hd.small_rec && hd.rec_users && hd.large_rec
		       ? 0
		       : -1;
}

static int class_of(size_t size, size_t align)
{
	if (size < align)
		size = align;
	if (size > HD_SMALL_MAX)
		return -1;
	int c;
	if (size <= 128) {
		c = (int)((size + 15) / 16) - 1;
	} else {
		size_t s = size - 1;
		int lg = 63 - __builtin_clzl(s);
		c = 8 + (lg - 7) * 4 + (int)((s >> (lg - 2)) & 3);
	}
	// Every slot of a class lies at a multiple of its size in an aligned
	// span: a class whose size align divides keeps the alignment. align is
	// a power of two (the entry points see to it), so a mask tests that: a
	// division here cost 60 % of hd_alloc's samples on binary-trees.
	for (; c < HD_CLASSES; c++)
		if (!(class_size[c] & (align - 1)))
			return c;
	return -1;
}

static atomic_uint_least64_t *records(const struct hd_span *s, uintptr_t off)
{
	return (atomic_uint_least64_t *)((char *)hd.small_rec + off / HD_BLOCK * HD_REC_BLOCK + s->rec_off);
}

// counts[p]: how many of a span's slots first..last-1 (of size bytes)
// touch its page p.
static void slots_per_page(unsigned size, unsigned first, unsigned last, uint16_t counts[HD_SPAN_PAGES])
{
	for (unsigned p = 0; p < HD_SPAN_PAGES; p++) {
		unsigned lo = (unsigned)(p * HG_PAGE / size), hi = (unsigned)(((p + 1) * HG_PAGE - 1) / size) + 1;
		if (lo < first)
			lo = first;
		if (hi > last)
			hi = last;
		counts[p] = hi > lo ? (uint16_t)(hi - lo) : 0;
	}
}

// new_span hands the thread a new span for class cls (its first pages
// perhaps mapped already: recycle.c).
static int new_span(struct class_cache *cc, int cls)
{
	unsigned filled;
	uintptr_t off = hd_next_span(&filled);
	if (off + HD_SPAN > HD_REGION) {
		hg_fallback("the deferred heap's small-object address space is exhausted");
		return 0;
	}
	atomic_fetch_add(&hd.pages_out, HD_SPAN_PAGES);
	unsigned size = class_size[cls], slots = (unsigned)(HD_SPAN / size);
	struct hd_span *s = &hd.spans[off / HD_SPAN];
	s->rec_off = hd_records_for(off, slots);
	s->slots = (uint16_t)slots;
	uint16_t counts[HD_SPAN_PAGES];
	slots_per_page(size, 0, slots, counts);
	unsigned empty = 0;
	for (unsigned p = 0; p < HD_SPAN_PAGES; p++) {
		atomic_store_explicit(&s->live[p], counts[p], memory_order_relaxed);
		empty += counts[p] == 0;
	}
	atomic_store_explicit(&s->cls, (uint8_t)(cls + 1), memory_order_release);
	// Pages past the last slot (large classes) are dead from the start;
	// those mapped already are revoked (and recycled).
	unsigned tail = HD_SPAN_PAGES - empty, mapped = filled > tail ? filled : tail;
	if (mapped > tail)
		hd_dead(&hd.small, off + tail * HG_PAGE, mapped - tail);
	if (mapped < HD_SPAN_PAGES)
		hd_never_used(&hd.small, off + mapped * HG_PAGE, HD_SPAN_PAGES - mapped);
	cc->next = hd.small.base + off;
	cc->ready = cc->next + (size_t)filled * HG_PAGE;
	cc->end = cc->next + slots * size;
	cc->rec = records(s, off);
	if (!cache.registered) {
		cache.registered = 1;
		hg_thread_registered(&cache);
	}
	return 1;
}

// Populating ahead. A fresh page costs a fault, 2.8 us on this VM, where
// MADV_POPULATE_WRITE costs 1.4-1.6 us a page over many
// (bench/heapguard/primitives). A class whose slots cross page after page,
// with no other class of the thread crossing one in between, populates the
// pages it will reach next with one call, twice as many each time
// (AHEAD_MAX at most, within its span); other classes fault as before. A
// thread holds at most AHEAD_BUDGET populated pages not reached yet:
// beyond it, those that other classes hold (a class the program stopped
// using) are released first. Such pages hold no object: no pointer can
// reach them. Only classes of up to a page, every page of which holds an
// object's start, populate ahead: a program that writes to the objects it
// makes touches each of their pages anyway, while the tails of bigger
// objects (buffers) may never be touched.
#define AHEAD_MAX 16
#define AHEAD_BUDGET 16
#define AHEAD_CLASS_MAX HG_PAGE

static char *page_up(const char *p)
{
	return (char *)(((uintptr_t)p + HG_PAGE - 1) & ~(HG_PAGE - 1));
}

// ahead_of: the populated pages class cache cc holds beyond its next slot.
static size_t ahead_of(const struct class_cache *cc)
{
	char *reached = page_up(cc->next);
	return cc->ready > reached ? (size_t)(cc->ready - reached) / HG_PAGE : 0;
}

// make_room releases the pages other classes than cls hold ahead, if
// adding more would exceed the thread's budget.
static void make_room(int cls, size_t more)
{
	size_t held = 0;
	for (int c = 0; c < HD_CLASSES; c++)
		if (c != cls)
			held += ahead_of(&cache.c[c]);
	if (held + more <= AHEAD_BUDGET)
		return;
	for (int c = 0; c < HD_CLASSES; c++) {
		struct class_cache *o = &cache.c[c];
		if (c == cls || !ahead_of(o))
			continue;
		char *reached = page_up(o->next);
		madvise(reached, (size_t)(o->ready - reached), MADV_DONTNEED);
		o->ready = reached;
		o->ahead = 0;
	}
}

// cross readies the pages the slot just handed out (ending at cc->next)
// reaches beyond cc->ready.
static void cross(struct class_cache *cc, int cls)
{
	char *need = page_up(cc->next), *limit = page_up(cc->end);
	unsigned k = 0;
	if (cache.last_cross == cls + 1 && class_size[cls] <= AHEAD_CLASS_MAX)
		k = cc->ahead ? cc->ahead * 2 : 2;
	cache.last_cross = cls + 1;
	cc->ahead = k < AHEAD_MAX ? k : AHEAD_MAX;
	char *to = cc->ready + (size_t)cc->ahead * HG_PAGE;
	if (to < need)
		to = need;
	if (to > limit)
		to = limit;
	if (cc->ahead && to > need) {
		make_room(cls, (size_t)(to - need) / HG_PAGE);
		madvise(cc->ready, (size_t)(to - cc->ready), MADV_POPULATE_WRITE);
	}
	cc->ready = to;
}

static void *small_alloc(int cls, size_t size, uint32_t trace)
{
	struct class_cache *cc = &cache.c[cls];
	if (cc->next == cc->end && !new_span(cc, cls))
		return NULL;
	char *p = cc->next;
	cc->next += class_size[cls];
	if (__builtin_expect(cc->next > cc->ready, 0))
		cross(cc, cls);
	atomic_store_explicit(cc->rec++, hd_pack(trace + 1, 0, size), memory_order_relaxed);
	return p;
}

// pages_lose takes counts[p] slots off each page of the span at off; the
// pages left with none are dead. untouched: pages from which no slot was
// handed out, which no pointer can reach and need no revocation.
static void pages_lose(uintptr_t off, const uint16_t counts[HD_SPAN_PAGES], unsigned untouched_from)
{
	struct hd_span *s = &hd.spans[off / HD_SPAN];
	for (unsigned p = 0; p < HD_SPAN_PAGES; p++) {
		if (!counts[p] || atomic_fetch_sub(&s->live[p], counts[p]) != counts[p])
			continue;
		if (p >= untouched_from)
			hd_never_used(&hd.small, off + p * HG_PAGE, 1);
		else
			hd_dead(&hd.small, off + p * HG_PAGE, 1);
	}
}

// While the process has one thread, nothing can race a free: glibc's
// __libc_single_threaded turns false before a second thread starts (and
// never back), and what the one thread stored is visible to the threads it
// starts. Plain loads and stores then do what a locked instruction does
// for threads: the record's claim and the page's count were 10 ns of a
// 55 ns malloc and free pair (bench/heapguard/pairs.c).

// claim sets the free trace of record rec, which held r (no free trace);
// 0 if another thread's free claimed it first.
static int claim(atomic_uint_least64_t *rec, uint64_t r, uint32_t trace)
{
	uint64_t freed = r | (uint64_t)(trace + 1) << 21;
	if (__libc_single_threaded) {
		atomic_store_explicit(rec, freed, memory_order_relaxed);
		return 1;
	}
	return atomic_compare_exchange_strong(rec, &r, freed);
}

// page_loses takes a slot off a page's count; 1 if it was its last.
static int page_loses(atomic_ushort *live)
{
	if (__libc_single_threaded) {
		uint16_t n = (uint16_t)(atomic_load_explicit(live, memory_order_relaxed) - 1);
		atomic_store_explicit(live, n, memory_order_relaxed);
		return n == 0;
	}
	return atomic_fetch_sub(live, 1) == 1;
}

// The slot at offset in (of the span at off) is dead.
static void slot_dead(uintptr_t off, uintptr_t in, unsigned size)
{
	struct hd_span *s = &hd.spans[off / HD_SPAN];
	for (uintptr_t p = in / HG_PAGE; p <= (in + size - 1) / HG_PAGE; p++)
		if (page_loses(&s->live[p]))
			hd_dead(&hd.small, off + p * HG_PAGE, 1);
}

// small_slot finds the slot p names: 0 and its record, or -1 with
// *why set if p is not an object's address. Inlined into free: a call
// there cost 3 ns of a 43 ns malloc and free pair.
static inline __attribute__((always_inline)) atomic_uint_least64_t *small_slot(uintptr_t a, const char **why,
									      uintptr_t *in_out)
{
	uintptr_t rel = a - (uintptr_t)hd.small.base, off = rel & ~(HD_SPAN - 1), in = rel & (HD_SPAN - 1);
	*why = "invalid free (not an object's address)";
	if (rel >= atomic_load(&hd.small.top))
		return NULL;
	const struct hd_span *s = &hd.spans[rel / HD_SPAN];
	uint8_t cls = atomic_load_explicit(&s->cls, memory_order_acquire);
	if (!cls)
		return NULL;
	uint64_t slot = in * class_magic[cls - 1] >> 32;
	if (slot >= s->slots)
		return NULL;
	atomic_uint_least64_t *rec = records(s, off) + slot;
	if (!(atomic_load_explicit(rec, memory_order_relaxed) & HD_ID_MASK))
		return NULL;
	*in_out = in;
	if (slot * class_size[cls - 1] != in) {
		*why = "invalid free (pointer inside an object)";
		return rec;
	}
	*why = NULL;
	return rec;
}

static struct hg_found small_found(uintptr_t a, uint64_t r)
{
	uintptr_t rel = a - (uintptr_t)hd.small.base, in = rel & (HD_SPAN - 1);
	const struct hd_span *s = &hd.spans[rel / HD_SPAN];
	unsigned size = class_size[s->cls - 1];
	return (struct hg_found){
		.start = a - in % size,
		.size = r >> 42,
		.alloc = (uint32_t)(r & HD_ID_MASK),
		.freed = (uint32_t)(r >> 21 & HD_ID_MASK),
	};
}

static void small_free(void *p, uint32_t trace)
{
	uintptr_t a = (uintptr_t)p, in;
	const char *why;
	atomic_uint_least64_t *rec = small_slot(a, &why, &in);
	if (!rec)
		hg_report_free_error(why, p, NULL, trace);
	uint64_t r = atomic_load_explicit(rec, memory_order_relaxed);
	if (why || (r >> 21 & HD_ID_MASK) || !claim(rec, r, trace)) {
		struct hg_found f = small_found(a, atomic_load(rec));
		hg_report_free_error(why ? why : "double free", p, &f, trace);
	}
	uintptr_t rel = a - (uintptr_t)hd.small.base;
	slot_dead(rel & ~(HD_SPAN - 1), in, class_size[hd.spans[rel / HD_SPAN].cls - 1]);
}

// A thread's spans would never finish after it exits: the slots it did not
// hand out are dead.
void hd_thread_exit(void *unused)
{
	(void)unused;
	for (int c = 0; c < HD_CLASSES; c++) {
		struct class_cache *cc = &cache.c[c];
		if (cc->next == cc->end)
			continue;
		uintptr_t rel = (uintptr_t)(cc->next - hd.small.base), off = rel & ~(HD_SPAN - 1);
		unsigned size = class_size[c], in = (unsigned)(rel - off);
		uint16_t counts[HD_SPAN_PAGES];
		slots_per_page(size, in / size, (unsigned)(HD_SPAN / size), counts);
		cc->next = cc->end;
		// Pages populated ahead are revoked like dead ones, which frees them.
		pages_lose(off, counts, (unsigned)((uintptr_t)(cc->ready - hd.small.base) - off) / HG_PAGE);
	}
	cache.registered = 0;
}

// hd_alloc makes an object of size bytes in room bytes or more.
void *hd_alloc(size_t size, size_t room, size_t align, uint32_t trace)
{
	int cls = class_of(room, align);
	return cls >= 0 ? small_alloc(cls, size, trace) : hd_large_alloc(size, align, trace);
}

static int in_small(uintptr_t a)
{
	return hd.small.base && a - (uintptr_t)hd.small.base < HD_REGION;
}

void hd_free(void *p, uint32_t trace)
{
	if (in_small((uintptr_t)p))
		small_free(p, trace);
	else
		hd_large_free(p, trace);
}

// hd_usable checks that p is a live object, as free does (frame: the
// entry point's, for a report).
size_t hd_usable(const void *p, void *frame)
{
	uintptr_t a = (uintptr_t)p, in;
	if (!in_small(a))
		return hd_large_usable(p, frame);
	const char *why;
	atomic_uint_least64_t *rec = small_slot(a, &why, &in);
	if (!rec || why)
		hg_report_free_error("invalid pointer (not an object's address)", p, NULL, hg_trace_here(frame));
	struct hg_found f = small_found(a, atomic_load(rec));
	if (f.freed)
		hg_report_free_error("use of a freed object's address", p, &f, hg_trace_here(frame));
	return class_size[hd.spans[(a - (uintptr_t)hd.small.base) / HD_SPAN].cls - 1];
}

// hd_grow grows p in place to size bytes, if it can: a large object that
// ends where the large region's top is (what realloc of the last object
// made asks, again and again) takes the fresh pages after it.
int hd_grow(void *p, size_t size)
{
	return !in_small((uintptr_t)p) && hd_large_grow(p, size);
}

// hd_fresh tells whether p is made of pages never handed out before (zero).
int hd_fresh(const void *p)
{
	return !in_small((uintptr_t)p);
}

// hd_find fills f with the object a lies in: 1 if found, -1 if a lies in
// deferred memory whose records were dropped, 0 if a is not the heap's.
int hd_find(uintptr_t a, struct hg_found *f)
{
	if (!in_small(a))
		return hd_large_find(a, f);
	uintptr_t rel = a - (uintptr_t)hd.small.base;
	if (rel >= atomic_load(&hd.small.top))
		return 0;
	if (atomic_load(&hd.small.blocks[rel / HD_BLOCK].forgotten))
		return -1;
	const struct hd_span *s = &hd.spans[rel / HD_SPAN];
	if (atomic_load(&s->forgotten))
		return -1;
	if (!s->cls)
		return 0;
	uint64_t slot = (rel & (HD_SPAN - 1)) * class_magic[s->cls - 1] >> 32;
	if (slot >= s->slots)
		return 0;
	uint64_t r = atomic_load(records(s, rel & ~(HD_SPAN - 1)) + slot);
	if (!(r & HD_ID_MASK))
		return 0;
	*f = small_found(a, r);
	return 1;
}
