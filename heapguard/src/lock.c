// The guard's locks. Not pthread mutexes: a forked child resets one by
// storing 0. A thread that finds one taken spins briefly, then sleeps on a
// futex. Two locks:
//
// * the global lock (hg_lock): run lists and windows in strict mode; the
//   batch, its revocation and the next span in deferred mode. Its sections
//   are short, except a batch's revocation (process_madvise calls, tens of
//   microseconds), during which a waiter that yielded in a loop, as this
//   lock once did, burned its CPU (larson, two threads: a third of its CPU
//   time in sched_yield) and, being on a CPU, took the revocation's TLB
//   flush as an IPI, which a CPU left idle is spared;
// * the revocation lock (hg_revoke_lock): every call that removes present
//   pages outside the batch (strict mode's revocation of each freed object,
//   its retired runs' hole punching). Two threads flushing the TLB at once
//   make each flush twice (the kernel sees nested flushes and flushes the
//   whole address space again), and each flush is an IPI to every other
//   CPU running the program: one at a time, with the others asleep,
//   revocations need none (strict larson: CPU time 2.5x less).
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

// 0 free, 1 taken, 2 taken and perhaps waited for.
static atomic_int global, revoking;

static void take(atomic_int *word, int spins)
{
	int c = 0;
	if (atomic_compare_exchange_strong_explicit(word, &c, 1, memory_order_acquire, memory_order_relaxed))
		return;
	for (int i = 0; i < spins && c == 1; i++) {
		__builtin_ia32_pause();
		c = atomic_load_explicit(word, memory_order_relaxed);
		if (c == 0 && atomic_compare_exchange_strong_explicit(word, &c, 1, memory_order_acquire,
								      memory_order_relaxed))
			return;
	}
	// Sleep while it is taken, marking it waited for: its holder wakes one
	// sleeper when it lets go, which takes it marked, in case of others.
	while (atomic_exchange_explicit(word, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

static void give(atomic_int *word)
{
	if (atomic_exchange_explicit(word, 0, memory_order_release) == 2)
		syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#define SPINS 100

void hg_lock(void)
{
	take(&global, SPINS);
}

void hg_unlock(void)
{
	give(&global);
}

// While the process has one thread (glibc's __libc_single_threaded, false
// from before a second thread starts), nothing can revoke at the same time:
// the lock is not taken, which saves strict mode two locked instructions a
// free (about 1 % of a revocation; interleaved runs of binary-trees and
// cfrac-like could not tell). Returns whether it was.
int hg_revoke_lock(void)
{
	if (__libc_single_threaded)
		return 0;
	take(&revoking, SPINS);
	return 1;
}

void hg_revoke_unlock(int taken)
{
	if (taken)
		give(&revoking);
}

void hg_lock_reset(void)
{
	atomic_store(&global, 0);
	atomic_store(&revoking, 0);
}
