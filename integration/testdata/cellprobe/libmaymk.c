// libmaymk.so: the library whose job is to make directories and files;
// its compartment may mkdir and, through stdio, open files.
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

int maymk_mkdir(const char *path)
{
	return mkdir(path, 0755) == 0 ? 0 : errno;
}

// maymk_create creates a file through stdio: the openat comes from
// libc's code, so only the supervisor can tell that this library asked.
int maymk_create(const char *path)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return errno;
	fclose(f);
	return 0;
}
