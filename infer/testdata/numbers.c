/* syscall(2) with a constant number, in a tail call (the call is then
   the caller's, as the recorder finds it), and with one of two numbers;
   a syscall instruction of the library's own; and a tail call of the
   library's own function, which calls libc in a frame of its own (the
   call is the library's alone). */
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

__attribute__((noinline)) static long framed(void) { return syscall(SYS_query_module) + 1; }

long tailed(void) { return framed(); }
