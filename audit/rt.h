/*
 * The library's own runtime: the few functions of the C library it uses,
 * under their standard names and with glibc's behaviour, built into it
 * (rt_*.c, rt_clone.S). The loader loads an audit library in a namespace
 * of its own, with the libraries it needs: a libc of its own would be
 * opened, read, mapped and relocated again in every image the program
 * executes, each of those calls, under the filter, a round trip to the
 * supervisor before this library's code can run. It needs no library
 * at all, the loader's neither.
 *
 * enforce's shim (run/enforce/shim/build.sh) links the same runtime, for a
 * start with no C library's.
 *
 * The declarations are the C library's headers'; this header has what
 * they lack.
 */
#ifndef SYSCELL_RT_H
#define SYSCELL_RT_H

#include <sys/types.h>

/* A system call, its result as the kernel returns it: -errno on failure. */
static inline long rt_call(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* rt_result turns a kernel result into the C library's: -1 with errno
   set on failure. */
long rt_result(long ret);

/* rt_send_fd sends len bytes of data on sock with descriptor fd
   (SCM_RIGHTS), without SIGPIPE, again where a signal interrupts it; it
   returns what sendmsg returns. */
ssize_t rt_send_fd(int sock, const void *data, size_t len, int fd);

#endif
