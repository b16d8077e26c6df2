// The deferred mode's bound, under threads and fork: once every object on
// a page has been freed, the page faults by the time BOUND more bytes of
// memory have died (heapguard/README.md).
//
//   bound THREADS BOUND [deny]
//
// THREADS 0: the main thread does the rounds of thread 0 alone, so that
// the guard's single-threaded paths (plain stores, moved pages) are the
// ones checked.
//
// With deny, a seccomp filter first makes process_madvise fail (EPERM), so
// that the guard's fallback, one revocation call a range, is what is
// checked.
//
// Each thread, round after round, makes objects of one size, frees them
// all, then kills BOUND bytes of other memory (objects of 4,096 bytes,
// which deferred mode gives a page each) and checks that every page its
// objects covered entirely now faults. Halfway, the first thread forks
// between the free and the kill: the child checks its own copy of those
// pages the same way, and then does rounds of its own. Exit status 0: the
// bound held everywhere; 1: a page stayed readable (the output says which).
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL
#define ROUNDS 30
#define MAX_OBJECTS 2048
#define MAX_PAGES 1024

static size_t bound;
static atomic_int failed;

struct covered {
	uintptr_t page[MAX_PAGES];
	int n;
};

static int readable(uintptr_t p)
{
	char c;
	struct iovec local = {&c, 1}, remote = {(void *)p, 1};
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

// cover finds the pages that the objects (each its usable size) fill
// entirely: no other object can lie on them.
static void cover(char **objs, int n, struct covered *c)
{
	uintptr_t start[MAX_OBJECTS];
	for (int i = 0; i < n; i++)
		start[i] = (uintptr_t)objs[i];
	qsort(start, (size_t)n, sizeof start[0], by_address);
	c->n = 0;
	uintptr_t run = start[0], end = start[0];
	for (int i = 0; i <= n; i++) {
		if (i < n && start[i] == end) {
			end += malloc_usable_size((void *)start[i]);
			continue;
		}
		for (uintptr_t p = (run + PAGE - 1) & ~(PAGE - 1); p + PAGE <= end && c->n < MAX_PAGES; p += PAGE)
			c->page[c->n++] = p;
		if (i < n) {
			run = start[i];
			end = run + malloc_usable_size((void *)start[i]);
		}
	}
}

// kill_and_check frees bound bytes of pages, then checks c's pages.
static void kill_and_check(const struct covered *c, const char *who)
{
	for (size_t killed = 0; killed < bound; killed += PAGE) {
		char *volatile q = malloc(PAGE);
		q[0] = 1;
		free(q);
	}
	for (int i = 0; i < c->n; i++)
		if (readable(c->page[i])) {
			printf("%s: page %#lx still readable after %zu more bytes died\n", who, (unsigned long)c->page[i],
			       bound);
			atomic_store(&failed, 1);
			return;
		}
}

// make_and_free makes objects of one size, covering a few pages, frees
// them, and says which pages they covered.
static void make_and_free(unsigned *seed, struct covered *c)
{
	static const size_t sizes[] = {16, 24, 48, 100, 200, 500, 1000, 3000, 5000, 9000, 16000, 20000, 70000};
	size_t size = sizes[rand_r(seed) % (sizeof sizes / sizeof sizes[0])];
	int n = (int)(4 * PAGE / size) + 2;
	char *objs[MAX_OBJECTS];
	for (int i = 0; i < n; i++) {
		objs[i] = malloc(size);
		memset(objs[i], 'a', size);
	}
	cover(objs, n, c);
	for (int i = 0; i < n; i++)
		free(objs[i]);
}

static void rounds(unsigned seed, int forks, const char *who)
{
	struct covered c;
	for (int r = 0; r < ROUNDS; r++) {
		make_and_free(&seed, &c);
		if (forks && r == ROUNDS / 2) {
			pid_t child = fork();
			if (child == 0) {
				kill_and_check(&c, "child");
				rounds(seed + 1, 0, "child");
				_exit(atomic_load(&failed));
			}
			kill_and_check(&c, who);
			int status;
			waitpid(child, &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				atomic_store(&failed, 1);
			continue;
		}
		kill_and_check(&c, who);
	}
}

static void *thread(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	rounds(id * 7919 + 1, id == 0, "thread");
	return NULL;
}

// deny_process_madvise makes process_madvise fail with EPERM from now on.
static int deny_process_madvise(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_madvise, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof code / sizeof code[0], code};
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv)
{
	if (argc != 3 && !(argc == 4 && strcmp(argv[3], "deny") == 0)) {
		fprintf(stderr, "usage: bound THREADS BOUND [deny]\n");
		return 2;
	}
	if (argc == 4 && deny_process_madvise()) {
		perror("seccomp");
		return 2;
	}
	int threads = atoi(argv[1]);
	bound = (size_t)atol(argv[2]);
	if (threads == 0)
		thread(0);
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, thread, (void *)(uintptr_t)i);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&failed))
		return 1;
	printf("ok\n");
	return 0;
}
