/* liba.so: needs libb.so. */
long b(void);
long a(void) { return b() + 1; }
