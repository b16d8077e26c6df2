/* libgetpid: the library whose job needs getpid(2), and nothing more. */
#include <unistd.h>

long demo_whoami(void) { return (long)getpid(); }
