/*
 * Trampolines of phases (phase.c): trampoline i puts i in %r11, which no
 * function takes an argument in, and jumps to the common part. It marks
 * the process serving the first time (the supervisor then decides the
 * compartments' calls they may make only while starting as denied),
 * keeping the caller's argument registers, and jumps to target i: the
 * libc wrapper, or the compartment's stub, the binding would have had.
 */
#define NTRAMPOLINES 512

	.text
	.p2align 4
	.globl syscell_phase_trampolines
	.hidden syscell_phase_trampolines
syscell_phase_trampolines:
	.set i, 0
	.rept NTRAMPOLINES
	movl $i, %r11d
	jmp .Lcommon
	.p2align 4
	.set i, i + 1
	.endr

.Lcommon:
	cmpl $0, syscell_phase_serving(%rip)
	jne 1f
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %r8
	push %r9
	push %rax
	push %r11
	sub $8, %rsp	/* the call needs a 16-byte aligned stack */
	call syscell_phase_serve
	add $8, %rsp
	pop %r11
	pop %rax
	pop %r9
	pop %r8
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
1:	lea syscell_phase_targets(%rip), %r10
	jmp *(%r10,%r11,8)

	.section .note.GNU-stack,"",@progbits
