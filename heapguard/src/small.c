// Objects of up to HG_SMALL_MAX bytes: many share a frame of the memfd,
// each through its own alias page, which is revoked when it is freed.
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>

#include "internal.h"

const uint16_t hg_class_size[HG_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256,
	320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096,
};

// Run sizes in frames. A thread starts each class with a small run, so
// that a program using a class a little commits little memory, and grows
// it so that busy classes populate long rows with one call.
static const uint16_t run_frames[3] = {2, 8, 32};

struct class_cache {
	struct hg_run *run;
	uint32_t row, col;
	uint8_t next_size;
};

struct thread_cache {
	int registered;
	struct class_cache c[HG_CLASSES];
};

static __thread struct thread_cache cache __attribute__((tls_model("initial-exec")));

static inline char *alias(unsigned w, uint32_t frame)
{
	return hg.small + w * HG_FILE + (uintptr_t)frame * HG_PAGE;
}

int hg_small_class(size_t size, size_t align)
{
	if (size < align)
		size = align;
	if (size > HG_SMALL_MAX)
		return -1;
	// Classes are ordered; the first that fits and keeps every slot
	// (a multiple of its size from a page boundary) aligned (align is a
	// power of two: a mask, not a division).
	int lo = size <= 128 ? (int)((size + 15) / 16) - 1 : 8;
	for (int c = lo; c < HG_CLASSES; c++)
		if (hg_class_size[c] >= size && !(hg_class_size[c] & (align - 1)))
			return c;
	return -1;
}

// Map windows up to (not including) upto; the global lock is held.
int hg_small_map_windows(unsigned upto)
{
	unsigned have = atomic_load(&hg.windows);
	for (unsigned w = have; w < upto; w++) {
		void *p = mmap(hg.small + w * HG_FILE, HG_FILE, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, hg.memfd, 0);
		if (p == MAP_FAILED)
			return -1;
		atomic_store(&hg.windows, w + 1);
	}
	return 0;
}

// retire releases a run's frames for good: none of its aliases can be
// handed out again. The global lock is held.
static void retire(struct hg_run *r)
{
	r->retired = 1;
	int taken = hg_revoke_lock();
	fallocate(hg.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)r->frame * HG_PAGE, (off_t)r->nframes * HG_PAGE);
	hg_revoke_unlock(taken);
	hg.chunks[r->frame / HG_CHUNK_FRAMES].retired++;
	hg_chunk_maybe_release(r->frame / HG_CHUNK_FRAMES);
}

// new_run takes a recycled run of the wanted size, or frames never used.
static struct hg_run *new_run(int cls, int size_index)
{
	unsigned slots = HG_PAGE / hg_class_size[cls];
	uint32_t nframes = run_frames[size_index];
	hg_lock();
	struct hg_run *r;
	// A recycled run serves if the windows left above it hold a slot each;
	// one that cannot is retired rather than kept for a class it might fit.
	while ((r = hg.free_runs[size_index]) && r->w0 + slots > HG_WINDOWS) {
		hg.free_runs[size_index] = r->next;
		hg.free_count[size_index]--;
		retire(r);
	}
	if (r) {
		hg.free_runs[size_index] = r->next;
		hg.free_count[size_index]--;
	} else if (((hg.frame_top + nframes - 1) & ~(nframes - 1)) + nframes <= HG_FRAMES) {
		// Aligned to its size, a run never straddles two chunks.
		uint32_t f = (hg.frame_top + nframes - 1) & ~(nframes - 1);
		uint32_t last_chunk = hg.frame_top ? (hg.frame_top - 1) / HG_CHUNK_FRAMES : 0;
		hg.frame_top = f + nframes;
		hg.chunks[f / HG_CHUNK_FRAMES].runs++;
		if (f / HG_CHUNK_FRAMES != last_chunk)
			hg_chunk_maybe_release(last_chunk);
		r = &hg.runs[f / 2];
		r->frame = f;
		r->nframes = nframes;
		r->w0 = 0;
		for (uint32_t g = 0; g < nframes / 2; g++)
			hg.owner[f / 2 + g] = f / 2;
	} else {
		hg_unlock();
		hg_fallback("the guarded heap's frames are exhausted");
		return NULL;
	}
	if (hg_small_map_windows(r->w0 + slots) != 0) {
		r->next = hg.free_runs[size_index];
		hg.free_runs[size_index] = r;
		hg.free_count[size_index]++;
		hg_unlock();
		hg_fallback("cannot map another heap window (vm.max_map_count or address space)");
		return NULL;
	}
	r->slots = slots;
	r->cls = cls + 1;
	atomic_store(&r->pending, (int)(slots * r->nframes));
	hg_unlock();
	return r;
}

static int size_index_of(const struct hg_run *r)
{
	return r->nframes == run_frames[0] ? 0 : r->nframes == run_frames[1] ? 1 : 2;
}

// A generation is over: every slot is dead. Its frames wait for the next
// generation in higher windows, or are released for good: when no window
// is left, and when enough runs already wait (parked frames hold memory
// and keep their chunk from being released).
#define MAX_PARKED 4
static void recycle(struct hg_run *r)
{
	hg_lock();
	r->w0 += r->slots;
	r->cls = 0;
	int i = size_index_of(r);
	if (r->w0 >= HG_WINDOWS || hg.free_count[i] >= MAX_PARKED) {
		retire(r);
	} else {
		r->next = hg.free_runs[i];
		hg.free_runs[i] = r;
		hg.free_count[i]++;
	}
	hg_unlock();
}

static void finish_slots(struct hg_run *r, int n)
{
	if (atomic_fetch_sub(&r->pending, n) == n)
		recycle(r);
}

void *hg_small_alloc(int cls, size_t size, uint32_t trace)
{
	struct class_cache *cc = &cache.c[cls];
	if (!cc->run) {
		int si = cc->next_size;
		cc->run = new_run(cls, si);
		if (!cc->run)
			return NULL;
		cc->row = cc->col = 0;
		cc->next_size = si < 2 ? si + 1 : 2;
		if (!cache.registered) {
			cache.registered = 1;
			hg_thread_registered(&cache);
		}
	}
	struct hg_run *r = cc->run;
	unsigned w = r->w0 + cc->row;
	uint32_t frame = r->frame + cc->col;
	if (cc->col == 0)
		// One call maps the whole row: a fault per object costs more.
		// READ, not WRITE: the windows are shared and shmem needs no
		// write notification, so a read maps the page writable, and it
		// maps 16 pages per fault (fault-around) wherever the frames are
		// already in the file (every row but a run's first), where WRITE
		// takes a fault per page. Fault-around never maps over a guard
		// marker, so any alias it maps beside the row has not been handed
		// out yet (one handed out is still mapped, or guarded).
		madvise(alias(w, r->frame), r->nframes * HG_PAGE, MADV_POPULATE_READ);
	uint32_t off = cc->row * hg_class_size[cls];
	struct hg_record *rec = hg_record_of(w, frame);
	rec->size = (uint32_t)size;
	rec->extent = off;
	atomic_store_explicit(&rec->alloc, ((uint32_t)cls << 24 | trace) + 1, memory_order_release);
	if (++cc->col == r->nframes) {
		cc->col = 0;
		if (++cc->row == r->slots)
			cc->run = NULL;
	}
	return alias(w, frame) + off;
}

struct hg_record *hg_small_record(uintptr_t addr)
{
	uintptr_t rel = addr - (uintptr_t)hg.small;
	return hg_record_of(rel / HG_FILE, (rel % HG_FILE) / HG_PAGE);
}

static struct hg_run *run_of(uint32_t frame)
{
	return &hg.runs[hg.owner[frame / 2]];
}

void hg_small_free(void *p, uint32_t trace)
{
	uintptr_t a = (uintptr_t)p, rel = a - (uintptr_t)hg.small;
	unsigned w = rel / HG_FILE;
	uint32_t frame = (rel % HG_FILE) / HG_PAGE;
	struct hg_record *rec = hg_record_of(w, frame);
	if (w >= atomic_load(&hg.windows) ||
	    atomic_load_explicit(&rec->alloc, memory_order_acquire) == 0)
		hg_report_free_error("invalid free (not an object's address)", p, NULL, trace);
	if (a % HG_PAGE != rec->extent)
		hg_report_record_error("invalid free (pointer inside an object)", p, rec, trace);
	uint32_t live = 0;
	if (!atomic_compare_exchange_strong(&rec->freed, &live, trace + 1))
		hg_report_record_error("double free", p, rec, trace);
	hg_revoke((void *)(a & ~(HG_PAGE - 1)), HG_PAGE);
	finish_slots(run_of(frame), 1);
}

// hg_small_usable checks that p is a live object, as free does.
size_t hg_small_usable(const void *p, void *frame)
{
	struct hg_record *rec = hg_small_record((uintptr_t)p);
	uint32_t alloc = atomic_load_explicit(&rec->alloc, memory_order_acquire);
	if (alloc == 0 || (uintptr_t)p % HG_PAGE != rec->extent)
		hg_report_free_error("invalid pointer (not an object's address)", p, NULL, hg_trace_here(frame));
	if (atomic_load(&rec->freed))
		hg_report_record_error("use of a freed object's address", p, rec, hg_trace_here(frame));
	return hg_class_size[(alloc - 1) >> 24];
}

// A thread's runs would never finish their generation after it exits:
// count the slots it will not hand out as dead, and revoke the ones of the
// row already mapped.
void hg_thread_exit(void *unused)
{
	(void)unused;
	for (int c = 0; c < HG_CLASSES; c++) {
		struct class_cache *cc = &cache.c[c];
		struct hg_run *r = cc->run;
		if (!r)
			continue;
		cc->run = NULL;
		if (cc->col)
			hg_revoke(alias(r->w0 + cc->row, r->frame + cc->col),
				  (r->nframes - cc->col) * HG_PAGE);
		int left = (int)((r->slots - cc->row) * r->nframes - cc->col);
		finish_slots(r, left);
	}
	cache.registered = 0;
}
