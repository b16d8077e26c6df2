/*
 * The audit library's sets of names (audit/names.c), linked into this
 * program: values ORed under a name, every name of a crowded table found,
 * names never added not found. Prints what is wrong, and "ok" when
 * nothing is. With the argument "full", fills a table past its size,
 * which must die.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../audit/audit.h"

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("died: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	exit(3);
}

static struct names t;
static char names[NAME_SLOTS][16];

int main(int argc, char **argv)
{
	int failures = 0;
	if (argc > 1 && strcmp(argv[1], "full") == 0) {
		for (int i = 0; i < NAME_SLOTS; i++) {
			snprintf(names[i], sizeof names[i], "n%d", i);
			names_add(&t, names[i], 1);
		}
		printf("a full table took every name\n");
		return 1;
	}
	names_add(&t, "read", 1);
	names_add(&t, "write", 2);
	names_add(&t, "read", 4);
	if (names_find(&t, "read") != 5 || names_find(&t, "write") != 2) {
		printf("values: read %u, write %u; want 5, 2\n", names_find(&t, "read"), names_find(&t, "write"));
		failures++;
	}
	/* Crowded: most slots taken, so that probes run long. */
	for (int i = 0; i < NAME_SLOTS - 10; i++) {
		snprintf(names[i], sizeof names[i], "n%d", i);
		names_add(&t, names[i], i + 8);
	}
	for (int i = 0; i < NAME_SLOTS - 10; i++) {
		if (names_find(&t, names[i]) != (unsigned)i + 8) {
			printf("%s: %u, want %d\n", names[i], names_find(&t, names[i]), i + 8);
			failures++;
		}
	}
	const char *absent[] = {"", "readx", "rea", "n-1", "n99999"};
	for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
		if (names_find(&t, absent[i]) != 0) {
			printf("%s: found\n", absent[i]);
			failures++;
		}
	}
	if (failures == 0)
		printf("ok\n");
	return failures != 0;
}
