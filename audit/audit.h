/*
 * syscell's LD_AUDIT library: gives each compartment's bindings of libc's
 * system-call wrappers stubs in the compartment's slot of the stub window,
 * reports the process's layout to the launcher (package cell), installs
 * the per-library filter the launcher compiled, and hands the launcher
 * the filter's notification listener. See ARCHITECTURE.md, "audit".
 *
 * Everything here runs in the auditor's own link-map namespace, with no
 * libc but the library's own minimal runtime (rt.h); what must act on the
 * program (its errno, its cancellation state) is reached through the
 * program's global scope.
 */
#ifndef SYSCELL_AUDIT_H
#define SYSCELL_AUDIT_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The loader's entry points; build.sh hides everything else. */
#define EXPORT __attribute__((visibility("default")))

/* Protocol version, checked by the launcher. */
#define PROTOCOL_VERSION 2
/* The environment variables naming the socket to the launcher: an
   inherited descriptor (syscell run), or the path of a supervisor's
   socket to connect to (a container's, package supervisor). */
#define CHANNEL_ENV "SYSCELL_CELL_FD"
#define SOCKET_ENV "SYSCELL_CELL_SOCKET"
/* The highest system call number a stub set can name. */
#define MAX_NR 1024

/* fail.c */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

/* channel.c: the socket to the launcher, line by line. */
void channel_open(const char *fd);
void channel_connect(const char *path);
/* Whether the launcher is this process's parent (an inherited socket),
   which reaps the helper (install.c). */
bool channel_parent(void);
void channel_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void channel_flush(void);
char *channel_line(void);
void channel_read(void *buf, size_t n);
int channel_fd(void);

/* How a compartment names the objects that belong to it: every name it
   has must match (see package cell, identity.go). */
struct compartment {
	bool nothing;		/* matches no object */
	char *build_id;		/* the GNU build-id in hex, or NULL */
	bool file;		/* the file at its path, by device and inode */
	dev_t dev;
	ino_t ino;
	char *name;		/* a soname or file name, or NULL */
};

/* config.c: what the launcher sends at start. */
struct range {
	uintptr_t start, end;
};
/* A compartment's code range in the layout of an image executed before. */
struct inherited {
	unsigned slot;
	struct range range;
};
#define MAX_INHERITED 4096
struct config {
	uintptr_t window;
	unsigned shift;
	unsigned nslots;
	struct compartment *slots;
	char **runtime;	/* sonames of the system runtime, NULL-terminated */
	unsigned nruntime;
	bool stub_nr[MAX_NR];	/* caller-dependent system calls */
	bool serving_nr[MAX_NR];	/* calls that start serving (phase.c) */
	bool phases;		/* some call does */
	struct inherited inherited[MAX_INHERITED];
	unsigned ninherited;
};
extern struct config config;
void config_read(void);
void config_inherit(const char *value);

/* object.c: what an object of the program is. */
#define MAX_TEXT 8
struct object {
	struct link_map *map;
	int slot;		/* compartment slot, -1 for none */
	bool runtime;		/* libc, the loader, the vDSO */
	bool wrappers;		/* the base namespace's libc: its wrappers get stubs */
	dev_t dev;
	ino_t ino;
	const char *stat_path;	/* what to stat for dev and ino; NULL once done */
	char build_id[2 * 64 + 1];
	const char *path;
	struct range text[MAX_TEXT];
	unsigned ntext;
};
/* Identifies the object the loader has just mapped, and seals its code.
   Unless stat_file, its file is read for its device and inode only if a
   compartment that names its objects by file is otherwise its. */
struct object *object_identify(struct link_map *map, Lmid_t lmid, bool stat_file);
/* Calls fn with each range of code of this library's own namespace (the
   library alone), which la_objopen never sees. */
void object_auditor_code(void (*fn)(struct range));

/* symbols.c: the dynamic symbols of an object the loader has mapped. */
struct symbols {
	uintptr_t bias;
	const ElfW(Sym) *sym;
	const char *str;
	const ElfW(Half) *versym;
	const uint32_t *gnu_hash;
};
struct symbols symbols_of(const struct link_map *map);
/* The index of name's default version where the object defines it
   (found through its .gnu.hash; an object without one defines nothing
   here), or -1. */
long symbols_index(const struct symbols *s, const char *name);
/* The address of name's default version where the object defines it
   (found through its .gnu.hash; an object without one defines nothing
   here), or 0. */
uintptr_t symbols_lookup(const struct symbols *s, const char *name);

/* names.c: sets of names, each with a value, which add ORs together. */
#define NAME_SLOTS 512
struct names {
	const char *name[NAME_SLOTS];
	unsigned value[NAME_SLOTS];
	unsigned count;
};
/* The hash .gnu.hash gives a symbol's name. */
uint32_t name_hash(const char *name);
void names_add(struct names *t, const char *name, unsigned value);
/* name's value in t, 0 where t has not got it. */
unsigned names_find(const struct names *t, const char *name);

/* stubs.c: wrappers and their stubs. */
size_t stub_block_size(void);
const void *stub_block(void);
/* The offset in the block of its table of sites (stubs.S). */
size_t stub_sites(void);
void stubs_init(void);
/* The offset of name's stub in the block, or -1 when it has none or its
   system call does not depend on the caller. */
long stub_offset(const char *name);
/* The system call wrapper name makes, -1 for none or syscall(). */
long wrapper_nr(const char *name);
/* The index of name among the wrappers, once stubs_init has ordered
   them, or -1 when it has no stub; and the name at an index, NULL past
   the last. */
long stub_index(const char *name);
const char *stub_name(long index);
/* The runtime's own copy of name's stub (runtime_stubs.S), or 0; and
   where that copy's three pointers lie (stubs.h). */
uintptr_t stub_runtime(const char *name);
void *stub_runtime_pointers(void);

/* gate.c: calls libc makes on a compartment's behalf. */
void gate_init(void);
/* What a compartment's binding of libc's name, which would go to target,
   goes to: a gate that marks the compartment's call into libc, or
   target. */
uintptr_t gate_binding(int slot, const char *name, uintptr_t target);
/* Patches the base namespace's libc, before its code is sealed, so that
   the wrappers its own code calls make their calls at the stub of the
   compartment that called into libc. */
void gate_redirect(const struct object *libc);

/* phase.c: what a compartment's binding of name, which would go to
   target, goes to: a trampoline that marks the process serving first
   where name makes a call that starts serving. */
uintptr_t phase_binding(const char *name, uintptr_t target);

/* window.c */
void window_reserve(void);
uintptr_t window_slot(unsigned slot);
/* Where the executable's path is to be written, and its size. */
char *object_executable_buffer(size_t *size);

/* The program's executable, once the loader has opened it. */
void window_program(struct link_map *executable);
void window_finish(void);
int window_seal_errno(void);
/* Seals r (mseal): its protection can no more be changed, nor memory
   mapped over it, nor r unmapped. Where the kernel cannot seal, nothing
   is sealed from then on, and window_seal_errno says why. */
void window_seal(struct range r);
uintptr_t window_epoch(void);
/* The loader starts (done false) or ends (done true) changing the objects. */
void window_epoch_change(bool done);
long syscell_stub_failed(long negative_errno);

/* layout.c: the objects seen so far, and the layout the launcher compiles. */
void layout_add(struct object *o);
void layout_send(void);

/* inherit.c: what images the program executes inherit. */
#define INHERIT_ENV "SYSCELL_CELL"
void inherit_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What images executed later inherit, complete: SYSCELL_CELL's value. */
const char *inherit_text(void);
void inherit_publish(void);
void inherit_apply(void);
void inherit_check(const struct object *o);
/* Marks for the supervisor (run/cell/startup.go): execveat(-1, ..., flags). */
#define MARK_FLAGS 0x5ce11000
#define MARK_LOADED (MARK_FLAGS | 1)
#define MARK_BOUND (MARK_FLAGS | 2)
#define MARK_INSTALLED (MARK_FLAGS | 3)
#define MARK_SERVING (MARK_FLAGS | 4)
/* The slot of the compartment that bounds this executed image, whose
   objects then all bind to it, or -1 for none (run/cell/execs.go). */
int inherit_bound(void);
/* Tells the supervisor that this executed image is loaded: its loader's
   start-up calls are over. */
void inherit_loaded(void);

/* install.c */
void install_filter(void);

#endif
