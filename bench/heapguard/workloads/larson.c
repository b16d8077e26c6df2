// larson-like server churn: each thread owns a pool of objects of random
// sizes and replaces random ones. As in larson, threads are short-lived:
// each epoch starts new threads that take over the pools of the last
// epoch's threads, so objects die in threads that did not allocate them.
//   larson THREADS ROUNDS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL 1000

#define EPOCHS 10

static int threads;
static long rounds;
static void **pools[64];

struct job {
	void **pool;
	unsigned seed;
};

static unsigned next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	for (long r = 0; r < rounds / EPOCHS; r++) {
		unsigned k = next(&j->seed) % POOL;
		size_t size = 8 + next(&j->seed) % 500;
		free(j->pool[k]);
		j->pool[k] = malloc(size);
		memset(j->pool[k], (int)r, size < 64 ? size : 64);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	threads = argc > 1 ? atoi(argv[1]) : 2;
	rounds = argc > 2 ? atol(argv[2]) : 200000;
	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 0; i < threads; i++)
		pools[i] = calloc(POOL, sizeof(void *));
	for (int e = 0; e < EPOCHS; e++) {
		pthread_t t[64];
		struct job jobs[64];
		for (int i = 0; i < threads; i++) {
			jobs[i] = (struct job){pools[(i + e) % threads], (unsigned)(e * threads + i + 1)};
			pthread_create(&t[i], NULL, worker, &jobs[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
	}
	for (int i = 0; i < threads; i++) {
		for (int k = 0; k < POOL; k++)
			free(pools[i][k]);
		free(pools[i]);
	}
	printf("%d threads, %ld rounds each\n", threads, rounds);
	return 0;
}
