// Deferred mode: where small objects' records live, and how long they are
// kept. A span whose pages are all dead, and a released large block, keep
// their records (the sites a report names) while the records kept fit in a
// sixteenth of the live heap (internal.h); then the oldest are dropped.
// Everything here runs under the lock (hd_records_for takes it).
#define _GNU_SOURCE
#include <sys/mman.h>

#include "internal.h"

// Dead spans (and released large blocks) whose records are kept, oldest
// first.
#define RETAIN_MAX 4096
enum { SMALL_SPAN, LARGE_BLOCK };
static struct {
	uint8_t kind;
	uint32_t index;
	uint32_t bytes;
} retained[RETAIN_MAX];
static unsigned retain_head, retain_n;
static size_t retain_bytes;

static void drop(void *at, size_t len)
{
	madvise(at, len, MADV_DONTNEED);
}

// drop_table drops block b's part (per bytes a block, from base) of a table
// of region r: the whole 2 MiB piece around it when every block the piece
// serves is forgotten (its page-table page goes too: hg_drop), else b's
// part alone.
static void drop_table(char *base, size_t per, const struct hd_region *r, uint32_t b)
{
	uint32_t n = (uint32_t)(HG_PMD / per), first = b / n * n;
	for (uint32_t k = first; k < first + n; k++)
		if (!atomic_load(&r->blocks[k].forgotten)) {
			drop(base + (size_t)b * per, per);
			return;
		}
	hg_drop(base + (size_t)first * per, HG_PMD);
}

// Spans' records are packed in their block's record area in the order the
// spans were made; a page of it is dropped when no span it holds records
// of is left unforgotten (rec_users counts them) and the area has grown
// past it. Both happen under the lock.
#define REC_PAGES (HD_REC_BLOCK / HG_PAGE)

static size_t span_record_bytes(const struct hd_span *s)
{
	return (size_t)s->slots * 8;
}

static uint8_t *rec_users_of(uintptr_t off)
{
	return &hd.rec_users[off / HD_BLOCK * REC_PAGES];
}

// hd_records_for places the records of a span of slots slots at offset off
// in its block's record area.
uint32_t hd_records_for(uintptr_t off, unsigned slots)
{
	hg_lock();
	atomic_uint *used = &hd.small.blocks[off / HD_BLOCK].rec_used;
	uint32_t start = atomic_load(used), end = start + slots * 8;
	atomic_store(used, end);
	uint8_t *users = rec_users_of(off);
	for (uint32_t pg = start / HG_PAGE; pg <= (end - 1) / HG_PAGE; pg++)
		users[pg]++;
	hg_unlock();
	return start;
}

// forget_records drops the pages only forgotten spans' records used, each
// run of adjacent ones with one call (a span of 16-byte objects has 8
// pages of records: binary-trees made 1,257 calls a page at a time).
static void forget_records(uintptr_t off, const struct hd_span *s)
{
	uint8_t *users = rec_users_of(off);
	uint32_t used = atomic_load(&hd.small.blocks[off / HD_BLOCK].rec_used);
	char *area = (char *)hd.small_rec + off / HD_BLOCK * HD_REC_BLOCK;
	uint32_t from = 0, n = 0;	// the run of pages to drop
	for (uint32_t pg = s->rec_off / HG_PAGE; pg <= (s->rec_off + s->slots * 8 - 1) / HG_PAGE; pg++) {
		if (--users[pg] != 0 || used < (pg + 1) * HG_PAGE)
			continue;
		if (n && from + n != pg) {
			drop(area + (size_t)from * HG_PAGE, (size_t)n * HG_PAGE);
			n = 0;
		}
		if (!n)
			from = pg;
		n++;
	}
	if (n)
		drop(area + (size_t)from * HG_PAGE, (size_t)n * HG_PAGE);
}

// drop_span_table drops the pages of span entries that only blocks whose
// records are all forgotten use. (Their page-table pages stay: one per
// 1,489 blocks, 3 GiB of small objects.)
static void drop_span_table(uint32_t b)
{
	uintptr_t per = HD_BLOCK / HD_SPAN * sizeof(struct hd_span);
	uintptr_t lo = ((uintptr_t)b * per) & ~(HG_PAGE - 1), hi = ((uintptr_t)b + 1) * per;
	for (uintptr_t pg = lo; pg < hi; pg += HG_PAGE) {
		int all = 1;
		for (uintptr_t k = pg / per; k <= (pg + HG_PAGE - 1) / per && all; k++)
			all = atomic_load(&hd.small.blocks[k].forgotten);
		if (all)
			drop((char *)hd.spans + pg, HG_PAGE);
	}
}

static void forget_span(uint32_t i)
{
	struct hd_span *s = &hd.spans[i];
	uintptr_t off = (uintptr_t)i * HD_SPAN;
	struct hd_block *b = &hd.small.blocks[off / HD_BLOCK];
	atomic_store(&s->forgotten, 1);
	forget_records(off, s);
	if (atomic_fetch_add(&b->spans_forgotten, 1) + 1 == HD_BLOCK / HD_SPAN) {
		atomic_store(&b->forgotten, 1);
		drop_table((char *)hd.small_rec, HD_REC_BLOCK, &hd.small, (uint32_t)(off / HD_BLOCK));
		drop_span_table((uint32_t)(off / HD_BLOCK));
	}
}

// forget drops the oldest retained records.
static void forget(void)
{
	uint32_t i = retained[retain_head].index;
	if (retained[retain_head].kind == SMALL_SPAN) {
		forget_span(i);
	} else {
		atomic_store(&hd.large.blocks[i].forgotten, 1);
		drop_table((char *)hd.large_rec, HD_BLOCK_PAGES * sizeof(struct hd_large_rec), &hd.large, i);
	}
	retain_bytes -= retained[retain_head].bytes;
	retain_head = (retain_head + 1) % RETAIN_MAX;
	retain_n--;
}

static size_t retain_limit(void)
{
	size_t live = (atomic_load(&hd.pages_out) - atomic_load(&hd.pages_dead)) * HG_PAGE / HD_RETAIN_SHARE;
	return live < HD_RETAIN_MIN ? HD_RETAIN_MIN : live > HD_RETAIN_MAX ? HD_RETAIN_MAX : live;
}

static void retain(uint8_t kind, uint32_t index, size_t bytes)
{
	if (retain_n == RETAIN_MAX)
		forget();
	unsigned at = (retain_head + retain_n++) % RETAIN_MAX;
	retained[at].kind = kind;
	retained[at].index = index;
	retained[at].bytes = (uint32_t)bytes;
	retain_bytes += bytes;
	while (retain_bytes > retain_limit() && retain_n > 1)
		forget();
}

// hd_retain_span keeps dead span i's records for a while.
void hd_retain_span(uint32_t i)
{
	retain(SMALL_SPAN, i, span_record_bytes(&hd.spans[i]));
}

// hd_retain_block keeps released large block b's records for a while.
void hd_retain_block(uint32_t b)
{
	retain(LARGE_BLOCK, b, HD_BLOCK_PAGES * sizeof(struct hd_large_rec));
}
