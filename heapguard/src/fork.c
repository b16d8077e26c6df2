// fork: the small-object heap is a shared memfd, so a child would see the
// parent's later writes. Before fork the parent copies the heap file; the
// child maps its windows onto the copy and revokes again every alias that
// was revoked (a new mapping has no guard markers). Children of vfork and
// posix_spawn share memory until exec anyway and run no handler.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "internal.h"

static int copy_fd = -1;

static int copy_range(int from, int to, off_t off, off_t len)
{
	while (len > 0) {
		off_t in = off, out = off;
		ssize_t n = copy_file_range(from, &in, to, &out, (size_t)len, 0);
		if (n <= 0) {
			if (lseek(to, off, SEEK_SET) < 0)
				return -1;
			n = sendfile(to, from, &in, (size_t)len);
			if (n <= 0)
				return -1;
		}
		off += n;
		len -= n;
	}
	return 0;
}

// copy_heap copies the frames in use, data extents only: released frames
// stay holes in the copy.
static int copy_heap(int to)
{
	off_t end = (off_t)hg.frame_top * HG_PAGE, off = 0;
	if (ftruncate(to, HG_FILE) != 0)
		return -1;
	while (off < end) {
		off_t data = lseek(hg.memfd, off, SEEK_DATA);
		if (data < 0 || data >= end)
			return 0;
		off_t hole = lseek(hg.memfd, data, SEEK_HOLE);
		if (hole < 0 || hole > end)
			hole = end;
		if (copy_range(hg.memfd, to, data, hole - data) != 0)
			return -1;
		off = hole;
	}
	return 0;
}

static void before_fork(void)
{
	hg_lock();
	if (hg.memfd < 0)
		return;
	copy_fd = memfd_create("heapguard", MFD_CLOEXEC);
	if (copy_fd >= 0 && copy_heap(copy_fd) != 0) {
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

// revoke_rows revokes the run's aliases in windows below w_to: those of its
// past generations.
static void revoke_rows(unsigned w_to, const struct hg_run *r)
{
	for (unsigned w = 0; w < w_to; w++)
		hg_revoke(hg.small + w * HG_FILE + (uintptr_t)r->frame * HG_PAGE, r->nframes * HG_PAGE);
}

// revoke_dead revokes, in the child's new windows, every alias of a past
// generation and every freed alias of the current one, and releases again
// the released chunks.
static void revoke_dead(void)
{
	unsigned windows = atomic_load(&hg.windows);
	for (uint32_t f = 0; f < hg.frame_top;) {
		const struct hg_run *r = &hg.runs[f / 2];
		if (hg.chunks[f / HG_CHUNK_FRAMES].released) {
			for (unsigned w = 0; w < windows; w++)
				if (hg_chunk_unmap(f / HG_CHUNK_FRAMES, w) != 0)
					hg_die("fork: cannot release the child's heap chunks");
			f = (f / HG_CHUNK_FRAMES + 1) * HG_CHUNK_FRAMES;
			continue;
		}
		if (r->nframes == 0) {
			f += 2;	// frames skipped to align the next run
			continue;
		}
		revoke_rows(r->w0, r);
		for (unsigned s = 0; r->cls && s < r->slots; s++)
			for (uint32_t i = 0; i < r->nframes; i++) {
				unsigned w = r->w0 + s;
				if (atomic_load(&hg_record_of(w, r->frame + i)->freed))
					hg_revoke(hg.small + w * HG_FILE + (uintptr_t)(r->frame + i) * HG_PAGE, HG_PAGE);
			}
		f += r->nframes;
	}
}

static void in_child(void)
{
	hg_lock_reset();
	if (hg.memfd < 0)
		return;
	if (copy_fd < 0)
		hg_die("fork: cannot copy the heap for the child, which would share the parent's");
	unsigned windows = atomic_load(&hg.windows);
	for (unsigned w = 0; w < windows; w++)
		if (mmap(hg.small + w * HG_FILE, HG_FILE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, copy_fd, 0) == MAP_FAILED)
			hg_die("fork: cannot map the child's heap");
	close(hg.memfd);
	hg.memfd = copy_fd;
	copy_fd = -1;
	revoke_dead();
}

void hg_install_fork_handlers(void)
{
	pthread_atfork(before_fork, in_parent, in_child);
}
