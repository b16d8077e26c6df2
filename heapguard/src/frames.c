// Deferred mode: the frames small objects live in. The small region is
// HD_WINDOWS windows of one memfd side by side, inside one PROT_NONE
// reservation; a span is a group (HD_SPAN bytes of the file, 16 frames)
// seen through one window. When every page of a span is dead and revoked,
// its group serves a next span in the next window: the same frames at new
// addresses, never handed out before. Mapping a frame already in the file
// costs about 0.4 us a page, a fresh private page 1.2-2.8 us
// (heapguard/README.md). A group that has served in every window is
// retired (its frames released, never used again).
//
// Dead groups wait in two lists, newest first: warm ones keep their
// frames, up to a share of the live heap; cold ones were released and
// take fresh frames when used again.
//
// fork: the memfd is shared memory, so a child would see the parent's
// later writes. The child gets a copy of the file and maps its windows onto
// it, as strict mode does (fork.c); the new mappings have no guard
// markers, so it installs them again on every dead page.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define NONE UINT32_MAX

int hd_frames_start(void)
{
	hd.small.base = hg_reserve(HD_REGION, PROT_NONE);
	hd.group_win = hg_reserve(HD_GROUPS, PROT_READ | PROT_WRITE);
	hd.group_next = hg_reserve(HD_GROUPS * sizeof(uint32_t), PROT_READ | PROT_WRITE);
	hd.memfd = memfd_create("heapguard-deferred", MFD_CLOEXEC);
	if (!hd.small.base || !hd.group_win || !hd.group_next || hd.memfd < 0)
		return -1;
	return ftruncate(hd.memfd, (off_t)HD_FILE);
}

static uint32_t pop(uint32_t *head)
{
	if (!*head)
		return NONE;
	uint32_t g = *head - 1;
	*head = hd.group_next[g];
	return g;
}

static void push(uint32_t *head, uint32_t g)
{
	hd.group_next[g] = *head;
	*head = g + 1;
}

static char *window(unsigned w)
{
	return hd.small.base + (uintptr_t)w * HD_FILE;
}

static int map_window(unsigned w, int fd)
{
	return mmap(window(w), HD_FILE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_NORESERVE, fd, 0) ==
			       MAP_FAILED
		       ? -1
		       : 0;
}

// next_group picks the group of a new span and its window (the lock is
// held): NONE when the file's groups are all retired or busy.
static uint32_t next_group(unsigned *w)
{
	uint32_t g = pop(&hd.warm);
	if (g != NONE)
		hd.warm_n--;
	else
		g = pop(&hd.cold);
	if (g != NONE) {
		*w = (hd.group_win[g] & ~HD_GROUP_DEAD) + 1u;
		return g;
	}
	if (hd.groups_top == HD_GROUPS)
		return NONE;
	*w = 0;
	return hd.groups_top++;
}

// hd_span_take returns the region offset of a new span, or HD_REGION if
// none is left.
uintptr_t hd_span_take(void)
{
	unsigned w;
	hg_lock();
	uint32_t g = next_group(&w);
	if (g != NONE && w == atomic_load(&hd.windows)) {
		if (map_window(w, hd.memfd) != 0)
			g = NONE;
		else
			atomic_store(&hd.windows, w + 1);
	}
	uintptr_t off = HD_REGION;
	if (g != NONE) {
		hd.group_win[g] = (uint8_t)w;
		off = (uintptr_t)w * HD_FILE + (uintptr_t)g * HD_SPAN;
		if (off + HD_SPAN > atomic_load(&hd.small.top))
			atomic_store(&hd.small.top, off + HD_SPAN);
	}
	hg_unlock();
	return off;
}

static void punch(uint32_t g)
{
	fallocate(hd.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)g * (off_t)HD_SPAN, (off_t)HD_SPAN);
}

static int warm_full(void)
{
	size_t live = (atomic_load(&hd.pages_out) - atomic_load(&hd.pages_dead)) * HG_PAGE / HD_WARM_SHARE;
	return (size_t)hd.warm_n * HD_SPAN >= (live > HD_WARM_MIN ? live : HD_WARM_MIN);
}

// hd_span_dead gives back the group of the span at off, whose pages are
// all dead and revoked (the lock is held).
void hd_span_dead(uintptr_t off)
{
	uint32_t g = (uint32_t)(off % HD_FILE / HD_SPAN);
	unsigned w = (unsigned)(off / HD_FILE);
	hd.group_win[g] = (uint8_t)(w | HD_GROUP_DEAD);
	if (w + 1 == HD_WINDOWS) {
		punch(g);
		return;
	}
	if (!warm_full()) {
		push(&hd.warm, g);
		hd.warm_n++;
		return;
	}
	punch(g);
	push(&hd.cold, g);
}

static int copy_fd = -1;

static void before_fork(void)
{
	hg_lock();
	copy_fd = memfd_create("heapguard-deferred", MFD_CLOEXEC);
	if (copy_fd >= 0 &&
	    hg_copy_file(hd.memfd, copy_fd, (off_t)hd.groups_top * (off_t)HD_SPAN, (off_t)HD_FILE) != 0) {
		close(copy_fd);
		copy_fd = -1;
	}
}

static void in_parent(void)
{
	if (copy_fd >= 0)
		close(copy_fd);
	copy_fd = -1;
	hg_unlock();
}

static void guard(uintptr_t off, size_t len)
{
	if (len)
		hg_revoke(hd.small.base + off, len);
}

// guard_live_span marks the dead pages of the live span at off.
static void guard_live_span(uintptr_t off)
{
	const struct hd_span *s = &hd.spans[off / HD_SPAN];
	for (unsigned p = 0; p < HD_SPAN_PAGES; p++)
		if (!atomic_load(&s->live[p]))
			guard(off + p * HG_PAGE, HG_PAGE);
}

// guard_window marks again, in window w, every dead span (adjacent ones
// with one call) and the dead pages of live ones.
static void guard_window(unsigned w)
{
	uintptr_t base = (uintptr_t)w * HD_FILE, run = base;
	size_t len = 0;
	for (uint32_t g = 0; g < hd.groups_top; g++) {
		unsigned gw = hd.group_win[g], cur = gw & ~HD_GROUP_DEAD;
		uintptr_t off = base + (uintptr_t)g * HD_SPAN;
		if (w < cur || (w == cur && (gw & HD_GROUP_DEAD))) {
			if (!len)
				run = off;
			len += HD_SPAN;
			continue;
		}
		guard(run, len);
		len = 0;
		if (w == cur)
			guard_live_span(off);
	}
	guard(run, len);
}

// release_window maps PROT_NONE again over window w's released blocks.
static void release_window(unsigned w)
{
	uint32_t first = (uint32_t)((uintptr_t)w * HD_FILE / HD_BLOCK);
	uint32_t n = (uint32_t)(((uintptr_t)hd.groups_top * HD_SPAN + HD_BLOCK - 1) / HD_BLOCK);
	for (uint32_t b = first; b < first + n; b++)
		if (atomic_load(&hd.small.blocks[b].released) && !hd_block_protnone(&hd.small, b))
			hg_die("fork: cannot release the child's dead blocks");
}

static void in_child(void)
{
	hg_lock_reset();
	if (copy_fd < 0)
		hg_die("fork: cannot copy the heap for the child, which would share the parent's");
	unsigned windows = atomic_load(&hd.windows);
	for (unsigned w = 0; w < windows; w++)
		if (map_window(w, copy_fd) != 0)
			hg_die("fork: cannot map the child's heap");
	close(hd.memfd);
	hd.memfd = copy_fd;
	copy_fd = -1;
	for (unsigned w = 0; w < windows; w++) {
		guard_window(w);
		release_window(w);
	}
}

// The batch lock is held around fork, so that no revocation is half done
// in the child.
void hd_install_fork_handlers(void)
{
	pthread_atfork(before_fork, in_parent, in_child);
}
