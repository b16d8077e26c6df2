// libserve.so: its compartment may create files while its process
// starts, and nothing of its own once it serves (server.toml).
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

int lib_create(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

// lib_create_raw creates path through syscall(), which takes any number.
int lib_create_raw(const char *path)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		return -1;
	close((int)fd);
	return 0;
}
