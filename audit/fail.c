/* Failing closed: the program never runs without its filter. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "audit.h"

/* Exit status of a program that could not be put under its filter; the
   launcher also learns of the failure from the closed socket. */
#define EXIT_UNFILTERED 126

void die(const char *fmt, ...)
{
	va_list ap;
	fputs("syscell-audit: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(EXIT_UNFILTERED);
}
