/* A table of functions at the end of .data.rel.ro, which only a
   function nothing calls takes the address of, and a function that
   copies the first entry of the next section (.dynamic) through a vector
   register, as libc's code reads GOT slots: a piece of data never runs
   from one section into the next, so that the table is not live and its
   functions are not the targets of the library's call through a
   pointer it does not know. Each function makes a call libc never
   makes, which the kernel refuses (ENOSYS). */
#include <link.h>
#include <sys/syscall.h>

#include "call.h"

struct ops {
	long (*first)(void);
	long (*second)(void);
};

static long unused_first(void) CALL(SYS_vserver)
static long unused_second(void) CALL(SYS_epoll_ctl_old)

static const struct ops unused = {unused_first, unused_second};

extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

const struct ops *volatile sections_ops;
long (*volatile sections_hook)(void);
ElfW(Dyn) sections_copy;

void sections_never_called(void) { sections_ops = &unused; }

long sections(void)
{
	long (*hook)(void) = sections_hook;
	sections_copy = _DYNAMIC[0];
	return hook ? hook() : 0;
}
