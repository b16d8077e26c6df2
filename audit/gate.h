/*
 * The layout gate.S and gate.c share: the gates and redirects, their
 * tables, and each thread's entries.
 */
#ifndef SYSCELL_GATE_H
#define SYSCELL_GATE_H

/* Gates, one per binding of a compartment to a libc function; a binding
   made when all are taken goes to the function itself. */
#define NGATES 16384
/* struct gate: the function, and the base of the compartment's slot. */
#define GATE_TARGET 0
#define GATE_SLOT 8

/* Redirects, one per wrapper of wrappers.def at most. */
#define NREDIRECTS 256
/* struct redirect: the stub's offset in a slot, and the runtime's own
   copy of the stub (runtime_stubs.S). */
#define REDIRECT_OFFSET 0
#define REDIRECT_FALLBACK 8

/* struct entries: TOP is the byte offset past the innermost entry;
   entry k, at E + k * ENTRY, holds where the caller's return address
   lay when it called through a gate (the gate's frame is just below),
   the address, and the gate's table entry. OVERFLOW counts calls through
   gates made while all DEPTH entries were taken, which leave their
   calls' owner unknown. */
#define TOP 0
#define SCRATCH 8
#define OVERFLOW 16
#define E 24
#define E_SP (E + 0)
#define E_RET (E + 8)
#define E_GATE (E + 16)
#define ENTRY 24
#define DEPTH 64
/* How far above the stack pointer a live entry's return address may lie
   when libc makes a call: deeper calls (a callback's long recursion)
   and another stack's entries (a signal's alternate stack) are left to
   the supervisor. */
#define REACH (128 * 1024)
/* Words of the caller's stack a gate passes on: a call's arguments past
   the registers (a printf of many values). */
#define STACK_ARGS 8
/* A gate's frame: those words and the word that says whether its call
   has an entry; with the return address, a multiple of 16. */
#define FRAME (8 * (STACK_ARGS + 1))
#define PUSHED (8 * STACK_ARGS)

#endif
