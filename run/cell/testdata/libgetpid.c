// libgetpid.so: its compartment may call getpid and pause.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

long lib_getpid(void)
{
	return getpid();
}

// lib_getpid_indirect calls getpid through a pointer taken with &getpid:
// the loader does not audit such bindings, so the call comes from libc's
// own code, and the supervisor decides it.
long lib_getpid_indirect(void)
{
	static pid_t (*volatile get)(void) = getpid;
	long pid = get();
	__asm__ volatile("" ::: "memory");
	return pid;
}

// lib_getpid_stub returns where this library's calls of getpid go: its
// stub in the stub window. The audit library binds a compartment's dlsym
// of a wrapper as it binds the compartment's PLT calls of it, to the same
// stub of its slot; the address the PLT jumps to is in a GOT slot that
// only glibc's private structures (or a decoding of the PLT) would find.
// dlsym binds for the object its return address lies in: the barrier
// keeps the call from becoming a tail call, which would make it the
// caller's (prog's) dlsym.
void *lib_getpid_stub(void)
{
	void *stub = dlsym(RTLD_DEFAULT, "getpid");
	__asm__ volatile("" ::: "memory");
	return stub;
}

// lib_pause waits in pause, a cancellation point, until a signal comes.
long lib_pause(void)
{
	return pause();
}

// lib_cancel cancels a thread: pthread_cancel's getpid and tgkill, made
// by libc's code, belong to this library. The barrier after the call
// keeps the compiler from making it a tail call, which would leave no
// frame of this library on the stack, and the calls to lib_cancel's
// caller.
int lib_cancel(pthread_t t)
{
	int err = pthread_cancel(t);
	__asm__ volatile("" ::: "memory");
	return err;
}

// lib_cputime reads the process's CPU time, which the vDSO cannot tell:
// its clock_gettime falls back to the system call, made from the vDSO's
// code.
int lib_cputime(void)
{
	struct timespec ts;
	int err = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	__asm__ volatile("" ::: "memory");
	return err;
}

// calloc interposes libc's, as jemalloc's does in redis-server: the
// loader calls the program's calloc while it relocates the objects,
// before any constructor runs and before the audit library has finished
// the stub window, and this calloc's getpid and mkdir go through stubs
// then. The mkdir fails (ENOENT), so its stub must find the program's
// errno before the audit library has looked it up.
extern void *__libc_calloc(size_t n, size_t size);
long lib_loader_getpid;
int lib_loader_errno;
static int constructed;

__attribute__((constructor)) static void ctor(void)
{
	constructed = 1;
}

void *calloc(size_t n, size_t size)
{
	if (!constructed && lib_loader_getpid == 0) {
		lib_loader_getpid = getpid();
		errno = 0;
		lib_loader_errno = mkdir("/nonexistent/syscell-loader", 0700) == 0 ? 0 : errno;
	}
	return __libc_calloc(n, size);
}
