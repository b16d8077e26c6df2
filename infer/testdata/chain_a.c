/* libchain_a.so calls libchain_b.so, which calls libc: umask is
   libchain_b's, not libchain_a's. */
long chain_b(void);
long chain_a(void) { return chain_b() + 1; }
