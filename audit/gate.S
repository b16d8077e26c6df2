/*
 * Calls libc makes on a compartment's behalf (gate.c says why and how).
 *
 * Gate i: a compartment's binding of a libc function that may make
 * system calls. It notes, in this thread's entries (gate.h's layout),
 * where the caller's return address lies and the gate, calls the
 * function in a frame of its own with every register a call may pass
 * (%rax too: the vector count of a variadic call) and the first
 * STACK_ARGS words of the caller's stack arguments, and drops the entry,
 * and any a longjmp left behind, once the function returns; the next
 * gate drops those too. Its frame
 * has unwind information: C++ exceptions, thread cancellation and the
 * supervisor's unwinder step through it.
 *
 * Redirect i: libc's wrapper i, whose entry jumps here. Called from
 * libc's own code, or by the jump a gated function ends in, with an
 * entry of a call still running, it makes its
 * call at the stub of the compartment that entry names, where the filter
 * decides it; otherwise at the runtime's own copy of that stub
 * (runtime_stubs.S), in this library's code, whose calls the supervisor
 * attributes by unwinding as it did libc's.
 *
 * Only %r10 and %r11 are free at a function's entry and after its
 * return, and %rax at a wrapper's; the entries have a scratch word for
 * the rest.
 */
#include "gate.h"

#define PROT_EXEC 0x4
#define MAP_ANONYMOUS 0x20

	.text
	.p2align 4
	.globl syscell_gates
	.hidden syscell_gates
	.type syscell_gates, @function
syscell_gates:
	.cfi_startproc
	.set i, 0
	.rept NGATES
	movl $i, %r11d
	jmp .Lgate
	.p2align 4
	.set i, i + 1
	.endr

/* entries puts this thread's entries in %r10. */
.macro entries
	mov %fs:0, %r10
	add syscell_entries_offset(%rip), %r10
.endm

/* drop lowers \top, the byte offset past the innermost of the entries
   at %r10, past those whose return addresses lie at or below the stack
   pointer: their calls have returned, or a longjmp left them. */
.macro drop top
.Ldrop\@:
	test \top, \top
	jz .Ldropped\@
	cmp %rsp, E_SP-ENTRY(%r10,\top)
	ja .Ldropped\@
	sub $ENTRY, \top
	jmp .Ldrop\@
.Ldropped\@:
.endm

.Lgate:
	shl $4, %r11
	lea syscell_gate_table(%rip), %r10
	add %r10, %r11
	entries
	mov %rax, SCRATCH(%r10)
	mov TOP(%r10), %rax
	/* Entries at or below the stack pointer here are of calls a longjmp
	   (out of a signal handler, a stream's function) left. */
	drop %rax
	cmp $DEPTH * ENTRY, %rax
	jae 1f
	mov %rsp, E_SP(%r10,%rax)
	mov %r11, E_GATE(%r10,%rax)
	mov (%rsp), %r11
	mov %r11, E_RET(%r10,%rax)
	mov E_GATE(%r10,%rax), %r11
	add $ENTRY, %rax
	mov %rax, TOP(%r10)
	mov $1, %eax
	jmp 2f
1:	incq OVERFLOW(%r10)
	xor %eax, %eax
2:	sub $FRAME, %rsp
	.cfi_adjust_cfa_offset FRAME
	mov %rax, PUSHED(%rsp)
	mov SCRATCH(%r10), %rax
	.set k, 0
	.rept STACK_ARGS
	mov FRAME + 8 + 8 * k(%rsp), %r10
	mov %r10, 8 * k(%rsp)
	.set k, k + 1
	.endr
	call *GATE_TARGET(%r11)
.Lgated:
	entries
	cmpq $0, PUSHED(%rsp)
	jne 3f
	decq OVERFLOW(%r10)
	jmp 5f
	/* This call's entry goes, with those above it that a longjmp out of
	   the function left. */
3:	mov TOP(%r10), %r11
	add $FRAME, %rsp
	.cfi_adjust_cfa_offset -FRAME
	drop %r11
	mov %r11, TOP(%r10)
	ret
	.cfi_adjust_cfa_offset FRAME
5:	add $FRAME, %rsp
	.cfi_adjust_cfa_offset -FRAME
	ret
	.cfi_endproc
	.size syscell_gates, . - syscell_gates

	.p2align 4
	.globl syscell_redirects
	.hidden syscell_redirects
syscell_redirects:
	.set i, 0
	.rept NREDIRECTS
	movl $i, %r11d
	jmp .Lredirect
	.p2align 4
	.set i, i + 1
	.endr

.Lredirect:
	/* mmap: anonymous memory that cannot execute is the runtime's
	   (malloc's heaps), whoever called libc. */
	cmp syscell_redirect_mmap(%rip), %r11
	jne 6f
	test $PROT_EXEC, %edx
	jnz 6f
	test $MAP_ANONYMOUS, %ecx
	jnz .Lfallback
6:	mov (%rsp), %rax
	sub syscell_libc_text(%rip), %rax
	cmp syscell_libc_text+8(%rip), %rax
	jb 4f
	/* Or from the gate itself: the function it called ended in a jump
	   to the wrapper (wait3's to __wait4), a tail call. */
	lea .Lgated(%rip), %rax
	cmp (%rsp), %rax
	jne .Lfallback
4:	entries
	cmpq $0, OVERFLOW(%r10)
	jne .Lfallback
	mov %r11, SCRATCH(%r10)
	mov TOP(%r10), %rax
	/* The innermost entry whose call runs: its return address lies above
	   the stack pointer, within reach, and is still there (after a
	   longjmp out of the call, another call may have taken its slot). */
1:	test %rax, %rax
	jz 2f
	mov E_SP-ENTRY(%r10,%rax), %r11
	sub %rsp, %r11
	jbe 3f
	cmp $REACH, %r11
	ja 2f
	mov E_SP-ENTRY(%r10,%rax), %r11
	mov (%r11), %r11
	cmp E_RET-ENTRY(%r10,%rax), %r11
	jne 3f
	mov E_GATE-ENTRY(%r10,%rax), %r11
	mov GATE_SLOT(%r11), %rax
	test %rax, %rax
	jz 2f
	mov SCRATCH(%r10), %r11
	shl $4, %r11
	lea syscell_redirect_table(%rip), %r10
	add REDIRECT_OFFSET(%r10,%r11), %rax
	jmp *%rax
3:	sub $ENTRY, %rax
	jmp 1b
2:	mov SCRATCH(%r10), %r11
.Lfallback:
	shl $4, %r11
	lea syscell_redirect_table(%rip), %r10
	jmp *REDIRECT_FALLBACK(%r10,%r11)

	.section .note.GNU-stack,"",@progbits
