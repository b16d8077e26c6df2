// libmk.so: its compartment may make only the calls every compartment
// may. Its constructor tries mkdir($PROG_CTOR_DIR) before main runs; its
// other functions try mkdir by every way around its compartment's
// bindings: another ABI, and code of its own making. It also starts
// programs by vfork and posix_spawn, whose children share its memory.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

static int opened(FILE *f)
{
	if (f == NULL)
		return -1;
	fclose(f);
	return 0;
}

// lib_fopen opens a file through stdio, whose openat comes from libc's
// own code, called through libmk.so's binding of fopen (a gate).
int lib_fopen(const char *path)
{
	return opened(fopen(path, "r"));
}

// lib_opendir opens a directory, whose openat libc makes through its own
// __open_nocancel, called through libmk.so's binding of opendir (a gate).
int lib_opendir(const char *path)
{
	DIR *d = opendir(path);
	if (d == NULL)
		return -1;
	closedir(d);
	return 0;
}

int __open_2(const char *path, int flags);

// lib_open_2 opens a file through glibc's fortified open, which ends in
// a jump to open: the wrapper is entered from the gate's call, not from
// libc's code.
int lib_open_2(const char *path)
{
	int fd = __open_2(path, O_RDONLY);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

// lib_fopen_tail ends in a call of fopen, which gcc -O2 makes a jump
// (jmp fopen@plt): libmk.so's frame is gone when libc makes the call.
__attribute__((noinline)) FILE *lib_fopen_tail(const char *path)
{
	return fopen(path, "r");
}

// fopen_pointer is libc's own fopen: the loader resolves a pointer held
// in data to the function itself, not through libmk.so's binding.
FILE *(*volatile fopen_pointer)(const char *, const char *) = fopen;

// lib_fopen_pointer opens a file through that pointer: no gate marks
// libmk.so's call into libc, and the supervisor finds who made it.
int lib_fopen_pointer(const char *path)
{
	return opened(fopen_pointer(path, "r"));
}

// low_copy copies path into a fresh mapping below 4 GiB, where the i386
// ABI's 32-bit pointers can reach it, or exits.
static const char *low_copy(const char *path)
{
	size_t n = strlen(path) + 1;
	char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (low == MAP_FAILED || n > 4096) {
		perror("libmk.so: a path below 4 GiB");
		exit(1);
	}
	return memcpy(low, path, n);
}

// lib_int80_mkdir makes mkdir(path, 0700) through the i386 ABI: int $0x80
// with i386's number of mkdir, 39, from this library's own code. It
// returns the kernel's result as it is.
long lib_int80_mkdir(const char *path)
{
	long ret = 39;
	__asm__ volatile("int $0x80"
			 : "+a"(ret)
			 : "b"((uint32_t)(uintptr_t)low_copy(path)), "c"(0700)
			 : "r8", "r9", "r10", "r11", "memory");
	return ret;
}

// lib_x32_mkdir makes mkdir(path, 0700) through the x32 ABI: a syscall
// instruction with x32's number of mkdir, 83 | __X32_SYSCALL_BIT, from
// this library's own code. It returns the kernel's result as it is.
long lib_x32_mkdir(const char *path)
{
	long ret = 83 | 0x40000000;
	__asm__ volatile("syscall" : "+a"(ret) : "D"(path), "S"(0700L) : "rcx", "r11", "memory");
	return ret;
}

// lib_jit_mkdir writes "mov $83, %eax; syscall; ret" (x86_64's mkdir, the
// path in rdi and the mode in rsi, as a call passes them) into fresh
// anonymous memory, makes it read+exec (which its compartment may) and
// calls it: the call comes from code no object holds. It returns the
// kernel's result as it is; a failure to make the code exits, so that it
// cannot pass for a denied call.
long lib_jit_mkdir(const char *path)
{
	static const unsigned char code[] = {0xb8, 83, 0, 0, 0, 0x0f, 0x05, 0xc3};
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || mprotect(memcpy(page, code, sizeof code), 4096, PROT_READ | PROT_EXEC) != 0) {
		perror("libmk.so: executable memory");
		exit(1);
	}
	long ret = ((long (*)(const char *, long))(void *)page)(path, 0700);
	munmap(page, 4096);
	return ret;
}

// lib_vfork_exec runs argv[0] in a child made by vfork, which shares this
// process's memory until its execve, and returns the child's wait status,
// or -1.
int lib_vfork_exec(char *const argv[])
{
	pid_t child = vfork();
	if (child == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	return child < 0 || waitpid(child, &status, 0) != child ? -1 : status;
}

// lib_spawn runs argv[0] with posix_spawn, glibc's clone(CLONE_VM |
// CLONE_VFORK) and execve, and returns its wait status, or -1.
int lib_spawn(char *const argv[])
{
	pid_t child;
	int status;
	if (posix_spawn(&child, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	return waitpid(child, &status, 0) != child ? -1 : status;
}
