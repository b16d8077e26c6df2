/*
 * The objects the loader opened before the program starts, and the layout
 * the launcher compiles the filter for: each compartment object's
 * executable ranges (its own syscall instructions decide by the filter),
 * the system runtime's, whose calls go to the supervisor, and where each
 * slot's syscall instructions lie (stubs.S).
 *
 *	object SLOT RUNTIME DEV INO BUILD-ID|- PATH
 *	text SLOT START END
 *	runtime START END
 *	sites OFFSET
 *	epoch ADDR
 *	sealed ERRNO
 *	end
 */
#include <link.h>
#include <stddef.h>

#include "audit.h"

#define MAX_RUNTIME 256

static struct object *objects[4096];
static unsigned nobjects;
static struct range runtime[MAX_RUNTIME];
static unsigned nruntime;

void layout_add(struct object *o)
{
	if (nobjects == sizeof objects / sizeof *objects)
		die("more than %zu objects at start", sizeof objects / sizeof *objects);
	objects[nobjects++] = o;
}

/* runtime_range reports r once: the loader is in every namespace. */
static void runtime_range(struct range r)
{
	for (unsigned i = 0; i < nruntime; i++)
		if (r.start < runtime[i].end && runtime[i].start < r.end)
			return;
	if (nruntime == MAX_RUNTIME)
		die("more than %d runtime ranges", MAX_RUNTIME);
	runtime[nruntime++] = r;
	channel_printf("runtime %lx %lx\n", (unsigned long)r.start, (unsigned long)r.end);
}

/* text_range reports a compartment's own code, to the launcher and to
   the images the program executes. */
static void text_range(int slot, struct range r)
{
	channel_printf("text %d %lx %lx\n", slot, (unsigned long)r.start, (unsigned long)r.end);
	inherit_add("text %d %lx %lx", slot, (unsigned long)r.start, (unsigned long)r.end);
}

void layout_send(void)
{
	for (unsigned i = 0; i < nobjects; i++) {
		const struct object *o = objects[i];
		channel_printf("object %d %d %lu %lu %s %s\n", o->slot, o->runtime,
			       (unsigned long)o->dev, (unsigned long)o->ino,
			       o->build_id[0] ? o->build_id : "-", o->path);
		for (unsigned t = 0; t < o->ntext; t++) {
			if (o->runtime)
				runtime_range(o->text[t]);
			else if (o->slot >= 0)
				text_range(o->slot, o->text[t]);
		}
	}
	/* The loader calls into this library on behalf of whoever loads an
	   object: its calls are the runtime's. */
	object_auditor_code(runtime_range);
	channel_printf("sites %zx\n", stub_sites());
	channel_printf("epoch %lx\n", (unsigned long)window_epoch());
	channel_printf("sealed %d\n", window_seal_errno());
	channel_printf("inherit %s\n", inherit_text());
	channel_printf("end\n");
	channel_flush();
}
