/*
 * The runtime's clone(fn, stack, flags, arg): the clone system call with
 * no parent or child TID and no TLS, as install.c's helper is started;
 * the child calls fn(arg) on the new stack and exits (the thread alone)
 * with its result, as glibc's clone does. Fails with -1 and errno.
 */
#include <asm/unistd_64.h>

	.text
	.p2align 4
	.globl clone
	.hidden clone
	.type clone, @function
clone:
	.cfi_startproc
	/* fn and arg go on the child's stack, kept 16-byte aligned. */
	and $-16, %rsi
	sub $16, %rsi
	mov %rcx, 8(%rsi)
	mov %rdi, (%rsi)
	mov %edx, %edi
	xor %edx, %edx
	xor %r10d, %r10d
	xor %r8d, %r8d
	mov $__NR_clone, %eax
	syscall
	test %rax, %rax
	jl 1f
	jz 2f
	ret
1:	mov %rax, %rdi
	jmp rt_result
	.cfi_endproc

	/* The child: no frame above it. */
2:	.cfi_startproc
	.cfi_undefined rip
	xor %ebp, %ebp
	pop %rax
	pop %rdi
	call *%rax
	mov %eax, %edi
	mov $__NR_exit, %eax
	syscall
	hlt
	.cfi_endproc
	.size clone, . - clone

	.section .note.GNU-stack,"",@progbits
