/* An IFUNC, as glibc picks its string functions by what the processor
 * can do: the resolver returns one of the two functions it takes the
 * address of, and the library's call of it reaches those alone, not
 * the vDSO's functions, which a resolver that computes what it returns
 * may look up. The functions enter the kernel themselves. It also calls
 * libc's time, an IFUNC whose resolver picks the vDSO's __vdso_time
 * where the vDSO exports it, and the system call only where it does
 * not (vdso.txt). */
#include <sys/syscall.h>
#include <time.h>

/* Set by whoever loads the library: the resolver cannot tell which. */
int ifunc_fast;

static long raw(long nr)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
	return ret;
}

static long by_parent(void)
{
	return raw(SYS_getppid);
}

static long by_group(void)
{
	return raw(SYS_getpgrp);
}

static long (*resolve_pick(void))(void)
{
	return ifunc_fast ? by_parent : by_group;
}

long pick(void) __attribute__((ifunc("resolve_pick")));

long ifunc_use(void)
{
	return pick() + time(NULL);
}
