/*
 * Calls libc makes on a compartment's behalf (gate.c says why and how).
 *
 * Gate i: a compartment's binding of a libc function that may make
 * system calls. It notes, in this thread's entries (gate.h's layout),
 * where the caller's return address lies, the address itself and the
 * gate, then jumps to the function, keeping every register a call may
 * pass (%rax too: the vector count of a variadic call). Entries whose
 * calls have returned (their return address slot is at or below the
 * stack pointer, or holds another address now) are dropped first.
 *
 * Redirect i: libc's wrapper i, whose entry jumps here. Called from
 * libc's own code with an entry of a call still running, it makes its
 * call at the stub of the compartment that entry names, where the filter
 * decides it; otherwise through the auditor's own libc, whose calls the
 * supervisor attributes by unwinding as it did libc's.
 *
 * Only %r10 and %r11 are free at a function's entry, and %rax at a
 * wrapper's; the entries have a scratch word for the rest.
 */
#include "gate.h"

	.text
	.p2align 4
	.globl syscell_gates
	.hidden syscell_gates
syscell_gates:
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

/* live tests the innermost entry, at TOP(%r10) = %rax bytes: it jumps
   to \stale where its call has returned, to \far where its return
   address lies further above the stack pointer than calls inside libc
   reach (another stack's, which may be gone: it is not read), and falls
   through where it is live. Clobbers %r11. */
.macro live stale, far
	mov E_SP-ENTRY(%r10,%rax), %r11
	cmp %rsp, %r11
	jbe \stale
	sub %rsp, %r11
	cmp $REACH, %r11
	ja \far
	mov E_SP-ENTRY(%r10,%rax), %r11
	mov (%r11), %r11
	cmp E_RET-ENTRY(%r10,%rax), %r11
	jne \stale
.endm

.Lgate:
	shl $4, %r11
	lea syscell_gate_table(%rip), %r10
	add %r10, %r11
	entries
	mov %rax, SCRATCH(%r10)
	mov %r11, SCRATCH2(%r10)
	mov TOP(%r10), %rax
1:	test %rax, %rax
	jz 3f
	live 2f, 3f
	jmp 3f
2:	sub $ENTRY, %rax
	jmp 1b
3:	cmp $DEPTH * ENTRY, %rax
	jb 4f
	/* Full: the innermost call gives up its owner, whose calls, and
	   this one's, go to the supervisor. */
	movq $0, E_GATE-ENTRY(%r10,%rax)
	jmp 5f
4:	mov %rsp, E_SP(%r10,%rax)
	mov (%rsp), %r11
	mov %r11, E_RET(%r10,%rax)
	mov SCRATCH2(%r10), %r11
	mov %r11, E_GATE(%r10,%rax)
	add $ENTRY, %rax
5:	mov %rax, TOP(%r10)
	mov SCRATCH2(%r10), %r11
	mov SCRATCH(%r10), %rax
	jmp *GATE_TARGET(%r11)

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
	mov (%rsp), %rax
	sub syscell_libc_text(%rip), %rax
	cmp syscell_libc_text+8(%rip), %rax
	jae .Lfallback
	entries
	mov %r11, SCRATCH(%r10)
	mov TOP(%r10), %rax
1:	test %rax, %rax
	jz 3f
	live 2f, 3f
	mov %rax, TOP(%r10)
	mov E_GATE-ENTRY(%r10,%rax), %r11
	test %r11, %r11
	jz 3f
	mov GATE_SLOT(%r11), %rax
	test %rax, %rax
	jz 3f
	mov SCRATCH(%r10), %r11
	shl $4, %r11
	lea syscell_redirect_table(%rip), %r10
	add REDIRECT_OFFSET(%r10,%r11), %rax
	jmp *%rax
2:	sub $ENTRY, %rax
	jmp 1b
3:	mov SCRATCH(%r10), %r11
.Lfallback:
	shl $4, %r11
	lea syscell_redirect_table(%rip), %r10
	mov REDIRECT_FALLBACK(%r10,%r11), %r11
	jmp syscell_redirect_fallback

/* The wrapper's call, made by the auditor's libc (in %r11), whose errno
   becomes the program's when it fails. A frame of its own, with the
   unwind information the supervisor reads to find libc's caller. */
	.p2align 4
	.type syscell_redirect_fallback, @function
syscell_redirect_fallback:
	.cfi_startproc
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	call *%r11
	/* An int's -1 or a long's: the high half of an int's is undefined. */
	cmp $-1, %eax
	jne 1f
	mov %rax, (%rsp)
	call syscell_redirect_failed
	mov (%rsp), %rax
1:	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size syscell_redirect_fallback, . - syscell_redirect_fallback

	.section .note.GNU-stack,"",@progbits
