// Objects above HG_SMALL_MAX: fresh pages of a private region, handed out
// in address order and never again. Private memory needs no aliasing and is
// copied on write by fork like any heap.
#define _GNU_SOURCE
#include <sys/mman.h>

#include "internal.h"

static inline struct hg_record *record_at(uintptr_t a)
{
	return &hg.large_rec[(a - (uintptr_t)hg.large) / HG_PAGE];
}

void *hg_large_alloc(size_t size, size_t align, uint32_t trace)
{
	if (align < HG_PAGE)
		align = HG_PAGE;
	size_t pages = (size + HG_PAGE - 1) / HG_PAGE;
	if (pages == 0 || pages > HG_LARGE_SPAN / HG_PAGE)
		return NULL;
	size_t len = pages * HG_PAGE;
	// Under the lock, so that no block is released between the move of
	// the top past it and the count of this object in it.
	hg_lock();
	unsigned long top = atomic_load(&hg.large_top);
	unsigned long start = (top + align - 1) & ~(align - 1);
	if (start + len > HG_LARGE_SPAN) {
		hg_unlock();
		hg_fallback("the guarded heap's large-object address space is exhausted");
		return NULL;
	}
	atomic_store(&hg.large_top, start + len);
	for (uintptr_t b = start / HG_LARGE_BLOCK; b <= (start + len - 1) / HG_LARGE_BLOCK; b++)
		atomic_fetch_add(&hg.large_live[b], 1);
	for (uintptr_t b = top / HG_LARGE_BLOCK; b < (start + len) / HG_LARGE_BLOCK; b++)
		hg_block_maybe_release(b);	// closed now; perhaps already dead
	hg_unlock();
	char *p = hg.large + start;
	if (len <= HG_POPULATE_MAX)
		madvise(p, len, MADV_POPULATE_WRITE);
	struct hg_record *rec = record_at((uintptr_t)p);
	// The size is only reported; the pages are what is freed.
	rec->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	rec->extent = (uint32_t)pages;
	atomic_store_explicit(&rec->alloc, ((uint32_t)0xff << 24 | trace) + 1, memory_order_release);
	return p;
}

void hg_large_free(void *p, uint32_t trace)
{
	uintptr_t a = (uintptr_t)p;
	struct hg_record *rec = record_at(a);
	if (a % HG_PAGE != 0 || a - (uintptr_t)hg.large >= atomic_load(&hg.large_top) ||
	    atomic_load_explicit(&rec->alloc, memory_order_acquire) == 0)
		hg_report_free_error("invalid free (not an object's address)", p, NULL, trace);
	uint32_t live = 0;
	if (!atomic_compare_exchange_strong(&rec->freed, &live, trace + 1))
		hg_report_record_error("double free", p, rec, trace);
	// Revoking also releases the pages.
	size_t len = (size_t)rec->extent * HG_PAGE;
	hg_revoke(p, len);
	uintptr_t off = a - (uintptr_t)hg.large;
	for (uintptr_t b = off / HG_LARGE_BLOCK; b <= (off + len - 1) / HG_LARGE_BLOCK; b++)
		if (atomic_fetch_sub(&hg.large_live[b], 1) == 1) {
			hg_lock();
			hg_block_maybe_release(b);
			hg_unlock();
		}
}

// hg_large_usable checks that p is a live object, as free does.
size_t hg_large_usable(const void *p, void *frame)
{
	uintptr_t a = (uintptr_t)p;
	struct hg_record *rec = record_at(a);
	if (a % HG_PAGE != 0 || a - (uintptr_t)hg.large >= atomic_load(&hg.large_top) ||
	    atomic_load_explicit(&rec->alloc, memory_order_acquire) == 0)
		hg_report_free_error("invalid pointer (not an object's address)", p, NULL, hg_trace_here(frame));
	if (atomic_load(&rec->freed))
		hg_report_record_error("use of a freed object's address", p, rec, hg_trace_here(frame));
	return (size_t)rec->extent * HG_PAGE;
}

// The object holding addr: the nearest record at or below its page (pages
// inside an object have none); NULL if addr lies past that object.
struct hg_record *hg_large_find(uintptr_t addr, uintptr_t *start)
{
	uintptr_t a = addr & ~(HG_PAGE - 1);
	for (int i = 0; i < (1 << 20) && hg_in_large(a); i++, a -= HG_PAGE) {
		struct hg_record *rec = record_at(a);
		if (atomic_load(&rec->alloc) == 0)
			continue;
		if (addr >= a + (uintptr_t)rec->extent * HG_PAGE)
			return NULL;
		*start = a;
		return rec;
	}
	return NULL;
}
