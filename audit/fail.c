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
	static const char prefix[] = "syscell-audit: ";
	va_list ap;
	write(STDERR_FILENO, prefix, sizeof prefix - 1);
	va_start(ap, fmt);
	vdprintf(STDERR_FILENO, fmt, ap);
	va_end(ap);
	write(STDERR_FILENO, "\n", 1);
	_exit(EXIT_UNFILTERED);
}
