/*
 * Sets of names, looked up for every symbol an image binds (la_symbind):
 * the wrappers, and the functions a gate leaves alone. Open addressing
 * over the hash .gnu.hash gives symbol names.
 */
#include <string.h>

#include "audit.h"

uint32_t name_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++)
		h = h * 33 + *p;
	return h;
}

/* slot is where name lies in t, or the empty slot it would take. */
static size_t slot(const struct names *t, const char *name)
{
	size_t i = name_hash(name) % NAME_SLOTS;
	while (t->name[i] != NULL && strcmp(t->name[i], name) != 0)
		i = (i + 1) % NAME_SLOTS;
	return i;
}

void names_add(struct names *t, const char *name, unsigned value)
{
	/* One slot stays empty, so that a lookup always ends. */
	if (t->count + 1 >= NAME_SLOTS)
		die("more than %d names in a table", NAME_SLOTS - 2);
	size_t i = slot(t, name);
	if (t->name[i] == NULL) {
		t->name[i] = name;
		t->count++;
	}
	t->value[i] |= value;
}

unsigned names_find(const struct names *t, const char *name)
{
	size_t i = slot(t, name);
	return t->name[i] != NULL ? t->value[i] : 0;
}
