// Declarations shared by the heap guard's files. The design, and the
// measurements it rests on, are in heapguard/README.md.
#ifndef HEAPGUARD_INTERNAL_H
#define HEAPGUARD_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HG_PAGE 4096UL
// What one page-table page maps.
#define HG_PMD (2UL << 20)
// MADV_GUARD_INSTALL (Linux 6.13; on shared memfd mappings since 6.15):
// the page faults from now on, without splitting the VMA.
#define HG_MADV_GUARD_INSTALL 102

// The small-object heap is one memfd of HG_FILE bytes (its frames), mapped
// HG_WINDOWS times side by side; a window is one VMA. An object's alias is
// the page of one window over its frame; every alias is handed out once.
#define HG_FILE (32UL << 30)
#define HG_FRAMES (HG_FILE / HG_PAGE)
#define HG_WINDOWS 256UL
// Page tables and records are released a chunk at a time: the frames one
// page-table page covers in a window (2 MiB).
#define HG_CHUNK_FRAMES 512
#define HG_CHUNKS (HG_FRAMES / HG_CHUNK_FRAMES)
#define HG_SMALL_MAX 4096UL
#define HG_CLASSES 28
// Objects above HG_SMALL_MAX get fresh pages of a private region.
#define HG_LARGE_SPAN (8UL << 40)
// The large region is released in blocks, each when all its objects are
// dead (release.c).
#define HG_LARGE_BLOCK (2UL << 20)
#define HG_LARGE_BLOCKS (HG_LARGE_SPAN / HG_LARGE_BLOCK)
#define HG_BLOCK_RELEASED INT32_MIN
// Large objects up to this size are populated in one call at allocation
// rather than by one fault per page.
#define HG_POPULATE_MAX (64UL << 10)

// Frames recorded per site: strict mode records HG_TRACE_DEPTH, deferred
// mode HD_TRACE_DEPTH (the walk and the lookup cost in every malloc and
// free, which deferred mode must keep near glibc's; heapguard/README.md).
#define HG_TRACE_DEPTH 8
#define HD_TRACE_DEPTH 4

// A run: consecutive frames that hold objects of one class and live and die
// together. Slot s of frame f of the current generation is the page of
// window w0+s over frame f, so one row (a slot index over all frames) is
// contiguous in one window and is populated by one call.
struct hg_run {
	uint32_t frame;		// first frame
	uint16_t nframes;
	uint16_t w0;
	uint16_t slots;		// slots per frame in this generation
	uint8_t cls;		// class + 1 of this generation; 0 when free
	uint8_t retired;
	atomic_int pending;	// slots of this generation not yet dead
	struct hg_run *next;	// free list
};

// What is known about every object ever handed out, kept until the memory
// around it is released (release.c): by alias page (small) or first page
// (large).
struct hg_record {
	atomic_uint_least32_t alloc;	// trace id + 1; 0: never allocated
	atomic_uint_least32_t freed;	// trace id + 1; 0: live
	uint32_t size;			// requested size
	uint32_t extent;		// small: offset in its page; large: pages
};

// A chunk's runs, and whether its page tables and records are released.
struct hg_chunk {
	uint16_t runs, retired;
	uint8_t released;
};

struct hg_state {
	char *small;			// HG_WINDOWS windows of HG_FILE bytes
	char *large;			// HG_LARGE_SPAN bytes, private
	int memfd;
	atomic_uint windows;		// windows mapped so far
	uint32_t frame_top;		// frames handed to runs so far
	atomic_ulong large_top;		// bytes of the large region handed out (lock)
	struct hg_run *runs;		// indexed by first frame / 2
	uint32_t *owner;		// frame / 2 -> run index
	struct hg_run *free_runs[3];	// by size index
	int free_count[3];
	struct hg_record *small_rec;	// by alias: hg_record_of
	struct hg_record *large_rec;	// by page of the large region
	atomic_int *large_live;		// objects per large block
	atomic_int fallback;		// 1: new objects come from glibc
	struct hg_chunk chunks[HG_CHUNKS];
	int islands;			// runs of released chunks
};

extern struct hg_state hg;
extern const uint16_t hg_class_size[HG_CLASSES];

// The guard's two modes, chosen once per process by SYSCELL_HEAPGUARD
// (init.c): strict (the default) revokes every object when it is freed;
// deferred never reuses an address and revokes memory in batches once
// every object in it is dead (deferred.c, batch.c).
enum hg_mode { HG_STRICT, HG_DEFERRED };
extern int hg_mode;

// What is known of the object an address belongs to, whichever the mode:
// where it starts, its requested size and its trace ids + 1 (0: none).
struct hg_found {
	uintptr_t start;
	uint64_t size;
	uint32_t alloc, freed;
};

// init.c
extern atomic_int hg_ready;
void hg_start(void);

// hg_init starts the guard on first use; inline, since every malloc and
// free asks.
static inline void hg_init(void)
{
	if (__builtin_expect(atomic_load_explicit(&hg_ready, memory_order_acquire) != 2, 0))
		hg_start();
}

void *hg_reserve(size_t len, int prot);
void hg_drop(void *p, size_t len);
void hg_fallback(const char *why);
void hg_thread_registered(void *cache);

// lock.c: the global lock, the revocation lock (taken after the global
// lock when both are); hg_lock_reset frees both in a forked child.
void hg_lock(void);
void hg_unlock(void);
int hg_revoke_lock(void);
void hg_revoke_unlock(int taken);
void hg_lock_reset(void);

// small.c
int hg_small_class(size_t size, size_t align);
void *hg_small_alloc(int cls, size_t size, uint32_t trace);
void hg_small_free(void *p, uint32_t trace);
size_t hg_small_usable(const void *p, void *frame);
int hg_small_map_windows(unsigned upto);
void hg_thread_exit(void *unused);
struct hg_record *hg_small_record(uintptr_t addr);

// large.c
void *hg_large_alloc(size_t size, size_t align, uint32_t trace);
void hg_large_free(void *p, uint32_t trace);
size_t hg_large_usable(const void *p, void *frame);
struct hg_record *hg_large_find(uintptr_t addr, uintptr_t *start);

// The record of alias (window w, frame). Records are laid out by chunk,
// then by group of 16 windows, then by frame, then by window: a small heap
// whose few frames go through every window, and a large one whose many
// frames use a few windows each, both fill the pages they touch; and a
// chunk's records are one block, released at once.
#define HG_REC_GROUP 16
static inline struct hg_record *hg_record_of(unsigned w, uint32_t frame)
{
	uintptr_t chunk = frame / HG_CHUNK_FRAMES, in_chunk = frame % HG_CHUNK_FRAMES;
	uintptr_t group = w / HG_REC_GROUP;
	return &hg.small_rec[((chunk * (HG_WINDOWS / HG_REC_GROUP) + group) * HG_CHUNK_FRAMES + in_chunk) *
				     HG_REC_GROUP + w % HG_REC_GROUP];
}

static inline int hg_in_small(uintptr_t a)
{
	return a - (uintptr_t)hg.small < HG_WINDOWS * HG_FILE;
}

static inline int hg_in_large(uintptr_t a)
{
	return a - (uintptr_t)hg.large < HG_LARGE_SPAN;
}

// revoke.c
void hg_revoke(void *page, size_t len);

// release.c
void hg_chunk_maybe_release(uint32_t chunk);
void hg_block_maybe_release(uintptr_t block);
int hg_block_released(uintptr_t addr);
int hg_chunk_unmap(uint32_t chunk, unsigned w);

// trace.c
extern int hg_trace_depth;
uint32_t hg_trace_here(void *frame);
int hg_trace_get(uint32_t id, uintptr_t out[HG_TRACE_DEPTH]);

// report.c
void hg_install_fault_handler(void);
__attribute__((noreturn)) void hg_report_free_error(const char *what, const void *p,
						     const struct hg_found *f, uint32_t trace);
__attribute__((noreturn)) void hg_report_record_error(const char *what, const void *p,
						       const struct hg_record *r, uint32_t trace);
__attribute__((noreturn)) void hg_die(const char *what);
void hg_say(const char *msg);

// fork.c
void hg_install_fork_handlers(void);

// Deferred mode. Small objects (up to HD_SMALL_MAX bytes, 36 classes) are
// carved, each class in address order, from 64 KiB spans that threads take
// from one region; larger ones take fresh pages of another. Neither region
// ever hands an address out twice. A page whose objects are all freed is
// dead: it waits in a batch (at most HD_BATCH_BYTES, HD_BATCH_RANGES
// ranges), which is revoked at once when full. Both regions are accounted
// in 2 MiB blocks; a block whose pages are all dead is replaced by a
// PROT_NONE mapping (its page tables freed). The records of a span (or of
// a released large block) whose pages are all dead are kept while the dead
// records kept fit in 1/HD_RETAIN_SHARE of the live heap (at least
// HD_RETAIN_MIN, at most HD_RETAIN_MAX bytes): a small program keeps few.
#define HD_SPAN (64UL << 10)
#define HD_SPAN_PAGES (HD_SPAN / HG_PAGE)
#define HD_BLOCK (2UL << 20)
#define HD_BLOCK_PAGES (HD_BLOCK / HG_PAGE)
#define HD_REGION (16UL << 40)
#define HD_BLOCKS (HD_REGION / HD_BLOCK)
#define HD_SMALL_MAX 16384UL
#define HD_CLASSES 36
// A block's small records: 8 bytes for each of at most HD_BLOCK / 16 objects.
#define HD_REC_BLOCK (HD_BLOCK / 16 * 8)
#define HD_BATCH_BYTES (64UL << 10)
#define HD_BATCH_RANGES 64
// Large objects of this size or more are revoked when freed, as glibc
// unmaps its own mmapped chunks.
#define HD_EAGER_BYTES (128UL << 10)
#define HD_RETAIN_SHARE 16
#define HD_RETAIN_MIN (32UL << 10)
#define HD_RETAIN_MAX (4UL << 20)

struct hd_span {
	atomic_uchar cls;	// class + 1; 0: not handed out
	atomic_uchar dead;	// pages revoked, or never to be handed out
	atomic_uchar forgotten;	// its records dropped
	uint16_t slots;
	uint32_t rec_off;	// its records' offset in its block's record area
	atomic_ushort live[HD_SPAN_PAGES];	// per page: slots touching it not dead
};

// A 2 MiB block of a region.
struct hd_block {
	atomic_uint dead;	// pages revoked, or never to be handed out
	atomic_uint rec_used;	// small region: bytes of its record area in use
	atomic_uint spans_forgotten;
	atomic_uchar released;	// replaced by PROT_NONE
	atomic_uchar forgotten;	// its records dropped (small: every span's)
};

struct hd_region {
	char *base;
	struct hd_block *blocks;
	atomic_ulong top;	// bytes handed out
};

// A large object's record, at its first page.
struct hd_large_rec {
	atomic_uint_least64_t ids;
	uint64_t size;
};

struct hd_state {
	struct hd_region small, large;
	atomic_ulong pages_out;			// pages handed out, both regions
	atomic_ulong pages_dead;		// of which dead
	struct hd_span *spans;
	atomic_uint_least64_t *small_rec;	// HD_REC_BLOCK bytes per small block
	uint8_t *rec_users;			// per page of small_rec (batch.c)
	struct hd_large_rec *large_rec;		// by page of the large region
};

extern struct hd_state hd;

// A small record: alloc and free trace ids + 1 (21 bits each), requested size.
#define HD_ID_MASK ((1ULL << 21) - 1)
static inline uint64_t hd_pack(uint32_t alloc, uint32_t freed, uint64_t size)
{
	return (uint64_t)alloc | (uint64_t)freed << 21 | size << 42;
}

static inline int hd_owns(uintptr_t a)
{
	return (hd.small.base && a - (uintptr_t)hd.small.base < HD_REGION) ||
	       (hd.large.base && a - (uintptr_t)hd.large.base < HD_REGION);
}

// deferred.c
int hd_start(void);
void *hd_alloc(size_t size, size_t room, size_t align, uint32_t trace);
int hd_grow(void *p, size_t size);
void hd_free(void *p, uint32_t trace);
size_t hd_usable(const void *p, void *frame);
int hd_fresh(const void *p);
void hd_thread_exit(void *unused);
int hd_find(uintptr_t a, struct hg_found *f);

// deferred_large.c
void *hd_large_alloc(size_t size, size_t align, uint32_t trace);
void hd_large_free(void *p, uint32_t trace);
size_t hd_large_usable(const void *p, void *frame);
int hd_large_grow(void *p, size_t size);
int hd_large_find(uintptr_t a, struct hg_found *f);

// retain.c
uint32_t hd_records_for(uintptr_t off, unsigned slots);
void hd_retain_span(uint32_t i);
void hd_retain_block(uint32_t b);

// batch.c
void hd_dead(struct hd_region *r, uintptr_t off, size_t pages);
void hd_dead_now(struct hd_region *r, uintptr_t off, size_t pages);
void hd_never_used(struct hd_region *r, uintptr_t off, size_t pages);
void hd_install_fork_handlers(void);

// recycle.c
void hd_recycle(uintptr_t off, size_t pages, pid_t pid);
uintptr_t hd_next_span(unsigned *filled);

#endif
