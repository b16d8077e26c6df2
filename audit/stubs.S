/*
 * The stub block: one function per wrapper of wrappers.def, each making
 * its system call inside the block, so that the kernel sees an
 * instruction pointer there. The block is copied into every slot of the
 * stub window and must therefore be position-independent and
 * self-contained: it refers to nothing outside itself except through the
 * pointers at its start (stubs.h), which each copy gets filled in.
 *
 * Each system call has one syscall instruction in the block, in the table
 * of sites at its end: site nr, at SITES + nr * SITE_STRIDE, is
 * "syscall; ret", and every stub that makes call nr calls site nr (or
 * jumps to it, where nothing follows the call). The filter allows call
 * nr from a slot only at site nr (package compartment), so a stub
 * borrowed by a jump past its "mov $nr, %eax" can make no other call than
 * its own, as OpenBSD's pinsyscalls pins each call site to its number.
 *
 * The file is assembled twice: here, as the window's block, and by
 * runtime_stubs.S, with RUNTIME defined, as the runtime's own copy of the
 * stubs, which the redirects of libc's wrappers fall back to (gate.S):
 * the same calls, made in this library's code, which the supervisor
 * attributes by unwinding. That copy's pointers lie in the library's
 * data, and its stubs have CFI (the window's copies have none: no
 * unwinder reads this library's CFI for them).
 */
#include <asm/unistd_64.h>
#include "stubs.h"

#ifdef RUNTIME
#define PREFIX syscell_runtime_
#else
#define PREFIX syscell_
#endif

#define AT_FDCWD_32 0xffffff9c
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_EMPTY_PATH 0x1000
#define O_CREAT 0x40
#define O_TMPFILE 0x410000
#define EINVAL 22
#define EBADF 9
#define PTHREAD_CANCEL_ASYNCHRONOUS 1

#ifdef RUNTIME
	.data
	.p2align 3
	.globl syscell_runtime_stub_pointers
	.hidden syscell_runtime_stub_pointers
syscell_runtime_stub_pointers:
#else
	.section .text.syscell_stubs,"ax",@progbits
	.p2align 6
	.globl syscell_stub_block
	.hidden syscell_stub_block
syscell_stub_block:
#endif
.Lfailed:
	.quad 0
.Lsingle:
	.quad 0
.Lcanceltype:
	.quad 0
.Lempty:
	.byte 0
#ifdef RUNTIME
	.text
#endif

/* The call, once the arguments are in the kernel's registers. A
   cancellation point in a multi-threaded process switches to asynchronous
   cancellation for the duration of the call, as glibc's SYSCALL_CANCEL
   does, through the program's pthread_setcanceltype: a pending request
   is acted upon before the call, one arriving while it blocks ends it. */
.macro invoke nr, cancel
	.if \cancel
	mov .Lsingle(%rip), %rax
	cmpb $0, (%rax)
	je 2f
	.endif
	mov $\nr, %eax
	call .Lsites + \nr * SITE_STRIDE
	cmp $-4095, %rax
	jae .Lfail
	ret
	.if \cancel
2:	push %r9
	push %r8
	push %r10
	push %rdx
	push %rsi
	push %rdi
	sub $8, %rsp
	.cfi_adjust_cfa_offset 56
	mov $PTHREAD_CANCEL_ASYNCHRONOUS, %edi
	mov %rsp, %rsi
	call *.Lcanceltype(%rip)
	mov 8(%rsp), %rdi
	mov 16(%rsp), %rsi
	mov 24(%rsp), %rdx
	mov 32(%rsp), %r10
	mov 40(%rsp), %r8
	mov 48(%rsp), %r9
	mov $\nr, %eax
	call .Lsites + \nr * SITE_STRIDE
	mov %rax, 8(%rsp)
	mov (%rsp), %edi
	xor %esi, %esi
	call *.Lcanceltype(%rip)
	mov 8(%rsp), %rax
	add $56, %rsp
	.cfi_adjust_cfa_offset -56
	cmp $-4095, %rax
	jae .Lfail
	ret
	.endif
.endm

.macro begin sym
	.p2align 4
	.globl PREFIX\()stub_\sym
	.hidden PREFIX\()stub_\sym
	.type PREFIX\()stub_\sym, @function
PREFIX\()stub_\sym:
	.cfi_startproc
.endm

/* f(): a call glibc's wrapper never sees fail (getpid and its kind),
   whose raw result it returns as it is, errno untouched. */
.macro stub_raw sym, nr, cancel
	begin \sym
	mov $\nr, %eax
	jmp .Lsites + \nr * SITE_STRIDE
.endm

/* f(a, b, c, d, e, f): the arguments are the call's. */
.macro stub_plain sym, nr, cancel
	begin \sym
	mov %rcx, %r10
	invoke \nr, \cancel
.endm

/* open(path, flags, mode) → openat(AT_FDCWD, path, flags, mode), the mode
   only when the flags create a file, as glibc's __OPEN_NEEDS_MODE. */
.macro stub_open sym, nr, cancel
	begin \sym
	test $O_CREAT, %esi
	jnz 1f
	mov %esi, %eax
	and $O_TMPFILE, %eax
	cmp $O_TMPFILE, %eax
	je 1f
	xor %edx, %edx
1:	mov %edx, %r10d
	mov %esi, %edx
	mov %rdi, %rsi
	mov $AT_FDCWD_32, %edi
	invoke \nr, \cancel
.endm

/* openat(fd, path, flags, mode), the mode only when needed. */
.macro stub_openat sym, nr, cancel
	begin \sym
	test $O_CREAT, %edx
	jnz 1f
	mov %edx, %eax
	and $O_TMPFILE, %eax
	cmp $O_TMPFILE, %eax
	je 1f
	xor %ecx, %ecx
1:	mov %ecx, %r10d
	invoke \nr, \cancel
.endm

/* stat(path, buf) → newfstatat(AT_FDCWD, path, buf, 0). */
.macro stub_stat sym, nr, cancel
	begin \sym
	mov %rsi, %rdx
	xor %r10d, %r10d
	mov %rdi, %rsi
	mov $AT_FDCWD_32, %edi
	invoke \nr, \cancel
.endm

/* lstat(path, buf) → newfstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW). */
.macro stub_lstat sym, nr, cancel
	begin \sym
	mov %rsi, %rdx
	mov $AT_SYMLINK_NOFOLLOW, %r10d
	mov %rdi, %rsi
	mov $AT_FDCWD_32, %edi
	invoke \nr, \cancel
.endm

/* fstat(fd, buf) → newfstatat(fd, "", buf, AT_EMPTY_PATH); a negative fd
   fails with EBADF without a call, as in glibc. */
.macro stub_fstat sym, nr, cancel
	begin \sym
	test %edi, %edi
	js 1f
	mov %rsi, %rdx
	lea .Lempty(%rip), %rsi
	mov $AT_EMPTY_PATH, %r10d
	invoke \nr, \cancel
1:	mov $-EBADF, %rax
	jmp .Lfail
.endm

/* fstatat(fd, path, buf, flags): the flags as an int. */
.macro stub_fstatat sym, nr, cancel
	begin \sym
	mov %ecx, %r10d
	invoke \nr, \cancel
.endm

/* send(fd, buf, len, flags) → sendto(fd, buf, len, flags, NULL, 0). */
.macro stub_send sym, nr, cancel
	begin \sym
	mov %ecx, %r10d
	xor %r8d, %r8d
	xor %r9d, %r9d
	invoke \nr, \cancel
.endm

/* recv(fd, buf, len, flags) → recvfrom(fd, buf, len, flags, NULL, NULL). */
.macro stub_recv sym, nr, cancel
	begin \sym
	mov %ecx, %r10d
	xor %r8d, %r8d
	xor %r9d, %r9d
	invoke \nr, \cancel
.endm

/* pipe(fds) → pipe2(fds, 0). */
.macro stub_pipe sym, nr, cancel
	begin \sym
	xor %esi, %esi
	invoke \nr, \cancel
.endm

/* getrlimit(resource, old) → prlimit64(0, resource, NULL, old). */
.macro stub_getrlimit sym, nr, cancel
	begin \sym
	mov %rsi, %r10
	xor %edx, %edx
	mov %edi, %esi
	xor %edi, %edi
	invoke \nr, \cancel
.endm

/* setrlimit(resource, new) → prlimit64(0, resource, new, NULL). */
.macro stub_setrlimit sym, nr, cancel
	begin \sym
	mov %rsi, %rdx
	xor %r10d, %r10d
	mov %edi, %esi
	xor %edi, %edi
	invoke \nr, \cancel
.endm

/* nanosleep(req, rem) → clock_nanosleep(CLOCK_REALTIME, 0, req, rem);
   both fail with -errno from the kernel, so errno is set alike. */
.macro stub_nanosleep sym, nr, cancel
	begin \sym
	mov %rsi, %r10
	mov %rdi, %rdx
	xor %esi, %esi
	xor %edi, %edi
	invoke \nr, \cancel
.endm

/* waitpid(pid, status, options) → wait4(pid, status, options, NULL). */
.macro stub_waitpid sym, nr, cancel
	begin \sym
	xor %r10d, %r10d
	invoke \nr, \cancel
.endm

/* mmap: an offset that is not a multiple of the page fails with EINVAL
   without a call, as in glibc. */
.macro stub_mmap sym, nr, cancel
	begin \sym
	test $0xfff, %r9d
	jnz 1f
	mov %ecx, %r10d
	invoke \nr, \cancel
1:	mov $-EINVAL, %rax
	jmp .Lfail
.endm

/* sigaction(sig, act, oact) → rt_sigaction(sig, kact, koact, 8), as
   glibc's __sigaction and __libc_sigaction: libc's internal signals
   (SIGCANCEL, SIGSETXID) and numbers outside 1..64 fail with EINVAL
   without a call; act's handler, flags (sign-extended, with SA_RESTORER)
   and the mask's first 8 bytes go into the kernel's structure, with the
   block's own restorer, whose bytes are glibc's __restore_rt (unwinders
   such as libgcc's and gdb's know a signal frame by them); oact gets the
   kernel's answer back, the rest of its mask zeroed. */
#define SA_RESTORER 0x04000000
#define SA_FLAGS 136
#define SA_RESTORER_FIELD 144
.macro stub_sigaction sym, nr, cancel
	begin \sym
	lea -1(%rdi), %eax
	cmp $63, %eax
	ja 4f
	cmp $32, %edi
	je 4f
	cmp $33, %edi
	je 4f
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	mov %rdx, %rbx
	sub $64, %rsp
	.cfi_adjust_cfa_offset 64
	xor %edx, %edx
	test %rbx, %rbx
	jz 1f
	lea 32(%rsp), %rdx
1:	test %rsi, %rsi
	jz 2f
	mov (%rsi), %rax
	mov %rax, (%rsp)
	movslq SA_FLAGS(%rsi), %rax
	or $SA_RESTORER, %rax
	mov %rax, 8(%rsp)
	lea .Lrestore_rt(%rip), %rax
	mov %rax, 16(%rsp)
	mov 8(%rsi), %rax
	mov %rax, 24(%rsp)
	mov %rsp, %rsi
2:	mov $8, %r10d
	mov $\nr, %eax
	call .Lsites + \nr * SITE_STRIDE
	cmp $-4095, %rax
	jae 3f
	test %rbx, %rbx
	jz 3f
	mov 32(%rsp), %rcx
	mov %rcx, (%rbx)
	mov 56(%rsp), %rcx
	mov %rcx, 8(%rbx)
	lea 16(%rbx), %rdi
	mov %rax, %r11
	xor %eax, %eax
	mov $15, %ecx
	rep stosq
	mov %r11, %rax
	mov 40(%rsp), %rcx
	mov %ecx, SA_FLAGS(%rbx)
	mov 48(%rsp), %rcx
	mov %rcx, SA_RESTORER_FIELD(%rbx)
3:	add $64, %rsp
	.cfi_adjust_cfa_offset -64
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	cmp $-4095, %rax
	jae .Lfail
	ret
4:	mov $-EINVAL, %rax
	jmp .Lfail
.endm

/* sigprocmask(how, set, oset) → rt_sigprocmask(how, set', oset, 8), as
   glibc's __pthread_sigmask: libc's internal signals (SIGCANCEL, 32, and
   SIGSETXID, 33) are never blocked, so set' is a copy of set's kernel
   part without them. */
.macro stub_sigprocmask sym, nr, cancel
	begin \sym
	sub $24, %rsp
	.cfi_adjust_cfa_offset 24
	test %rsi, %rsi
	jz 1f
	mov (%rsi), %rax
	btr $31, %rax
	btr $32, %rax
	mov %rax, (%rsp)
	mov %rsp, %rsi
1:	mov $8, %r10d
	mov $\nr, %eax
	call .Lsites + \nr * SITE_STRIDE
	add $24, %rsp
	.cfi_adjust_cfa_offset -24
	cmp $-4095, %rax
	jae .Lfail
	ret
.endm

/* vfork(): the child runs on its parent's stack until it executes or
   exits, so nothing the parent needs after the call may lie on the stack
   below its caller's frame, where the child's calls write: the caller's
   return address is kept in %rsi and the way back to the stub in %rdi,
   each task's registers its own, and vfork's site pushes %rdi once the
   call returns, in the parent and in the child (glibc's vfork keeps its
   return address in %rdi alike). */
.macro stub_vfork sym, nr, cancel
	begin \sym
	pop %rsi
	lea 1f(%rip), %rdi
	mov $\nr, %eax
	jmp .Lsites + \nr * SITE_STRIDE
1:	push %rsi
	cmp $-4095, %rax
	jae .Lfail
	ret
.endm

/* syscall(nr, a, b, c, d, e, f): any call, the sixth argument from the
   stack, exactly as glibc's syscall(), made at its number's site. A
   number without a site (from SITES_COUNT up: another ABI's, or none)
   is made at an instruction of its own, where the filter allows no call
   whose verdict depends on the caller. */
.macro stub_syscall sym, nr, cancel
	begin \sym
	mov %rdi, %rax
	mov %rsi, %rdi
	mov %rdx, %rsi
	mov %rcx, %rdx
	mov %r8, %r10
	mov %r9, %r8
	mov 8(%rsp), %r9
	cmp $SITES_COUNT, %rax
	jae 1f
	lea .Lsites(%rip), %r11
	lea (%r11, %rax, SITE_STRIDE), %r11
	call *%r11
	jmp 2f
1:	syscall
2:	cmp $-4095, %rax
	jae .Lfail
	ret
.endm

#define W(sym, kind, nr, cancel) stub_##kind sym, nr, cancel; .cfi_endproc;
#define A(alias, sym)
#include "wrappers.def"

/* The restorer stub_sigaction gives the kernel: a handler returns here,
   and the kernel's rt_sigreturn, which every compartment may make, puts
   back what the signal interrupted. */
	.p2align 4
.Lrestore_rt:
	movq $__NR_rt_sigreturn, %rax
	syscall

/* A failed call: rax holds -errno. The program's errno is set by C code
   reached through a pointer, which returns -1 to the stub's caller. */
	.p2align 4
.Lfail:
	.cfi_startproc
	mov %rax, %rdi
	jmp *.Lfailed(%rip)
	.cfi_endproc

/* The sites: "syscall; ret; int3" for every number below SITES_COUNT,
   but vfork's, "syscall; push %rdi; ret" (stub_vfork says why). */
	.p2align 4
#ifndef RUNTIME
	.globl syscell_stub_sites
	.hidden syscell_stub_sites
syscell_stub_sites:
#endif
.Lsites:
	.cfi_startproc
	.set site, 0
	.rept SITES_COUNT
	syscall
	.if site == __NR_vfork
	push %rdi
	ret
	.else
	ret
	int3
	.endif
	.set site, site + 1
	.endr
	.cfi_endproc

#ifndef RUNTIME
	.globl syscell_stub_block_end
	.hidden syscell_stub_block_end
syscell_stub_block_end:
#endif

	.section .note.GNU-stack,"",@progbits
