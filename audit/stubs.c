/* The wrappers of wrappers.def, by name, and where their stubs lie. */
#include <asm/unistd_64.h>
#include <stddef.h>

#include "audit.h"

extern const char syscell_stub_block[], syscell_stub_block_end[], syscell_stub_sites[];
extern char syscell_runtime_stub_pointers[];
#define W(sym, kind, nr, cancel) extern const char syscell_stub_##sym[], syscell_runtime_stub_##sym[];
#define A(alias, sym)
#include "wrappers.def"
#undef W
#undef A

/* ANY marks syscall(), which makes any call. */
#define ANY -1

/* The call each wrapper makes, by its symbol, for its aliases. */
enum {
#define W(sym, kind, nr, cancel) nr_##sym = nr,
#define A(alias, sym)
#include "wrappers.def"
#undef W
#undef A
};

struct wrapper {
	const char *name;
	int nr;	/* an alias's too */
	const char *stub;
	const char *runtime;	/* the runtime's own copy of the stub */
	long offset;	/* filled by stubs_init: -1 when not redirected */
};

static struct wrapper wrappers[] = {
#define W(sym, kind, nr, cancel) {#sym, nr, syscell_stub_##sym, syscell_runtime_stub_##sym, 0},
#define A(alias, sym) {#alias, nr_##sym, syscell_stub_##sym, syscell_runtime_stub_##sym, 0},
#include "wrappers.def"
#undef W
#undef A
};
#define NWRAPPERS (sizeof wrappers / sizeof *wrappers)

size_t stub_block_size(void)
{
	return syscell_stub_block_end - syscell_stub_block;
}

const void *stub_block(void)
{
	return syscell_stub_block;
}

size_t stub_sites(void)
{
	return syscell_stub_sites - syscell_stub_block;
}

/* by_name holds each wrapper's index, plus one. */
static struct names by_name;

/* stubs_init decides which wrappers are redirected: those whose call
   depends on the caller, and syscall(), and indexes them by name. */
void stubs_init(void)
{
	for (size_t i = 0; i < NWRAPPERS; i++) {
		int nr = wrappers[i].nr;
		bool redirect = nr == ANY || (nr >= 0 && nr < MAX_NR && config.stub_nr[nr]);
		wrappers[i].offset = redirect ? wrappers[i].stub - syscell_stub_block : -1;
		names_add(&by_name, wrappers[i].name, i + 1);
	}
}

/* find returns the wrapper named name, or NULL, once stubs_init has
   indexed them. */
static const struct wrapper *find(const char *name)
{
	unsigned i = names_find(&by_name, name);
	return i == 0 ? NULL : &wrappers[i - 1];
}

long wrapper_nr(const char *name)
{
	const struct wrapper *w = find(name);
	return w == NULL || w->nr < 0 ? -1 : w->nr;
}

long stub_offset(const char *name)
{
	const struct wrapper *w = find(name);
	return w ? w->offset : -1;
}

uintptr_t stub_runtime(const char *name)
{
	const struct wrapper *w = find(name);
	return w ? (uintptr_t)w->runtime : 0;
}

void *stub_runtime_pointers(void)
{
	return syscell_runtime_stub_pointers;
}

long stub_index(const char *name)
{
	const struct wrapper *w = find(name);
	return w != NULL && w->offset >= 0 ? w - wrappers : -1;
}

const char *stub_name(long index)
{
	return index >= 0 && (size_t)index < NWRAPPERS ? wrappers[index].name : NULL;
}
