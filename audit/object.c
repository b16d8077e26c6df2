/*
 * What an object of the program is: its file (path, device and inode),
 * GNU build-id, soname and executable ranges, all read from its program
 * headers in memory, and which compartment it belongs to. The rule is
 * package cell's (identity.go), applied there to what the supervisor sees.
 *
 * Every object's code is sealed as soon as the loader has mapped it, when
 * it reports the object (la_objopen), before it relocates it and before
 * any of its code runs: no code, whatever its compartment may call, can
 * then make it writable, map memory over it or unmap it; and the
 * supervisor takes for an object's code only sealed, unwritten mappings
 * of its file (cell's identity.go). An object whose code the loader must
 * write to relocate it (text relocations, which x86_64 objects have only
 * when built without -fPIC) fails to load.
 */
#include <elf.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"

#define MAX_OBJECTS 4096
#define PAGE 4096UL

static uintptr_t align_up(uintptr_t v, uintptr_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static void build_id(struct object *o, const char *notes, size_t size, size_t align)
{
	static const char hex[] = "0123456789abcdef";
	if (align < 4)
		align = 4;
	size_t off = 0;
	while (off + sizeof(ElfW(Nhdr)) <= size) {
		const ElfW(Nhdr) *nh = (const void *)(notes + off);
		size_t desc = off + sizeof *nh + align_up(nh->n_namesz, align);
		if (desc + nh->n_descsz > size)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    memcmp(notes + off + sizeof *nh, "GNU", 4) == 0 &&
		    nh->n_descsz <= (sizeof o->build_id - 1) / 2) {
			const unsigned char *d = (const unsigned char *)notes + desc;
			for (size_t i = 0; i < nh->n_descsz; i++) {
				o->build_id[2 * i] = hex[d[i] >> 4];
				o->build_id[2 * i + 1] = hex[d[i] & 15];
			}
			o->build_id[2 * nh->n_descsz] = '\0';
			return;
		}
		off = desc + align_up(nh->n_descsz, align);
	}
}

/* soname reads DT_SONAME. The loader relocates the dynamic section's
   pointers in place where it is writable and leaves them as link-time
   addresses where it is not (the vDSO's). */
static const char *soname(const ElfW(Dyn) *dyn, uintptr_t bias)
{
	uintptr_t strtab = 0;
	long name = -1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		if (dyn->d_tag == DT_STRTAB)
			strtab = dyn->d_un.d_ptr;
		else if (dyn->d_tag == DT_SONAME)
			name = dyn->d_un.d_val;
	}
	if (strtab == 0 || name < 0)
		return "";
	if (strtab < bias)
		strtab += bias;
	return (const char *)strtab + name;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static bool is_runtime(const char *name)
{
	for (unsigned i = 0; i < config.nruntime; i++)
		if (strcmp(config.runtime[i], name) == 0)
			return true;
	return false;
}

/* stat_object reads o's device and inode, once. */
static void stat_object(struct object *o)
{
	struct stat st;
	if (o->stat_path != NULL && stat(o->stat_path, &st) == 0) {
		o->dev = st.st_dev;
		o->ino = st.st_ino;
	}
	o->stat_path = NULL;
}

/* matches tests the file last: under the filter, stat is a supervised
   call. */
static bool matches(const struct compartment *c, struct object *o, const char *so)
{
	if (c->nothing)
		return false;
	if (c->build_id != NULL && strcmp(c->build_id, o->build_id) != 0)
		return false;
	if (c->name != NULL && strcmp(c->name, so) != 0 && strcmp(c->name, base_name(o->path)) != 0)
		return false;
	if (c->file) {
		stat_object(o);
		return o->ino != 0 && c->dev == o->dev && c->ino == o->ino;
	}
	return true;
}

static int compartment_of(struct object *o, const char *so)
{
	for (unsigned i = 0; i < config.nslots; i++)
		if (matches(&config.slots[i], o, so))
			return i;
	return -1;
}

/* The executable's own path: the loader names it "". An image an exec
   started has it from the supervisor, with the answer to its bound mark
   (inherit_bound): a readlink of its own would be one more call the
   supervisor decides. Where neither gives it (an image executed under a
   policy that denies readlink), the executable is matched by build-id
   alone, or belongs to no compartment: its calls then reach the
   supervisor, which attributes them itself. */
static char exe_path[4096];

char *object_executable_buffer(size_t *size)
{
	*size = sizeof exe_path;
	return exe_path;
}

static const char *executable_path(void)
{
	if (exe_path[0] == '\0') {
		ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
		exe_path[n < 0 ? 0 : n] = '\0';
	}
	return exe_path;
}

static bool is_vdso(const ElfW(Phdr) *ph)
{
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
	return vdso != 0 && (uintptr_t)ph >= vdso && (uintptr_t)ph < vdso + PAGE;
}

/* elf_phdrs returns the program headers of the object whose ELF header
   is mapped at base, and their number, or 0 where base holds none. */
static int elf_phdrs(uintptr_t base, const ElfW(Phdr) **ph)
{
	const ElfW(Ehdr) *eh = (const void *)base;
	if (base == 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return 0;
	*ph = (const void *)(base + eh->e_phoff);
	return eh->e_phnum;
}

/* phdrs returns map's program headers, as dlinfo's RTLD_DI_PHDR would:
   the executable's are where the kernel says (AT_PHDR), unless the
   kernel started the loader itself (no AT_BASE), which then loaded the
   executable as it loads any other object; every other object's follow
   the ELF header its first segment maps at its load address. */
static int phdrs(const struct link_map *map, bool executable, const ElfW(Phdr) **ph)
{
	if (executable && getauxval(AT_BASE) != 0) {
		*ph = (const void *)getauxval(AT_PHDR);
		return getauxval(AT_PHNUM);
	}
	int n = elf_phdrs(map->l_addr, ph);
	if (n == 0)
		die("%s: no ELF header at its load address %#lx", map->l_name, (unsigned long)map->l_addr);
	return n;
}

/* seal_code seals o's code and, the first time, that of this library's
   namespace, which the loader has loaded before it reports any object. */
static void seal_code(const struct object *o)
{
	static bool auditor;
	if (!auditor) {
		object_auditor_code(window_seal);
		auditor = true;
	}
	for (unsigned t = 0; t < o->ntext; t++)
		window_seal(o->text[t]);
}

struct object *object_identify(struct link_map *map, Lmid_t lmid, bool stat_file)
{
	static struct object objects[MAX_OBJECTS];
	static unsigned count;
	if (count == MAX_OBJECTS)
		die("more than %d objects", MAX_OBJECTS);
	struct object *o = &objects[count++];
	const char *so = "";
	bool executable = lmid == LM_ID_BASE && map->l_prev == NULL;
	const ElfW(Phdr) *ph;
	int nph = phdrs(map, executable, &ph);
	bool vdso = is_vdso(ph);

	o->map = map;
	o->slot = -1;
	o->path = executable ? executable_path() : map->l_name;
	for (int i = 0; i < nph; i++) {
		const char *at = (const char *)(map->l_addr + ph[i].p_vaddr);
		switch (ph[i].p_type) {
		case PT_LOAD:
			if (ph[i].p_flags & PF_X) {
				if (o->ntext == MAX_TEXT)
					die("%s has more than %d executable segments", o->path, MAX_TEXT);
				o->text[o->ntext].start = (uintptr_t)at & ~(PAGE - 1);
				o->text[o->ntext].end = align_up((uintptr_t)at + ph[i].p_memsz, PAGE);
				o->ntext++;
			}
			break;
		case PT_NOTE:
			if (o->build_id[0] == '\0')
				build_id(o, at, ph[i].p_filesz, ph[i].p_align);
			break;
		case PT_DYNAMIC:
			so = soname((const void *)at, map->l_addr);
			break;
		}
	}
	o->stat_path = vdso ? NULL : executable ? "/proc/self/exe" : o->path;
	if (stat_file)
		stat_object(o);
	o->runtime = vdso || is_runtime(so) || is_runtime(base_name(o->path));
	o->wrappers = lmid == LM_ID_BASE && strcmp(so, "libc.so.6") == 0;
	if (o->wrappers)
		gate_redirect(o);
	seal_code(o);
	if (!o->runtime)
		o->slot = compartment_of(o, so);
	return o;
}

/* This library's ELF header, where the linker puts __ehdr_start. */
extern const ElfW(Ehdr) __ehdr_start;

void object_auditor_code(void (*fn)(struct range))
{
	/* The namespace holds this library alone: the loader, in every
	   namespace, is also an object of the program's, which la_objopen
	   reports (and seals) next after the executable. */
	uintptr_t base = (uintptr_t)&__ehdr_start;
	const ElfW(Phdr) *ph;
	int n = elf_phdrs(base, &ph);
	for (int i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		uintptr_t start = base + ph[i].p_vaddr;
		fn((struct range){start & ~(PAGE - 1), align_up(start + ph[i].p_memsz, PAGE)});
	}
}
