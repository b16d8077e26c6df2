// libgood.so: the library whose rights an attacker in libevil.so wants.
// Its compartment may make directories, execute programs, call getpid
// and use io_uring; libevil.so's may not (evil.toml). Its functions are
// what a library of the kind exports, and the handles an attacker would
// find by reading memory: where its bindings of libc's wrappers go.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// good_mkdir makes a directory: what libgood.so exists to do.
int good_mkdir(const char *path)
{
	int ret = mkdir(path, 0700);
	__asm__ volatile("" ::: "memory");
	return ret;
}

// good_print writes s to f through stdio, and flushes it: libgood.so's
// call into libc, which runs f's own write function where f is a stream
// of the caller's making (fopencookie).
int good_print(FILE *f, const char *s)
{
	return fputs(s, f) < 0 || fflush(f) != 0 ? -1 : 0;
}

// good_getpid is a function that makes no directory: the code attacks
// try to replace.
long good_getpid(void)
{
	return getpid();
}

// good_ret is a bare return, a place in libgood.so's code an attacker can
// name as a return address and come back from.
__asm__(".text\n.globl good_ret\n.type good_ret, @function\ngood_ret:\n\tret\n.size good_ret, 1\n");

// good_stub returns where libgood.so's calls of the wrapper name go: its
// stub, in libgood.so's slot of the stub window. dlsym binds for the
// object its return address lies in, hence the barrier.
void *good_stub(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	__asm__ volatile("" ::: "memory");
	return p;
}

// good_exec runs argv in this process.
int good_exec(char *const argv[])
{
	execv(argv[0], argv);
	return -1;
}

// A ring of libgood.so's, set up and submitted to by its own code; its
// submission queue lies in memory every library of the process can
// write.
struct good_ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static struct good_ring ring;

// good_ring_setup sets up the ring with the flags given, and returns 0
// or the failed call's -errno.
long good_ring_setup(unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = flags;
	long fd = syscall(SYS_io_uring_setup, 4, &p);
	if (fd < 0)
		return -errno;
	ring.fd = fd;
	size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_CQ_RING);
	void *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -1000;
	ring.sq_tail = (unsigned *)(sq + p.sq_off.tail);
	ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	ring.sq_array = (unsigned *)(sq + p.sq_off.array);
	ring.cq_head = (unsigned *)(cq + p.cq_off.head);
	ring.cq_tail = (unsigned *)(cq + p.cq_off.tail);
	ring.cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	ring.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	ring.sqes = sqes;
	return 0;
}

// good_ring_sqe returns the ring's next submission entry, for whoever
// fills it: libgood.so, or a library that found the ring.
struct io_uring_sqe *good_ring_sqe(void)
{
	unsigned tail = *ring.sq_tail;
	struct io_uring_sqe *sqe = &ring.sqes[tail & *ring.sq_mask];
	ring.sq_array[tail & *ring.sq_mask] = tail & *ring.sq_mask;
	return sqe;
}

// good_ring_submit publishes the filled entry, submits it and waits for
// its completion, and returns the completion's result, or the failed
// call's -errno.
long good_ring_submit(void)
{
	__atomic_store_n(ring.sq_tail, *ring.sq_tail + 1, __ATOMIC_RELEASE);
	long n = syscall(SYS_io_uring_enter, ring.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
	if (n < 0)
		return -errno;
	unsigned head = *ring.cq_head;
	if (head == __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE))
		return -1001;
	long res = ring.cqes[head & *ring.cq_mask].res;
	__atomic_store_n(ring.cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}
