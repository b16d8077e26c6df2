/*
 * The runtime's memory: the few allocations of the launcher's
 * configuration (its compartments, the runtime's sonames), none ever
 * freed, carved from an arena in the library's own zeroed data, so that
 * allocating makes no system call (under the filter, an image the
 * program executes would ask the supervisor for each); past the arena,
 * from anonymous memory. Each block has its size in the word before it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rt.h"

#define ALIGN 16
#define CHUNK (1UL << 20)

static char arena[CHUNK] __attribute__((aligned(ALIGN)));
static char *next = arena, *end = arena + sizeof arena;
/* The last block, which realloc grows in place. */
static char *last;

static size_t rounded(size_t n)
{
	return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static size_t *size_of(void *p)
{
	return (size_t *)p - 1;
}

void *malloc(size_t n)
{
	if (n > SIZE_MAX - 2 * ALIGN) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = ALIGN + rounded(n);
	if (need > (size_t)(end - next)) {
		size_t size = need > CHUNK ? need : CHUNK;
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			errno = ENOMEM;
			return NULL;
		}
		next = p;
		end = p + size;
	}
	last = next + ALIGN;
	*size_of(last) = rounded(n);
	next += need;
	return last;
}

void *calloc(size_t count, size_t size)
{
	if (size != 0 && count > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = malloc(count * size);
	return p != NULL ? memset(p, 0, count * size) : NULL;
}

void *realloc(void *p, size_t n)
{
	if (p == NULL)
		return malloc(n);
	size_t old = *size_of(p);
	if (n <= old)
		return p;
	if (p == last && rounded(n) - old <= (size_t)(end - next)) {
		next += rounded(n) - old;
		*size_of(p) = rounded(n);
		return p;
	}
	void *q = malloc(n);
	return q != NULL ? memcpy(q, p, old) : NULL;
}
