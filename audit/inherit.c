/*
 * What images the program executes inherit. The filter outlives execve
 * with the layout it was compiled for, so a new image must put its stub
 * window where the first one was, with the same slots, and must put no
 * code where that layout places a compartment's own code, whose calls
 * the filter decides without asking the supervisor.
 *
 * The launcher reserves INHERIT_ENV in the program's environment; the
 * first image writes into it, in place (the strings lie on its initial
 * stack, and the program's environ is the same array), its configuration
 * and its compartments' code ranges. An image executed later, if its
 * environment still holds the variable, reads them, reserves the ranges
 * that are free so that nothing is mapped there, and refuses objects that
 * lie where another compartment's code was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "audit.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#define PAGE 4096UL
#define OVERFLOW "overflow"

static char text[1 << 16];
static size_t len;
static bool overflow;

void inherit_add(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text + len, sizeof text - len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 1 >= sizeof text - len) {
		overflow = true;
		return;
	}
	len += n;
	text[len++] = ';';
}

const char *inherit_text(void)
{
	if (len == 0 || strcmp(text + len - sizeof "end", "end;") != 0)
		inherit_add("end");
	if (overflow)
		return OVERFLOW;
	text[len] = '\0';
	return text;
}

void inherit_publish(void)
{
	char *value = getenv(INHERIT_ENV);
	if (value == NULL)
		die("%s is not set: run the program with syscell run", INHERIT_ENV);
	size_t room = strlen(value);
	inherit_text();
	/* An image executed later finds "overflow" and refuses to run. */
	if (overflow || len > room) {
		if (room >= sizeof OVERFLOW - 1)
			memcpy(value, OVERFLOW, sizeof OVERFLOW - 1);
		return;
	}
	memcpy(value, text, len);
}

/* reserve maps nothing-to-see-here memory over the free pages of r, and
   seals it: code that may call mprotect or mmap could otherwise put its
   own code where the filter gives a compartment's rights. */
static void reserve(struct range r)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE;
	if (mmap((void *)r.start, r.end - r.start, PROT_NONE, flags, -1, 0) != MAP_FAILED) {
		window_seal(r);
		return;
	}
	if (errno != EEXIST)
		die("reserve %#lx-%#lx: %s", (unsigned long)r.start, (unsigned long)r.end, strerror(errno));
	/* Partly taken: by the executable or the loader, which
	   inherit_check looks at, or by memory that holds no code. */
	for (uintptr_t p = r.start; p < r.end; p += PAGE)
		if (mmap((void *)p, PAGE, PROT_NONE, flags, -1, 0) != MAP_FAILED)
			window_seal((struct range){p, p + PAGE});
}

void inherit_apply(void)
{
	const char *value = getenv(INHERIT_ENV);
	if (value == NULL)
		die("none of %s, %s and %s is set: run the program with syscell run", CHANNEL_ENV, SOCKET_ENV, INHERIT_ENV);
	if (strncmp(value, OVERFLOW, sizeof OVERFLOW - 1) == 0)
		die("the layout the filter was compiled for did not fit %s: this image cannot run under it", INHERIT_ENV);
	config_inherit(value);
	for (unsigned i = 0; i < config.ninherited; i++)
		reserve(config.inherited[i].range);
}

void inherit_check(const struct object *o)
{
	for (unsigned t = 0; t < o->ntext; t++) {
		for (unsigned i = 0; i < config.ninherited; i++) {
			const struct inherited *in = &config.inherited[i];
			if (o->text[t].start < in->range.end && in->range.start < o->text[t].end && (int)in->slot != o->slot)
				die("%s's code at %#lx-%#lx lies where the filter, compiled before an exec, has compartment %u's code",
				    o->path, (unsigned long)o->text[t].start, (unsigned long)o->text[t].end, in->slot);
		}
	}
}

void inherit_loaded(void)
{
	/* The mark the supervisor takes for the end of this image's start-up
	   (run/cell/startup.go): an execveat the kernel would refuse. */
	syscall(SYS_execveat, -1, NULL, NULL, NULL, MARK_LOADED);
}

int inherit_bound(void)
{
	size_t size;
	char *exe = object_executable_buffer(&size);
	/* The supervisor writes the executable's path into exe
	   (run/cell/startup.go). */
	long v = syscall(SYS_execveat, -1, exe, size, NULL, MARK_BOUND);
	if (v < 0)
		die("ask the supervisor what bounds this image: %s", strerror(errno));
	if (v > (long)config.nslots)
		die("the supervisor bounds this image by slot %ld of %u", v - 1, config.nslots);
	return (int)v - 1;
}
