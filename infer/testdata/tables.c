/* Tables of function pointers in data: one that code which can run takes
   the address of, one it copies whole (a 16-byte move), and one only a
   function nothing calls takes the address of, whose functions are no
   indirect call's targets. Each function makes a call libc never makes,
   which the kernel refuses (ENOSYS). */
#include <sys/syscall.h>
#include <unistd.h>

#include "call.h"

struct ops {
	long (*first)(void);
	long (*second)(void);
};

static long used_first(void) CALL(SYS_getpmsg)
static long used_second(void) CALL(SYS_putpmsg)
static long copied_first(void) CALL(SYS_security)
static long copied_second(void) CALL(SYS_tuxcall)
static long unused_first(void) CALL(SYS_afs_syscall)
static long unused_second(void) CALL(SYS_nfsservctl)

static const struct ops used = {used_first, used_second};
static const struct ops unused = {unused_first, unused_second};
/* Writable, and written through the address never_called takes, so
   that gcc copies it rather than its known contents and that a piece of
   data starts there. */
static struct ops copied = {copied_first, copied_second};

/* A name the code points to, and a message whose tail is a name
   (infer's Object.Strings has the first, not the tail). */
const char *volatile tables_name;
const char *volatile tables_message;

long tables(void)
{
	const struct ops *volatile p = &used;
	struct ops local = copied;
	struct ops *volatile lp = &local;
	tables_name = "tables_name";
	tables_message = "cannot open";
	return p->first() + p->second() + lp->first() + lp->second();
}

/* The library can be run as a command, as libcap can: this is its entry
   point, which runs only then, never when a program loads it. */
const char tables_interp[] __attribute__((section(".interp"))) = "/lib64/ld-linux-x86-64.so.2";

__attribute__((noinline)) static long version(void) CALL(SYS_create_module)

void tables_start(void)
{
	version();
	__asm__ volatile("syscall" : : "a"((long)SYS_exit), "D"(0L) : "rcx", "r11", "memory");
	__builtin_unreachable();
}

/* Nothing calls it: what it takes the address of, libc's acct through
   its GOT slot too, is no indirect call's target. */
long never_called(void)
{
	const struct ops *volatile p = &unused;
	struct ops *volatile q = &copied;
	int (*volatile account)(const char *) = acct;
	q->first = unused_first;
	return p->first() + p->second() + account(0);
}
