/* syscall(2) with a constant number, in a tail call (the call is then
   the caller's, as the recorder finds it), and with one of two numbers;
   and a syscall instruction of the library's own. */
#include <sys/syscall.h>
#include <unistd.h>

long constant(void) { return syscall(SYS_getpgrp); }

long chosen(int which) { return syscall(which ? SYS_getsid : SYS_getpriority, 0, 0) + 1; }

long direct(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_syncfs), "D"(-1) : "rcx", "r11", "memory");
	return r;
}
