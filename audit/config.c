/*
 * What the launcher sends at start: where the stub window goes, how each
 * compartment names its objects (in slot order), which objects form the
 * system runtime, and which system calls depend on the caller.
 *
 *	window ADDR SHIFT SLOTS
 *	compartment SLOT BUILD-ID DEV INO NAME   (each "-" when absent)
 *	compartment SLOT nothing
 *	runtime SONAME
 *	stub NR
 *	serving NR      (the first call of its wrappers starts serving, phase.c)
 *	end
 *
 * An image the program executes later finds the same lines in the
 * environment (inherit.c), with the text lines of the layout the filter
 * was compiled for.
 */
#include <stdlib.h>
#include <string.h>

#include "audit.h"

struct config config;

static unsigned long number(const char *s, int base, const char *line)
{
	char *end;
	unsigned long v = strtoul(s ? s : "", &end, base);
	if (s == NULL || *s == '\0' || *end != '\0')
		die("bad line from the launcher: %s", line);
	return v;
}

static char *copy(const char *s)
{
	char *c = strdup(s);
	if (c == NULL)
		die("out of memory");
	return c;
}

/* optional returns a copy of a field, or NULL for "-". */
static char *optional(const char *field, const char *line)
{
	if (field == NULL)
		die("bad line from the launcher: %s", line);
	return strcmp(field, "-") == 0 ? NULL : copy(field);
}

static void compartment(char *args, const char *line)
{
	char *save;
	unsigned long slot = number(strtok_r(args, " ", &save), 10, line);
	char *first = strtok_r(NULL, " ", &save);
	if (slot >= config.nslots || first == NULL)
		die("bad line from the launcher: %s", line);
	struct compartment *c = &config.slots[slot];
	if (strcmp(first, "nothing") == 0) {
		c->nothing = true;
		return;
	}
	c->build_id = optional(first, line);
	char *dev = strtok_r(NULL, " ", &save), *ino = strtok_r(NULL, " ", &save);
	if (dev == NULL || ino == NULL)
		die("bad line from the launcher: %s", line);
	if (strcmp(dev, "-") != 0) {
		c->file = true;
		c->dev = number(dev, 10, line);
		c->ino = number(ino, 10, line);
	}
	c->name = optional(strtok_r(NULL, " ", &save), line);
}

static void window(char *args, const char *line)
{
	char *save;
	config.window = number(strtok_r(args, " ", &save), 16, line);
	config.shift = number(strtok_r(NULL, " ", &save), 10, line);
	config.nslots = number(strtok_r(NULL, " ", &save), 10, line);
	if (config.shift < 12 || config.shift > 24 || config.nslots == 0 || config.nslots > 4096)
		die("bad window from the launcher: %s", line);
	config.slots = calloc(config.nslots, sizeof *config.slots);
	if (config.slots == NULL)
		die("out of memory");
}

static void runtime(const char *name)
{
	config.runtime = realloc(config.runtime, (config.nruntime + 2) * sizeof *config.runtime);
	if (config.runtime == NULL)
		die("out of memory");
	config.runtime[config.nruntime++] = copy(name);
	config.runtime[config.nruntime] = NULL;
}

static void text(char *args, const char *line)
{
	char *save;
	if (config.ninherited == MAX_INHERITED)
		die("more than %d inherited code ranges", MAX_INHERITED);
	struct inherited *t = &config.inherited[config.ninherited++];
	t->slot = number(strtok_r(args, " ", &save), 10, line);
	t->range.start = number(strtok_r(NULL, " ", &save), 16, line);
	t->range.end = number(strtok_r(NULL, " ", &save), 16, line);
}

/* config_line reads one line, and returns false at the end. */
static bool config_line(const char *received)
{
	char line[8192];
	if (strlen(received) >= sizeof line)
		die("line from the launcher longer than %zu bytes", sizeof line - 1);
	strcpy(line, received);
	char *args = strchr(line, ' ');
	if (args != NULL)
		*args++ = '\0';
	if (strcmp(line, "end") == 0)
		return false;
	if (strcmp(line, "window") == 0 && args != NULL) {
		window(args, received);
	} else if (strcmp(line, "compartment") == 0 && args != NULL && config.slots != NULL) {
		compartment(args, received);
	} else if (strcmp(line, "runtime") == 0 && args != NULL) {
		runtime(args);
	} else if (strcmp(line, "stub") == 0 && args != NULL) {
		unsigned long nr = number(args, 10, received);
		if (nr >= MAX_NR)
			die("bad line from the launcher: %s", received);
		config.stub_nr[nr] = true;
	} else if (strcmp(line, "serving") == 0 && args != NULL) {
		unsigned long nr = number(args, 10, received);
		if (nr >= MAX_NR)
			die("bad line from the launcher: %s", received);
		config.serving_nr[nr] = true;
		config.phases = true;
	} else if (strcmp(line, "text") == 0 && args != NULL) {
		text(args, received);
	} else {
		die("unexpected line from the launcher: %s", received);
	}
	return true;
}

static void check(void)
{
	if (config.slots == NULL)
		die("the launcher sent no window");
}

void config_read(void)
{
	char *line;
	while (config_line(line = channel_line()))
		inherit_add("%s", line);
	check();
}

void config_inherit(const char *value)
{
	char *save, *lines = copy(value);
	for (char *line = strtok_r(lines, ";", &save); line != NULL; line = strtok_r(NULL, ";", &save))
		if (!config_line(line)) {
			check();
			return;
		}
	die("the configuration in the environment is cut short");
}
