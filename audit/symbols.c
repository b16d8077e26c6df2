/*
 * The dynamic symbols of an object the loader has mapped, read from its
 * dynamic section, found by name through its .gnu.hash table: gate.c
 * patches libc's wrappers, window.c finds the program's errno and
 * cancellation functions.
 */
#include <elf.h>
#include <string.h>

#include "audit.h"

struct symbols symbols_of(const struct link_map *map)
{
	struct symbols s = {.bias = map->l_addr};
	uintptr_t bias = map->l_addr;
	if (map->l_ld == NULL)
		return s;
	/* The loader relocates the dynamic section's addresses where it is
	   writable, and leaves them as they were linked where it is not
	   (the vDSO's). */
#define AT(p) ((p) < bias ? (p) + bias : (p))
	for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
		uintptr_t p = AT(d->d_un.d_ptr);
		switch (d->d_tag) {
		case DT_SYMTAB: s.sym = (const void *)p; break;
		case DT_STRTAB: s.str = (const void *)p; break;
		case DT_VERSYM: s.versym = (const void *)p; break;
		case DT_GNU_HASH: s.gnu_hash = (const void *)p; break;
		}
	}
#undef AT
	return s;
}

/* defines says whether symbol i is a definition of name's default
   version, as dlsym finds it (an IFUNC's address is its resolver's: the
   program's errno and cancellation functions are none). */
static bool defines(const struct symbols *s, uint32_t i, const char *name)
{
	const ElfW(Sym) *sym = &s->sym[i];
	if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 || ELF64_ST_BIND(sym->st_info) == STB_LOCAL)
		return false;
	if (s->versym != NULL && (s->versym[i] & 0x8000))
		return false;
	return strcmp(s->str + sym->st_name, name) == 0;
}

long symbols_index(const struct symbols *s, const char *name)
{
	const uint32_t *h = s->gnu_hash;
	if (h == NULL || s->sym == NULL || s->str == NULL)
		return -1;
	uint32_t nbuckets = h[0], offset = h[1], nbloom = h[2], shift = h[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + nbloom), *chain = buckets + nbuckets;
	uint32_t hash = name_hash(name);
	const unsigned bits = 8 * sizeof *bloom;
	ElfW(Addr) word = bloom[(hash / bits) % nbloom];
	if (!((word >> (hash % bits)) & 1) || !((word >> ((hash >> shift) % bits)) & 1))
		return -1;
	for (uint32_t i = buckets[hash % nbuckets]; i >= offset; i++) {
		uint32_t link = chain[i - offset];
		if ((link | 1) == (hash | 1) && defines(s, i, name))
			return i;
		if (link & 1)
			break;
	}
	return -1;
}

uintptr_t symbols_lookup(const struct symbols *s, const char *name)
{
	long i = symbols_index(s, name);
	return i < 0 ? 0 : s->bias + s->sym[i].st_value;
}
