/*
 * Calls libc makes on a compartment's behalf: stdio's reads and writes,
 * fopen's openat, opendir's getdents64. They leave from libc's code, so the
 * filter cannot tell whose they are, and the supervisor used to find out
 * by unwinding the caller's stack, some ten microseconds a call. Here the
 * compartment that called into libc leaves a mark the call can be decided
 * by in the kernel:
 *
 * - Gates: a compartment's binding of a libc function that may make
 *   system calls goes through a gate (gate.S), which notes, in the
 *   thread's entries, where the caller's return address lies and which
 *   compartment called, and calls the function in a frame of its own,
 *   dropping the entry when it returns (and those a longjmp left).
 * - Redirects: libc's own wrappers of the calls that depend on the
 *   caller are patched, before libc's code is sealed and before any of it
 *   runs, to jump to a redirect (gate.S). Called from libc's code while a
 *   gate's entry lives, the wrapper makes its call at the stub of that
 *   entry's compartment, where the filter decides it by instruction
 *   pointer as it decides the compartment's own calls. Otherwise (no live
 *   entry, a call from outside libc, through a pointer to libc's
 *   wrapper) the call is made by the runtime's own copy of the wrapper's
 *   stub (runtime_stubs.S), in this library's code, whose calls are the
 *   runtime's: the supervisor unwinds them, as before.
 *
 * The owner is the innermost compartment whose call into libc is still
 * running, which is what the supervisor's unwinding finds, tail calls
 * included (a library that ends in `jmp fflush@plt` enters the gate
 * itself). Functions that take callbacks get no gate, so that code they
 * call back is not taken for their caller's; what stays is in
 * docs/THREAT-MODEL.md.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "audit.h"
#include "gate.h"

#define PAGE 4096UL
#define STRIDE 16
/* jmp *0(%rip), then the address: what a patched wrapper begins with. */
#define PATCH 14

struct gate {
	uintptr_t target, slot;
};
struct redirect {
	long offset;
	uintptr_t fallback;
};
struct entries {
	uintptr_t top, scratch, overflow;
	struct {
		uintptr_t sp, ret, gate;
	} e[DEPTH];
};
_Static_assert(sizeof(struct gate) == STRIDE && offsetof(struct gate, slot) == GATE_SLOT, "gate.h");
_Static_assert(offsetof(struct redirect, fallback) == REDIRECT_FALLBACK, "gate.h");
_Static_assert(offsetof(struct entries, overflow) == OVERFLOW && offsetof(struct entries, e) == E &&
		       offsetof(struct entries, e[0].ret) == E_RET &&
		       sizeof(((struct entries *)0)->e[0]) == ENTRY, "gate.h");

/* Read by gate.S. */
struct gate syscell_gate_table[NGATES];
struct redirect syscell_redirect_table[NREDIRECTS];
uintptr_t syscell_libc_text[2];
/* The redirect of libc's mmap, which takes only the mappings a caller
   owns (a file, executable memory): anonymous memory is malloc's, the
   runtime's, and falls back. -1 while mmap has none. */
long syscell_redirect_mmap = -1;
uintptr_t syscell_entries_offset;
extern const char syscell_gates[], syscell_redirects[];

static __thread struct entries entries __attribute__((tls_model("initial-exec")));
static unsigned ngates;

static bool prefixed(const char *name, const char *const *prefixes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

#define COUNT(a) (sizeof a / sizeof *a)

/* What a gate leaves alone (gate_binding), by name or by prefix. */

/* Routines make no call whose owner matters: string, memory, character
   and regular expression functions, which make none; malloc's family and
   the locks, whose calls (brk, mmap, futex) are everyone's or the
   runtime's. They are hot enough (sed calls re_search and
   clearerr_unlocked for every line) that a gate would cost them time; a
   function left out here only costs time. */
static const char *const routine_prefixes[] = {
	"mem", "rawmem", "str", "stp", "wmem", "wcs", "__mem", "__str", "__stp", "__wmem", "__wcs",
	"__ctype_", "isw", "tow", "mbr", "mbs", "wcr", "re_", "reg", "pthread_mutex_", "pthread_cond_",
	"pthread_rwlock_", "pthread_spin_",
};
static const char *const routines[] = {
	"__errno_location", "aligned_alloc", "btowc", "calloc", "clearerr", "clearerr_unlocked", "feof",
	"feof_unlocked", "ferror", "ferror_unlocked", "fileno", "fileno_unlocked", "free", "getenv",
	"getopt", "getopt_long", "getopt_long_only", "isalnum", "isalpha", "isascii", "isblank",
	"iscntrl", "isdigit", "isgraph", "islower", "isprint", "ispunct", "isspace", "isupper",
	"isxdigit", "malloc", "malloc_usable_size", "memalign", "nl_langinfo", "posix_memalign",
	"pthread_equal", "pthread_getspecific", "pthread_self", "pthread_setspecific", "pvalloc",
	"realloc", "reallocarray", "secure_getenv", "tolower", "toupper", "valloc", "wctob",
};
/* Functions that call back run the program's code while they last (a
   comparison, a handler, a constructor, a thread): that code's calls into
   libc through pointers, which pass no gate of its own, would be taken
   for the caller's. Left without a gate, the calls such a function makes
   itself go to the supervisor. */
static const char *const calling_back[] = {
	"__cxa_atexit", "__cxa_thread_atexit_impl", "__libc_start_main", "at_quick_exit", "atexit",
	"bsearch", "clone", "exit", "fopencookie", "fork", "ftw", "ftw64", "glob", "glob64", "lfind",
	"lsearch", "makecontext", "nftw", "nftw64", "on_exit", "pthread_create", "pthread_once",
	"qsort", "qsort_r", "quick_exit", "scandir", "scandir64", "scandirat", "scandirat64",
	"swapcontext", "tdelete", "tdestroy", "tfind", "tsearch", "twalk", "twalk_r",
};
/* Frameless functions need their caller's frame to be the one that
   called them: the dynamic loader's functions find the calling object by
   the return address (dlsym's RTLD_NEXT, dlopen's namespace), and
   functions that return twice come back to a frame a gate has left. */
static const char *const frameless_prefixes[] = {"dl", "_dl", "__dl", "mcount", "_mcount"};
static const char *const frameless[] = {
	"__sigsetjmp", "_setjmp", "getcontext", "savectx", "setcontext", "setjmp", "sigsetjmp", "vfork",
};

/* left_alone holds the names above, hashed once: a binding is checked for
   each symbol every image binds. */
static struct names left_alone;

static void leave_alone(const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		names_add(&left_alone, names[i], 1);
}

/* gated says whether a binding of name gets a gate. */
static bool gated(const char *name)
{
	return wrapper_nr(name) < 0 && names_find(&left_alone, name) == 0 &&
	       !prefixed(name, routine_prefixes, COUNT(routine_prefixes)) &&
	       !prefixed(name, frameless_prefixes, COUNT(frameless_prefixes));
}

void gate_init(void)
{
	syscell_entries_offset = (uintptr_t)&entries - (uintptr_t)__builtin_thread_pointer();
	leave_alone(routines, COUNT(routines));
	leave_alone(calling_back, COUNT(calling_back));
	leave_alone(frameless, COUNT(frameless));
}

uintptr_t gate_binding(int slot, const char *name, uintptr_t target)
{
	if (!gated(name))
		return target;
	unsigned i = __atomic_fetch_add(&ngates, 1, __ATOMIC_RELAXED);
	if (i >= NGATES)
		return target;
	syscell_gate_table[i] = (struct gate){target, window_slot(slot)};
	return (uintptr_t)syscell_gates + i * STRIDE;
}

static void patch(uintptr_t at, uintptr_t to)
{
	unsigned char code[PATCH] = {0xff, 0x25};
	memcpy(code + 6, &to, sizeof to);
	memcpy((void *)at, code, sizeof code);
}

/* housekeeping says whether libc's own calls of nr are memory it manages
   for whoever called it (malloc's brk and mmap): the runtime's calls, not
   its caller's, by the attribution rule (attribute/housekeeping.go),
   which the supervisor applies. mmap is redirected all the same, and its
   redirect tells the two kinds apart by the arguments, as that rule does
   (gate.S). */
static bool housekeeping(long nr)
{
	switch (nr) {
	case __NR_brk:
	case __NR_mprotect:
	case __NR_munmap:
	case __NR_mremap:
	case __NR_madvise:
		return true;
	}
	return false;
}

/* redirectable says whether symbol i of libc, the wrapper of redirect k,
   is its default version, long enough to patch, inside libc's code.
   vfork's is not: a redirect's fallback calls the wrapper from a frame
   of its own, which the child's calls would overwrite before the parent
   returns through it. */
static bool redirectable(const struct symbols *s, long i, long k)
{
	const ElfW(Sym) *sym = &s->sym[i];
	uintptr_t at = s->bias + sym->st_value;
	if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size < PATCH)
		return false;
	if (at < syscell_libc_text[0] || at + PATCH > syscell_libc_text[0] + syscell_libc_text[1])
		return false;
	long nr = wrapper_nr(stub_name(k));
	return !housekeeping(nr) && nr != __NR_vfork;
}

void gate_redirect(const struct object *libc)
{
	if (libc->ntext != 1)
		return;
	struct range text = libc->text[0];
	syscell_libc_text[0] = text.start;
	syscell_libc_text[1] = text.end - text.start;
	for (long k = 0; k < NREDIRECTS; k++) {
		const char *name = stub_name(k);
		if (name == NULL)
			break;
		long offset = stub_offset(name);
		uintptr_t own = offset >= 0 ? stub_runtime(name) : 0;
		syscell_redirect_table[k] = (struct redirect){offset, own};
		if (wrapper_nr(name) == __NR_mmap)
			syscell_redirect_mmap = k;
	}
	/* Where libc's code cannot be written (a security module refusing to
	   write a file's code), its wrappers stay as they are: the calls they
	   make go to the supervisor. */
	if (mprotect((void *)text.start, text.end - text.start, PROT_READ | PROT_WRITE) != 0)
		return;
	/* Each redirect's wrapper is looked up by name: walking libc's
	   thousands of symbols instead took a quarter of a millisecond of
	   every exec. */
	struct symbols s = symbols_of(libc->map);
	for (long k = 0; k < NREDIRECTS && stub_name(k) != NULL; k++) {
		if (syscell_redirect_table[k].fallback == 0)
			continue;
		long i = symbols_index(&s, stub_name(k));
		if (i >= 0 && redirectable(&s, i, k))
			patch(s.bias + s.sym[i].st_value, (uintptr_t)syscell_redirects + k * STRIDE);
	}
	if (mprotect((void *)text.start, text.end - text.start, PROT_READ | PROT_EXEC) != 0)
		die("make libc's code executable again: %s", strerror(errno));
}
