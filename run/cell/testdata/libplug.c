// libplug.so, loaded by dlopen after the program started: its compartment
// may call getpid. plug_inline_getpid makes the call from its own code,
// which the filter does not know, so the supervisor attributes it.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

long plug_getpid(void)
{
	return getpid();
}

long plug_inline_getpid(void)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_getpid) : "rcx", "r11", "memory");
	return ret;
}

int plug_mkdir(const char *path)
{
	return mkdir(path, 0700);
}
