/*
 * libmk: a library whose job needs no system call of its own. When the
 * program is "attacked", it tries to create a directory, which its
 * compartment does not allow.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* demo_parse does the library's ordinary work: pure computation. */
int demo_parse(const char *s) { return (int)strlen(s); }

/* demo_attack is what a compromised library would do. */
int demo_attack(const char *dir) { return mkdir(dir, 0755) == 0 ? 0 : errno; }
