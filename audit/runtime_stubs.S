/* The runtime's own copy of the stubs (stubs.S says why). */
#define RUNTIME
#include "stubs.S"
