// pairs: the CPU time of one malloc and free pair, the allocator's whole
// fast path (run it under a preloaded allocator to time that one):
//
//   gcc -O2 -fno-omit-frame-pointer -o pairs bench/heapguard/pairs.c
//   ./pairs [PAIRS] [SIZE] [touch]                   # glibc
//   SYSCELL_HEAPGUARD=deferred LD_PRELOAD=bin/libsyscell-heapguard.so ./pairs
//   LD_PRELOAD="noguard.so bin/libsyscell-heapguard.so" ./pairs   # strict, no revocation
//
// Prints the ns per pair of three rounds (process CPU time, which the
// machine's other jobs disturb less than wall time). With touch, each
// object's first byte is written, as a program writes what it allocates:
// an allocator that never reuses memory then pays for every fresh page
// (and one that populates pages ahead is cheaper for it; without touch,
// dearer).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 32;
	int touch = argc > 3 && strcmp(argv[3], "touch") == 0;
	for (int round = 0; round < 3; round++) {
		double t = cpu_ns();
		for (long i = 0; i < n; i++) {
			// volatile: the compiler may drop a malloc whose result is unused.
			char *volatile p = malloc(size);
			if (touch)
				p[0] = 1;
			free(p);
		}
		printf("%.1f ns per malloc+free\n", (cpu_ns() - t) / n);
	}
	return 0;
}
