/* Calls through function pointers in writable data: to a function of the
   library's own, with its own syscall instruction, and to libc's sync. */
#include <unistd.h>

static long own(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(135L), "D"(0xffffffffL) : "rcx", "r11", "memory");
	return r;
}

long (*volatile hook)(void) = own;
void (*volatile flush)(void) = sync;

long pointers(void)
{
	flush();
	return hook();
}
