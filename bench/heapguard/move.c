// dead_page_ns: what a page of deferred mode's small objects costs from
// one use to the next, spans of 16 pages whose pages die one by one (16
// single-page ranges a batch, none adjacent to the next): either freed in
// the batch (process_madvise MADV_DONTNEED, then MADV_GUARD_INSTALL) and a
// fresh page populated for the next span (MADV_POPULATE_WRITE), or moved
// to the next span (UFFDIO_MOVE, a call a range) and the old page marked.
// ns per page; -1 where userfaultfd's moves are not to be had.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef UFFD_FEATURE_MOVE	// Linux 6.8's uapi, newer than Debian 12's headers
#define UFFD_FEATURE_MOVE (1 << 16)
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move;
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif

#define PAGE 4096UL
#define SPAN_PAGES 16
#define GUARD_INSTALL 102

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

// uffd_over opens a userfaultfd with moves and registers len bytes at r.
static int uffd_over(char *r, size_t len)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MOVE};
	struct uffdio_register reg = {.range = {(unsigned long)r, len}, .mode = UFFDIO_REGISTER_MODE_WP};
	if (fd >= 0 && (ioctl(fd, UFFDIO_API, &api) || !(api.features & UFFD_FEATURE_MOVE) ||
			ioctl(fd, UFFDIO_REGISTER, &reg))) {
		close(fd);
		return -1;
	}
	return fd;
}

// dying lists a span's pages as they die: even pages, then odd ones.
static void dying(char *span, struct iovec *v)
{
	for (int i = 0, n = 0; n < SPAN_PAGES; i += 2, n++)
		v[n] = (struct iovec){span + (i % SPAN_PAGES + i / SPAN_PAGES) * PAGE, PAGE};
}

static int moved(int uffd, const struct iovec *v, char *from, char *to)
{
	for (int i = 0; i < SPAN_PAGES; i++) {
		char *src = v[i].iov_base;
		struct uffdio_move mv = {(unsigned long)(to + (src - from)), (unsigned long)src, PAGE, 0, 0};
		if (ioctl(uffd, UFFDIO_MOVE, &mv))
			return -1;
	}
	return 0;
}

double dead_page_ns(size_t pages, int move)
{
	size_t spans = pages / SPAN_PAGES, len = (spans + 1) * SPAN_PAGES * PAGE;
	char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	int uffd = move ? uffd_over(r, len) : 0;
	double t = -1;
	if (r == MAP_FAILED || pidfd < 0 || uffd < 0)
		goto out;
	t = now();
	madvise(r, SPAN_PAGES * PAGE, MADV_POPULATE_WRITE);
	for (size_t s = 0; s < spans; s++) {
		char *span = r + s * SPAN_PAGES * PAGE, *next = span + SPAN_PAGES * PAGE;
		struct iovec v[SPAN_PAGES];
		for (int i = 0; i < SPAN_PAGES; i++)
			span[i * PAGE] = 1;
		dying(span, v);
		if (move ? moved(uffd, v, span, next) : syscall(SYS_process_madvise, pidfd, v, SPAN_PAGES, MADV_DONTNEED, 0) < 0) {
			t = -1;
			goto out;
		}
		syscall(SYS_process_madvise, pidfd, v, SPAN_PAGES, GUARD_INSTALL, 0);
		if (!move)
			madvise(next, SPAN_PAGES * PAGE, MADV_POPULATE_WRITE);
	}
	t = (now() - t) / (spans * SPAN_PAGES);
out:
	if (uffd > 0)
		close(uffd);
	if (pidfd >= 0)
		close(pidfd);
	if (r != MAP_FAILED)
		munmap(r, len);
	return t;
}
