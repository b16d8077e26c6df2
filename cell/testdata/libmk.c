// libmk.so: its compartment may make only the calls every compartment
// may. Its constructor tries mkdir($PROG_CTOR_DIR) before main runs.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int lib_ctor_result = 1, lib_ctor_errno;

__attribute__((constructor)) static void ctor(void)
{
	const char *dir = getenv("PROG_CTOR_DIR");
	if (dir != NULL) {
		lib_ctor_result = mkdir(dir, 0700);
		lib_ctor_errno = errno;
	}
}

int lib_mkdir(const char *path)
{
	return mkdir(path, 0700);
}

// lib_fopen opens a file through stdio, whose openat comes from libc's
// own code.
int lib_fopen(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	fclose(f);
	return 0;
}
