/*
 * The shim's entry point: the kernel starts it here, with argc at the
 * stack pointer and no C library to call main. start (shim.c) takes the
 * stack pointer, on a stack aligned as the ABI wants a call's.
 */
	.text
	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xor %ebp, %ebp
	mov %rsp, %rdi
	and $-16, %rsp
	call start
	hlt
	.cfi_endproc
	.size _start, . - _start

	.section .note.GNU-stack,"",@progbits
