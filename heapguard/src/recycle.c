// Deferred mode: a dead page's memory moved to a new address. When the
// batch revokes dead pages of the small region, their physical pages are
// first moved (UFFDIO_MOVE, Linux 6.8: the page-table entry changes
// address, nothing is copied or zeroed) to the front of the span that will
// be handed out next, which no pointer has ever reached; then the old
// addresses are marked to fault as before. The next span starts with those
// pages mapped: a page moved and used again costs 1.4 us here, where one
// freed and then faulted or populated afresh costs 2.2 us
// (bench/heapguard/primitives, heapguard/README.md). At most one span's
// pages wait to be handed out.
//
// Only while the process has one thread: a move flushes the TLB once per
// range, and with threads running on other CPUs each flush is an IPI
// (larson, two threads: 20 % more CPU time, moves waiting on the lock).
// The kernel moves only this process's pages that no other process may
// map (a page shared with a forked child stays where it is, and is freed
// there), and only through a userfaultfd this process opened: a forked
// child opens its own. Where userfaultfd is refused (a policy, an old
// kernel) pages are freed as before. The small region is registered in
// write-protect mode, which allows moves and traps nothing: no page is
// ever write-protected.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#ifndef UFFD_FEATURE_MOVE	// Linux 6.8's uapi, newer than Debian 12's headers
#define UFFD_FEATURE_MOVE (1 << 16)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif

// Under the lock: this process's userfaultfd (-1: none to be had) and the
// span that will be handed out next, with how many of its first pages are
// moved pages. next_fill is read without the lock by hd_next_span.
static int uffd = -1;
static pid_t uffd_pid;
static uintptr_t next_off;
static int has_next;
static atomic_uint next_fill;

static int open_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MOVE};
	struct uffdio_register reg = {
		.range = {(uintptr_t)hd.small.base, HD_REGION},
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	if (ioctl(fd, UFFDIO_API, &api) != 0 || !(api.features & UFFD_FEATURE_MOVE) ||
	    ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

// own_uffd returns this process's userfaultfd, opening it in a process
// that has none yet (the lock is held).
static int own_uffd(pid_t pid)
{
	if (uffd_pid == pid)
		return uffd;
	if (uffd >= 0)
		close(uffd);
	uffd = open_uffd();
	uffd_pid = pid;
	return uffd;
}

// hd_recycle moves the pages of a dead range (offset off of the small
// region, pages long; the lock is held) to the next span, as many as it
// has room for. pid: this process's id. The range is revoked afterwards in
// any case: moved pages leave nothing behind, the others are freed there.
void hd_recycle(uintptr_t off, size_t pages, pid_t pid)
{
	unsigned fill = atomic_load_explicit(&next_fill, memory_order_relaxed);
	if (!__libc_single_threaded || fill == HD_SPAN_PAGES || own_uffd(pid) < 0)
		return;
	if (!has_next) {
		next_off = atomic_fetch_add(&hd.small.top, HD_SPAN);
		has_next = 1;
	}
	if (next_off + HD_SPAN > HD_REGION)
		return;
	size_t n = pages < HD_SPAN_PAGES - fill ? pages : HD_SPAN_PAGES - fill;
	struct uffdio_move mv = {
		.dst = (uintptr_t)hd.small.base + next_off + fill * HG_PAGE,
		.src = (uintptr_t)hd.small.base + off,
		.len = n * HG_PAGE,
		.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES,
	};
	// A page that cannot move (EBUSY) stays and is freed with the others;
	// its place in the next span stays empty and faults a fresh page in.
	ioctl(uffd, UFFDIO_MOVE, &mv);
	atomic_store_explicit(&next_fill, fill + (unsigned)n, memory_order_relaxed);
}

// hd_next_span returns the offset of the span to hand out next and sets
// *filled to the number of its first pages already mapped.
uintptr_t hd_next_span(unsigned *filled)
{
	*filled = 0;
	if (atomic_load_explicit(&next_fill, memory_order_relaxed)) {
		hg_lock();
		unsigned fill = atomic_load_explicit(&next_fill, memory_order_relaxed);
		if (fill) {
			*filled = fill;
			has_next = 0;
			atomic_store_explicit(&next_fill, 0, memory_order_relaxed);
			hg_unlock();
			return next_off;
		}
		hg_unlock();
	}
	return atomic_fetch_add(&hd.small.top, HD_SPAN);
}
