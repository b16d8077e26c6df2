/*
 * Phases (policy serving-from, run/cell/phases.go): a process serves from its
 * first call of a serving-loop wait (epoll_wait, accept4...). Each binding
 * a compartment has of a libc function that makes such a call goes
 * through a trampoline (phase.S), which, the first time this process
 * calls one, marks it serving: a mark the supervisor notes, since what
 * this process's memory says could be rewritten by any of its libraries.
 * A process forked later inherits the flag, and the supervisor knows it
 * serves from its parent (it was born after the parent's mark).
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"

#define NTRAMPOLINES 512
#define TRAMPOLINE_SIZE 16

extern const char syscell_phase_trampolines[];
/* Read by the trampolines; hidden, like everything here. */
uintptr_t syscell_phase_targets[NTRAMPOLINES];
int syscell_phase_serving;
void syscell_phase_serve(void);

static unsigned ntargets;
static int lock;

/* waits are libc's functions that make a serving-loop wait and make it
   through a conversion (of signal masks or timeouts) wrappers.def does
   not stub; the others are found there. */
static const struct {
	const char *name;
	int nr;
} waits[] = {
	{"epoll_pwait", __NR_epoll_pwait},
	{"epoll_pwait2", __NR_epoll_pwait2},
	{"sigsuspend", __NR_rt_sigsuspend},
	{"ppoll", __NR_ppoll},
	{"select", __NR_select},
	{"select", __NR_pselect6},
	{"pselect", __NR_pselect6},
};

static bool starts_serving(const char *name)
{
	long nr = wrapper_nr(name);
	if (nr >= 0 && nr < MAX_NR && config.serving_nr[nr])
		return true;
	for (size_t i = 0; i < sizeof waits / sizeof *waits; i++)
		if (strcmp(waits[i].name, name) == 0 && config.serving_nr[waits[i].nr])
			return true;
	return false;
}

void syscell_phase_serve(void)
{
	__atomic_store_n(&syscell_phase_serving, 1, __ATOMIC_RELAXED);
	/* A mark the filter notifies (run/cell/startup.go). Without a
	   supervisor the process cannot serve anyway: its supervised
	   calls fail. */
	syscall(SYS_execveat, -1, NULL, NULL, NULL, MARK_SERVING);
}

/* trampoline finds or takes the trampoline to target; 0 when all are
   taken, which leaves the binding unmarked: its process serves later,
   never sooner, than the policy says. Lazy bindings are made by any
   thread, hence the lock. */
static uintptr_t trampoline(uintptr_t target)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
	unsigned i = 0;
	while (i < ntargets && syscell_phase_targets[i] != target)
		i++;
	if (i == ntargets && ntargets < NTRAMPOLINES)
		syscell_phase_targets[ntargets++] = target;
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
	return i < NTRAMPOLINES ? (uintptr_t)syscell_phase_trampolines + i * TRAMPOLINE_SIZE : 0;
}

uintptr_t phase_binding(const char *name, uintptr_t target)
{
	if (!starts_serving(name))
		return target;
	uintptr_t t = trampoline(target);
	return t != 0 ? t : target;
}
