#include <sys/stat.h>

long chain_b(void) { return umask(022); }
