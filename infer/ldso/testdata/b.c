/* libb.so: needs nothing but libc. */
long b(void) { return 2; }
