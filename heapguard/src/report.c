// Reports: a use of a freed object (from the fault it causes), a double
// or invalid free. Written with write(2) alone, because they run in a
// signal handler or in a heap that can no longer be trusted.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "internal.h"

static struct sigaction previous_segv;

void hg_say(const char *msg)
{
	size_t n = strlen(msg);
	while (n > 0) {
		ssize_t w = write(2, msg, n);
		if (w <= 0)
			return;
		msg += w;
		n -= (size_t)w;
	}
}

static void say_num(uintptr_t v, int base)
{
	char buf[24];
	int i = sizeof buf - 1;
	buf[i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16) {
		buf[--i] = 'x';
		buf[--i] = '0';
	}
	hg_say(buf + i);
}

static void say_header(const char *what)
{
	hg_say("==");
	say_num((uintptr_t)getpid(), 10);
	hg_say("== heapguard: ");
	hg_say(what);
}

// One frame: address, symbol+offset when the dynamic symbol table has it,
// and object+offset, which addr2line resolves when it does not.
static void say_frame(int i, uintptr_t pc)
{
	hg_say("    #");
	say_num(i, 10);
	hg_say(" ");
	say_num(pc, 16);
	Dl_info info;
	if (dladdr((void *)(pc - 1), &info) && info.dli_fname) {
		if (info.dli_sname) {
			hg_say(" in ");
			hg_say(info.dli_sname);
			hg_say("+");
			say_num(pc - (uintptr_t)info.dli_saddr, 16);
		}
		hg_say(" (");
		hg_say(info.dli_fname);
		hg_say("+");
		say_num(pc - (uintptr_t)info.dli_fbase, 16);
		hg_say(")");
	}
	hg_say("\n");
}

static void say_trace(const char *title, uint32_t id_plus_one)
{
	uintptr_t pc[HG_TRACE_DEPTH];
	hg_say("  ");
	hg_say(title);
	hg_say(":\n");
	int n = id_plus_one ? hg_trace_get((id_plus_one - 1) & 0xffffff, pc) : 0;
	if (n == 0)
		hg_say("    (site not recorded)\n");
	for (int i = 0; i < n; i++)
		say_frame(i, pc[i]);
}

static void say_object(const struct hg_found *f)
{
	hg_say("a ");
	say_num(f->size, 10);
	hg_say("-byte object at ");
	say_num(f->start, 16);
}

void hg_report_free_error(const char *what, const void *p, const struct hg_found *f, uint32_t trace)
{
	say_header(what);
	hg_say(" of ");
	say_num((uintptr_t)p, 16);
	if (f) {
		hg_say(", ");
		say_object(f);
	}
	hg_say("\n");
	say_trace("this free", trace + 1);
	if (f) {
		say_trace("allocated at", f->alloc);
		if (f->freed)
			say_trace("first freed at", f->freed);
	}
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
	_exit(134);
}

// hg_report_record_error reports a bad free (or use) of p in strict mode.
void hg_report_record_error(const char *what, const void *p, const struct hg_record *r, uint32_t trace)
{
	struct hg_found f = {(uintptr_t)p, r->size, atomic_load(&r->alloc), atomic_load(&r->freed)};
	hg_report_free_error(what, p, &f, trace);
}

void hg_die(const char *what)
{
	say_header(what);
	hg_say("\n");
	signal(SIGABRT, SIG_DFL);
	raise(SIGABRT);
	_exit(134);
}

// A fault in a released chunk: every object there is dead, its record gone.
static int in_released_chunk(uintptr_t a)
{
	if (!hg.small || !hg_in_small(a))
		return 0;
	uint32_t frame = ((a - (uintptr_t)hg.small) % HG_FILE) / HG_PAGE;
	return hg.chunks[frame / HG_CHUNK_FRAMES].released;
}

// freed_object finds the freed object an address belongs to: 1 if found,
// -1 if a lies in memory released with its records, 0 if a is not a freed
// object's.
static int freed_object(uintptr_t a, struct hg_found *f)
{
	const struct hg_record *r = NULL;
	uintptr_t start = 0;
	if (hd_owns(a)) {
		int found = hd_find(a, f);
		return found == 1 && !f->freed ? 0 : found;
	}
	if (hg.small && hg_in_small(a)) {
		r = hg_small_record(a);
		start = (a & ~(HG_PAGE - 1)) + r->extent;
	} else if (hg.large && hg_in_large(a)) {
		r = hg_large_find(a, &start);
	}
	if (!r || !atomic_load(&r->alloc) || !atomic_load(&r->freed))
		return in_released_chunk(a) || hg_block_released(a) ? -1 : 0;
	*f = (struct hg_found){start, r->size, atomic_load(&r->alloc), atomic_load(&r->freed)};
	return 1;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct hg_found f;
	int found = freed_object(a, &f);
	int write = (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
	if (found < 0) {
		say_header("use-after-free: ");
		hg_say(write ? "write to " : "read of ");
		say_num(a, 16);
		hg_say(", in memory released long after the object was freed (its size and sites are no longer recorded)\n");
		signal(SIGSEGV, SIG_DFL);
		return;
	}
	if (!found) {
		// Not ours: whatever the program (or the default) would do.
		if (previous_segv.sa_flags & SA_SIGINFO && previous_segv.sa_sigaction)
			previous_segv.sa_sigaction(sig, si, uc);
		else if (previous_segv.sa_handler != SIG_DFL && previous_segv.sa_handler != SIG_IGN)
			previous_segv.sa_handler(sig);
		else
			signal(sig, SIG_DFL);
		return;
	}
	say_header("use-after-free: ");
	hg_say(write ? "write to " : "read of ");
	say_num(a, 16);
	hg_say(", ");
	if (a >= f.start) {
		say_num(a - f.start, 10);
		hg_say(" bytes into ");
	} else {
		say_num(f.start - a, 10);
		hg_say(" bytes before ");
	}
	say_object(&f);
	hg_say("\n");
	say_trace("allocated at", f.alloc);
	say_trace("freed at", f.freed);
	// Returning re-runs the access, which faults again and, with the
	// default action, kills the process with SIGSEGV.
	signal(SIGSEGV, SIG_DFL);
}

void hg_install_fault_handler(void)
{
	struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &previous_segv);
}
