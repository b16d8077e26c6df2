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
