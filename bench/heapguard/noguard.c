// noguard: an LD_PRELOAD shim that makes madvise(MADV_GUARD_INSTALL)
// succeed without doing anything, so that the guard's strict mode runs
// without its revocations: what strict mode costs besides them (mapping an
// alias per object, records, traces). For measurement only: under it,
// freed objects stay usable.
//
//   gcc -O2 -shared -fPIC -o noguard.so bench/heapguard/noguard.c
//   LD_PRELOAD="./noguard.so bin/libsyscell-heapguard.so" CMD
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#define MADV_GUARD_INSTALL 102

int madvise(void *addr, size_t len, int advice)
{
	if (advice == MADV_GUARD_INSTALL)
		return 0;
	return (int)syscall(SYS_madvise, addr, len, advice);
}
