/* The library image_test reads: one of each thing the analysis needs
   from an ELF object. Built by the test with gcc -O2
   -fomit-frame-pointer, with and without -z now and RELR relocations. */
#include <stdio.h>
#include <unistd.h>

int exported_data = 5;
static int counter;

static long local_fn(long x) { return x + counter; }

/* A function pointer in writable data and one in data that is read-only
   once relocated (RELRO). */
long (*table[])(long) = {local_fn};
long (*const fixed[])(long) = {local_fn};

/* The address of an imported function, in data. */
pid_t (*pid_fn)(void) = getpid;

__attribute__((constructor)) static void init(void) { counter++; }

long api(long x) { return table[0](x) + fixed[0](x) + getppid(); }

const char *message(void) { return "cannot open_file"; }
