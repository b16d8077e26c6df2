// The guard's locks (src/lock.c), linked in directly:
//
//   lock
//
// * each lock excludes: four threads add to a counter under it, and no
//   addition is lost;
// * a thread waiting for a lock sleeps: while another thread holds the
//   global lock for 300 ms, the waiter's CPU time stays under 30 ms (a
//   lock that yields in a loop keeps its waiter running, and this fails);
// * a forked child whose parent's other thread held both locks resets
//   them and takes them;
// * the revocation lock is taken only once the process has threads (in a
//   process of one thread, nothing can revoke at the same time).
// Exit status 0: all held; 1: one did not (the output says which).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../src/internal.h"

#define THREADS 4
#define ADDS 200000

static long counter;

static void *add(void *arg)
{
	int revoking = *(int *)arg;
	for (int i = 0; i < ADDS; i++) {
		int taken = 0;
		if (revoking)
			taken = hg_revoke_lock();
		else
			hg_lock();
		long v = counter;
		__asm__ volatile("" ::: "memory");
		counter = v + 1;
		if (revoking)
			hg_revoke_unlock(taken);
		else
			hg_unlock();
	}
	return NULL;
}

static int excludes(int revoking)
{
	pthread_t t[THREADS];
	counter = 0;
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, add, &revoking);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	if (counter == (long)THREADS * ADDS)
		return 1;
	fprintf(stderr, "%s lock: %ld additions of %ld\n", revoking ? "revocation" : "global", counter, (long)THREADS * ADDS);
	return 0;
}

static double thread_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static atomic_int held;

static void *hold(void *ms)
{
	hg_lock();
	int taken = hg_revoke_lock();
	atomic_store(&held, 1);
	struct timespec ts = {0, *(long *)ms * 1000000L};
	nanosleep(&ts, NULL);
	hg_revoke_unlock(taken);
	hg_unlock();
	return NULL;
}

/* holding starts a thread that holds both locks for 300 ms, and returns
   it once it holds them. */
static pthread_t holding(void)
{
	static long ms = 300;
	pthread_t t;
	atomic_store(&held, 0);
	pthread_create(&t, NULL, hold, &ms);
	while (!atomic_load(&held))
		;
	return t;
}

static int sleeps(void)
{
	pthread_t t = holding();
	double before = thread_cpu_ms();
	hg_lock();
	double spent = thread_cpu_ms() - before;
	hg_unlock();
	pthread_join(t, NULL);
	if (spent < 30)
		return 1;
	fprintf(stderr, "waiting 300 ms for the global lock took %.1f ms of CPU\n", spent);
	return 0;
}

static int child_resets(void)
{
	pthread_t t = holding();
	pid_t pid = fork();
	if (pid == 0) {
		hg_lock_reset();
		hg_lock();
		hg_revoke_lock();
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	pthread_join(t, NULL);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 1;
	fprintf(stderr, "a forked child could not take the locks after resetting them\n");
	return 0;
}

// Before any thread starts, the revocation lock is not taken.
static int alone_untaken(void)
{
	int taken = hg_revoke_lock();
	hg_revoke_unlock(taken);
	if (!taken)
		return 1;
	fprintf(stderr, "the revocation lock was taken in a process of one thread\n");
	return 0;
}

int main(void)
{
	int ok = alone_untaken() & excludes(0) & excludes(1) & sleeps() & child_resets();
	return ok ? 0 : 1;
}
