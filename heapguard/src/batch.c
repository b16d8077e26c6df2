// Deferred mode: dead memory. A page whose objects are all freed, or a
// freed large object's pages, wait in the batch; when it holds
// HD_BATCH_RANGES ranges or HD_BATCH_BYTES bytes, all of it is revoked at
// once: sorted, adjacent ranges merged, freed and marked to fault by one
// call each over all of them. That batch is the bound on how long freed
// memory stays readable once nothing in it is alive.
//
// Revoked pages count toward their span and their 2 MiB block; a block
// whose pages are all dead is released: a PROT_NONE mapping over it frees
// its page tables and keeps its addresses reserved and faulting. A dead
// span's records go to retain.c.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

struct range {
	struct hd_region *r;
	uintptr_t off;
	size_t pages;
};

static struct range batch[HD_BATCH_RANGES];
static int batch_n;
static size_t batch_bytes;

// Each run of released blocks splits its region's VMA in two more: beyond
// this many runs, blocks keep their guard markers instead (only page
// tables are at stake), leaving the program most of vm.max_map_count.
#define MAX_ISLANDS 8192
static int islands;

// piece: how many pages from off (of left) lie in off's block.
static size_t piece(uintptr_t off, size_t left)
{
	size_t n = (off / HD_BLOCK + 1) * HD_BLOCK_PAGES - off / HG_PAGE;
	return n < left ? n : left;
}

static int released(const struct hd_region *r, int64_t b)
{
	return b >= 0 && b < (int64_t)HD_BLOCKS && atomic_load(&r->blocks[b].released);
}

// release replaces block b, every page of it dead, by PROT_NONE; 0 if it
// cannot (the block keeps its guard markers, which fault all the same).
static int release(struct hd_region *r, uint32_t b)
{
	int delta = 1 - released(r, (int64_t)b - 1) - released(r, (int64_t)b + 1);
	if (islands + delta > MAX_ISLANDS)
		return 0;
	if (mmap(r->base + (uintptr_t)b * HD_BLOCK, HD_BLOCK, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
		return 0;
	islands += delta;
	atomic_store(&r->blocks[b].released, 1);
	if (r == &hd.large)
		hd_retain_block(b);
	return 1;
}

// count_span_pages adds dead pages of the small region to their spans; a
// span whose pages are all dead has its records retained.
static void count_span_pages(uintptr_t off, size_t pages)
{
	while (pages) {
		struct hd_span *s = &hd.spans[off / HD_SPAN];
		size_t n = HD_SPAN_PAGES - off % HD_SPAN / HG_PAGE;
		if (n > pages)
			n = pages;
		if (atomic_fetch_add(&s->dead, (uint8_t)n) + n == HD_SPAN_PAGES)
			hd_retain_span((uint32_t)(off / HD_SPAN));
		off += n * HG_PAGE;
		pages -= n;
	}
}

// count_dead adds pages, revoked or never used, to their spans and blocks.
// The lock is held.
static void count_dead(struct hd_region *r, uintptr_t off, size_t pages)
{
	atomic_fetch_add(&hd.pages_dead, pages);
	if (r == &hd.small)
		count_span_pages(off, pages);
	for (size_t n; pages; off += n * HG_PAGE, pages -= n) {
		n = piece(off, pages);
		if (atomic_fetch_add(&r->blocks[off / HD_BLOCK].dead, (unsigned)n) + n == HD_BLOCK_PAGES)
			release(r, (uint32_t)(off / HD_BLOCK));
	}
}

// Whole blocks are released rather than revoked page by page: the
// PROT_NONE mapping faults too, and saves the markers.
static int whole_block(uintptr_t off, size_t pages)
{
	return off % HD_BLOCK == 0 && pages == HD_BLOCK_PAGES;
}

// release_piece releases a whole dead block (the lock is held); 0 if the
// piece is not one, or the block cannot be.
static int release_piece(struct hd_region *r, uintptr_t off, size_t pages)
{
	if (!whole_block(off, pages) || !release(r, (uint32_t)(off / HD_BLOCK)))
		return 0;
	atomic_fetch_add(&hd.pages_dead, pages);
	atomic_store(&r->blocks[off / HD_BLOCK].dead, HD_BLOCK_PAGES);
	if (r == &hd.small)
		count_span_pages(off, pages);
	return 1;
}

// A descriptor of this process for process_madvise, with the process it
// was opened in: a forked child must not advise its parent's memory.
static int self_fd = -1;
static pid_t self_pid;

static int self(pid_t pid)
{
	if (self_fd >= 0 && self_pid != pid) {
		close(self_fd);
		self_fd = -1;
	}
	if (self_fd < 0) {
		self_fd = (int)syscall(SYS_pidfd_open, pid, 0);
		self_pid = pid;
	}
	return self_fd;
}

// refused: process_madvise is not to be had (an old kernel, or a policy
// that denies it); not asked again.
static int refused;

static int advise_all(const struct iovec *iov, int n, size_t bytes, int advice, pid_t pid)
{
	if (refused || self(pid) < 0)
		return 0;
	long done = syscall(SYS_process_madvise, self_fd, iov, (size_t)n, advice, 0);
	refused = done < 0 && (errno == ENOSYS || errno == EPERM || errno == EINVAL);
	return done == (long)bytes;
}

// revoke_all revokes scattered dead ranges. One MADV_GUARD_INSTALL per
// range flushes the TLB once per range (an IPI to every CPU running one of
// the program's threads); freeing them all first with one MADV_DONTNEED
// call flushes once, after which installing the markers on empty pages
// flushes nothing: 2 to 5 times cheaper (heapguard/README.md). Where
// process_madvise cannot, ranges are revoked one by one.
static void revoke_all(const struct iovec *iov, int n, size_t bytes, pid_t pid)
{
	if (n > 1 && advise_all(iov, n, bytes, MADV_DONTNEED, pid) &&
	    advise_all(iov, n, bytes, HG_MADV_GUARD_INSTALL, pid))
		return;
	for (int i = 0; i < n; i++)
		hg_revoke(iov[i].iov_base, iov[i].iov_len);
}

static int before(const struct range *a, const struct range *b)
{
	return a->r != b->r ? a->r < b->r : a->off < b->off;
}

// merge sorts ranges and merges adjacent ones; the new count.
static int merge(struct range *m, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && before(&m[j], &m[j - 1]); j--) {
			struct range t = m[j];
			m[j] = m[j - 1];
			m[j - 1] = t;
		}
	int out = 0;
	for (int i = 0; i < n; i++)
		if (out && m[i].r == m[out - 1].r && m[i].off == m[out - 1].off + m[out - 1].pages * HG_PAGE)
			m[out - 1].pages += m[i].pages;
		else
			m[out++] = m[i];
	return out;
}

// revoke_ranges revokes dead ranges (the batch, or one range). The lock is held
// throughout: a free that fills the batch returns only once every range
// queued before it is revoked, which is what the bound promises, even when
// another thread's free started the flush.
static void revoke_ranges(struct range *m, int n)
{
	n = merge(m, n);
	pid_t pid = getpid();
	struct iovec iov[2 * HD_BATCH_RANGES];
	struct range piece_of[2 * HD_BATCH_RANGES];
	int pieces = 0;
	size_t bytes = 0;
	for (int i = 0; i < n; i++)
		for (uintptr_t off = m[i].off, left = m[i].pages, k; left; off += k * HG_PAGE, left -= k) {
			k = piece(off, left);
			if (release_piece(m[i].r, off, k))
				continue;
			if (pieces == 2 * HD_BATCH_RANGES) {	// a long range whose blocks stay
				hg_revoke(m[i].r->base + off, k * HG_PAGE);
				count_dead(m[i].r, off, k);
				continue;
			}
			if (m[i].r == &hd.small)
				hd_recycle(off, k, pid);
			piece_of[pieces] = (struct range){m[i].r, off, k};
			iov[pieces++] = (struct iovec){m[i].r->base + off, k * HG_PAGE};
			bytes += k * HG_PAGE;
		}
	if (pieces)
		revoke_all(iov, pieces, bytes, pid);
	for (int i = 0; i < pieces; i++)
		count_dead(piece_of[i].r, piece_of[i].off, piece_of[i].pages);
}

// hd_dead puts a dead range (offset off of region r) in the batch.
void hd_dead(struct hd_region *r, uintptr_t off, size_t pages)
{
	hg_lock();
	batch[batch_n++] = (struct range){r, off, pages};
	batch_bytes += pages * HG_PAGE;
	if (batch_n == HD_BATCH_RANGES || batch_bytes >= HD_BATCH_BYTES) {
		revoke_ranges(batch, batch_n);
		batch_n = 0;
		batch_bytes = 0;
	}
	hg_unlock();
}

// hd_dead_now revokes a dead range at once.
void hd_dead_now(struct hd_region *r, uintptr_t off, size_t pages)
{
	struct range m = {r, off, pages};
	hg_lock();
	revoke_ranges(&m, 1);
	hg_unlock();
}

// hd_never_used counts pages that no object was ever handed out from: no
// pointer can reach them, so they need no revocation.
void hd_never_used(struct hd_region *r, uintptr_t off, size_t pages)
{
	hg_lock();
	count_dead(r, off, pages);
	hg_unlock();
}

static void before_fork(void)
{
	hg_lock();
}

static void after_fork(void)
{
	hg_unlock();
}

static void in_child(void)
{
	hg_lock_reset();
}

// The deferred heap is private memory: fork copies it, markers included.
void hd_install_fork_handlers(void)
{
	pthread_atfork(before_fork, after_fork, in_child);
}
