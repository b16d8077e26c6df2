// libslow.so: an IFUNC whose resolver the loader runs while it relocates
// an image an exec started (slowstart is linked with -z now), before the
// image is loaded and while its start-up calls are allowed. The resolver
// tells the process that started it, on descriptor 9, that the image is
// loading, waits on descriptor 10 until told to go on, then tries, from
// libslow.so's own code, a mkdir: no call the loader makes.
#include <sys/syscall.h>

long slow_mkdir_result;

static long sys(long nr, long a, long b, long c)
{
	__asm__ volatile("syscall" : "+a"(nr) : "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return nr;
}

static int slow_impl(void)
{
	return 1;
}

static int (*slow_resolve(void))(void)
{
	char c = 'l';
	sys(SYS_write, 9, (long)&c, 1);
	sys(SYS_read, 10, (long)&c, 1);
	// "": ENOENT if the kernel runs it, EPERM if syscell denies it.
	slow_mkdir_result = sys(SYS_mkdir, (long)"", 0700, 0);
	return slow_impl;
}

int slow(void) __attribute__((ifunc("slow_resolve")));
