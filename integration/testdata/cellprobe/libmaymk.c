// libmaymk.so: the library whose job is to make directories and files;
// its compartment may mkdir and, through stdio, open files.
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

int maymk_mkdir(const char *path)
{
	return mkdir(path, 0755) == 0 ? 0 : errno;
}

static int created(FILE *f)
{
	if (f == NULL)
		return errno;
	fclose(f);
	return 0;
}

// maymk_create creates a file through stdio: the openat comes from
// libc's code, which this library's binding of fopen marks its own, so
// the kernel decides it.
int maymk_create(const char *path)
{
	return created(fopen(path, "w"));
}

// fopen_pointer is libc's own fopen: a pointer held in data passes no
// binding of this library's.
static FILE *(*volatile fopen_pointer)(const char *, const char *) = fopen;

// maymk_create_supervised creates a file through that pointer: only the
// supervisor can tell that this library asked.
int maymk_create_supervised(const char *path)
{
	return created(fopen_pointer(path, "w"));
}
