// Revocation: after this, every access to the range faults, for good.
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>

#include "internal.h"

// One at a time (lock.c: concurrent flushes cost twice, and IPIs).
void hg_revoke(void *page, size_t len)
{
	int taken = hg_revoke_lock();
	int done = madvise(page, len, HG_MADV_GUARD_INSTALL) == 0;
	hg_revoke_unlock(taken);
	if (done)
		return;
	// Kernels before 6.13 (6.15 for the shared windows) have no guard
	// markers: PROT_NONE splits the VMA but keeps the guarantee, until the
	// VMA limit; past that a freed object would stay usable, so stop.
	if (mprotect(page, len, PROT_NONE) == 0)
		return;
	hg_die(errno == ENOMEM ? "cannot revoke a freed object: out of mappings (vm.max_map_count)"
			       : "cannot revoke a freed object");
}
