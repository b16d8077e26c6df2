// Deferred mode: objects above HD_SMALL_MAX bytes take fresh pages of the
// large region, in address order, never again. A freed one is dead at once:
// big ones are revoked then and there, the others join the batch.
#define _GNU_SOURCE
#include <sys/mman.h>

#include "internal.h"

static struct hd_large_rec *record_at(uintptr_t off)
{
	return &hd.large_rec[off / HG_PAGE];
}

static size_t pages_of(uint64_t size)
{
	return (size + HG_PAGE - 1) / HG_PAGE;
}

void *hd_large_alloc(size_t size, size_t align, uint32_t trace)
{
	if (align < HG_PAGE)
		align = HG_PAGE;
	size_t pages = pages_of(size);
	if (pages == 0 || pages > HD_REGION / HG_PAGE)
		return NULL;
	unsigned long top = atomic_load(&hd.large.top), start;
	do {
		start = (top + align - 1) & ~(align - 1);
		if (start + pages * HG_PAGE > HD_REGION) {
			hg_fallback("the deferred heap's large-object address space is exhausted");
			return NULL;
		}
	} while (!atomic_compare_exchange_weak(&hd.large.top, &top, start + pages * HG_PAGE));
	atomic_fetch_add(&hd.pages_out, (start - top) / HG_PAGE + pages);
	if (start > top)
		hd_never_used(&hd.large, top, (start - top) / HG_PAGE);
	struct hd_large_rec *rec = record_at(start);
	rec->size = size;
	atomic_store_explicit(&rec->ids, hd_pack(trace + 1, 0, 0), memory_order_release);
	return hd.large.base + start;
}

// large_record checks that p is a large object's address: its record, or
// NULL.
static struct hd_large_rec *large_record(uintptr_t a)
{
	uintptr_t off = a - (uintptr_t)hd.large.base;
	if (a % HG_PAGE || off >= atomic_load(&hd.large.top))
		return NULL;
	struct hd_large_rec *rec = record_at(off);
	return atomic_load_explicit(&rec->ids, memory_order_acquire) & HD_ID_MASK ? rec : NULL;
}

static struct hg_found found(uintptr_t start, const struct hd_large_rec *rec)
{
	uint64_t ids = atomic_load(&rec->ids);
	return (struct hg_found){
		.start = start,
		.size = rec->size,
		.alloc = (uint32_t)(ids & HD_ID_MASK),
		.freed = (uint32_t)(ids >> 21 & HD_ID_MASK),
	};
}

void hd_large_free(void *p, uint32_t trace)
{
	uintptr_t a = (uintptr_t)p;
	struct hd_large_rec *rec = large_record(a);
	if (!rec)
		hg_report_free_error("invalid free (not an object's address)", p, NULL, trace);
	uint64_t ids = atomic_load(&rec->ids);
	if ((ids >> 21 & HD_ID_MASK) ||
	    !atomic_compare_exchange_strong(&rec->ids, &ids, ids | (uint64_t)(trace + 1) << 21)) {
		struct hg_found f = found(a, rec);
		hg_report_free_error("double free", p, &f, trace);
	}
	size_t pages = pages_of(rec->size);
	uintptr_t off = a - (uintptr_t)hd.large.base;
	if (pages * HG_PAGE >= HD_EAGER_BYTES)
		hd_dead_now(&hd.large, off, pages);
	else
		hd_dead(&hd.large, off, pages);
}

// hd_large_grow: hd_grow for the large region. p is a live object (realloc
// checked it).
int hd_large_grow(void *p, size_t size)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)hd.large.base;
	struct hd_large_rec *rec = record_at(off);
	unsigned long end = off + pages_of(rec->size) * HG_PAGE, grown = off + pages_of(size) * HG_PAGE;
	if (grown > HD_REGION || !atomic_compare_exchange_strong(&hd.large.top, &end, grown))
		return 0;
	atomic_fetch_add(&hd.pages_out, (grown - off) / HG_PAGE - pages_of(rec->size));
	rec->size = size;
	return 1;
}

// hd_large_usable checks that p is a live object, as free does.
size_t hd_large_usable(const void *p, void *frame)
{
	struct hd_large_rec *rec = large_record((uintptr_t)p);
	if (!rec)
		hg_report_free_error("invalid pointer (not an object's address)", p, NULL, hg_trace_here(frame));
	struct hg_found f = found((uintptr_t)p, rec);
	if (f.freed)
		hg_report_free_error("use of a freed object's address", p, &f, hg_trace_here(frame));
	return pages_of(rec->size) * HG_PAGE;
}

// hd_large_find: hd_find for the large region. The object is the nearest
// record at or below a's page (pages inside an object have none).
int hd_large_find(uintptr_t a, struct hg_found *f)
{
	if (!hd.large.base || a - (uintptr_t)hd.large.base >= atomic_load(&hd.large.top))
		return 0;
	uintptr_t off = (a - (uintptr_t)hd.large.base) & ~(HG_PAGE - 1);
	if (atomic_load(&hd.large.blocks[off / HD_BLOCK].forgotten))
		return -1;
	for (int i = 0; i < (1 << 20); i++, off -= HG_PAGE) {
		const struct hd_large_rec *rec = record_at(off);
		if (atomic_load(&rec->ids) & HD_ID_MASK) {
			if (a >= (uintptr_t)hd.large.base + off + pages_of(rec->size) * HG_PAGE)
				return 0;
			*f = found((uintptr_t)hd.large.base + off, rec);
			return 1;
		}
		if (off == 0)
			return 0;
		if (atomic_load(&hd.large.blocks[(off - HG_PAGE) / HD_BLOCK].forgotten))
			return -1;
	}
	return 0;
}
