/*
 * The stub block's layout, shared by stubs.S and the C code that copies
 * the block into each slot of the window: three pointers at its start,
 * written into every copy before the window is sealed.
 */
#ifndef SYSCELL_STUBS_H
#define SYSCELL_STUBS_H

/* long syscell_stub_failed(long negative_errno): sets the program's errno. */
#define STUB_FAILED 0
/* The program's __libc_single_threaded. */
#define STUB_SINGLE 8
/* The program's pthread_setcanceltype. */
#define STUB_CANCELTYPE 16

/* The table of sites, one syscall instruction per system call number
   below SITES_COUNT, each SITE_STRIDE bytes long (package compartment
   has the same figures). */
#define SITES_COUNT 1024
#define SITE_STRIDE 4

#endif
