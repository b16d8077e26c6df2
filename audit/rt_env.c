/*
 * The runtime's environment and auxiliary vector, from the initial stack
 * the kernel laid out: argc, argv, NULL, the environment, NULL, the
 * auxiliary vector. The loader runs this library's constructors, as it
 * runs every object's, with argc, argv and the environment before it
 * calls the library (la_version).
 *
 * The environment array is the one the program's libc takes as environ:
 * unsetenv edits it in place, as glibc's does, so that the program and
 * the images it executes no longer see the variable.
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "audit.h"
#include "rt.h"

static char **environment;
static const Elf64_auxv_t *auxv;

/* start finds both before unsetenv has shortened the environment (which
   leaves the auxiliary vector where it was). */
__attribute__((constructor)) static void start(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)argv;
	environment = envp;
	char **p = envp;
	while (*p != NULL)
		p++;
	auxv = (const Elf64_auxv_t *)(p + 1);
}

/* started checks that the loader ran the constructor before it called
   the library, as glibc's does (it opens an audit library, constructors
   run, before it calls la_version): a loader that did not would leave the
   program without its filter. */
static void started(void)
{
	if (environment == NULL)
		die("the loader called the library before its constructor: no environment");
}

/* match returns the value of entry if it names name, else NULL. */
static char *match(char *entry, const char *name)
{
	size_t n = strlen(name);
	return strncmp(entry, name, n) == 0 && entry[n] == '=' ? entry + n + 1 : NULL;
}

char *getenv(const char *name)
{
	started();
	for (char **p = environment; *p != NULL; p++) {
		char *value = match(*p, name);
		if (value != NULL)
			return value;
	}
	return NULL;
}

int unsetenv(const char *name)
{
	if (*name == '\0' || strchr(name, '=') != NULL) {
		errno = EINVAL;
		return -1;
	}
	started();
	char **p = environment;
	while (*p != NULL) {
		if (match(*p, name) == NULL) {
			p++;
			continue;
		}
		for (char **q = p; *q != NULL; q++)
			q[0] = q[1];
	}
	return 0;
}

unsigned long getauxval(unsigned long type)
{
	started();
	for (const Elf64_auxv_t *a = auxv; a->a_type != AT_NULL; a++)
		if (a->a_type == type)
			return a->a_un.a_val;
	errno = ENOENT;
	return 0;
}
