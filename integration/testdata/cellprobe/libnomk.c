// libnomk.so: a library whose job needs getpid and nothing that creates
// anything. Its attack functions try what libmaymk.so may do: a mkdir
// from its own code, and a file created through stdio.
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

long nomk_getpid(void)
{
	return (long)getpid();
}

// nomk_getpid_libc calls getpid through a pointer taken with &getpid,
// a binding the loader does not audit: the system call leaves from
// libc's code, so the filter sends it to the supervisor, which finds
// this library on the stack.
long nomk_getpid_libc(void)
{
	static pid_t (*volatile get)(void) = getpid;
	long pid = get();
	__asm__ volatile("" ::: "memory");
	return pid;
}

int nomk_mkdir(const char *path)
{
	return mkdir(path, 0755) == 0 ? 0 : errno;
}

int nomk_create(const char *path)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return errno;
	fclose(f);
	return 0;
}
