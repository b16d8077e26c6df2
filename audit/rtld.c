/*
 * The loader's entry points (rtld-audit(7)): the only symbols this library
 * exports.
 */
#include <link.h>
#include <stdlib.h>

#include "audit.h"

static bool installed, inherited;
/* The slot every object of a bounded executed image binds to, or -1. */
static int bound = -1;
static bool seen_executable;

EXPORT unsigned la_version(unsigned version)
{
	const char *fd = getenv(CHANNEL_ENV), *path = getenv(SOCKET_ENV);
	if (fd != NULL || path != NULL) {
		if (fd != NULL)
			channel_open(fd);
		else
			channel_connect(path);
		channel_printf("hello %d %zu\n", PROTOCOL_VERSION, stub_block_size());
		channel_flush();
		config_read();
	} else {
		/* An image the program executed: its filter is in place. */
		inherit_apply();
		inherited = true;
		bound = inherit_bound();
	}
	stubs_init();
	gate_init();
	window_reserve();
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

EXPORT unsigned la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	/* Before the filter, every object's file identity goes into the
	   layout; under it (once installed, or inherited by an executed
	   image), stat is a supervised call. */
	struct object *o = object_identify(map, lmid, !installed && !inherited);
	if (bound >= 0 && !o->runtime)
		o->slot = bound;
	*cookie = (uintptr_t)o;
	if (inherited)
		inherit_check(o);
	if (!seen_executable && lmid == LM_ID_BASE) {
		window_program(map);
		seen_executable = true;
	}
	if (!installed && !inherited)
		layout_add(o);
	return (o->wrappers ? LA_FLG_BINDTO : 0) | (o->slot >= 0 ? LA_FLG_BINDFROM : 0);
}

EXPORT void la_activity(uintptr_t *cookie, unsigned flag)
{
	(void)cookie;
	if (flag != LA_ACT_CONSISTENT) {
		window_epoch_change(false);
		return;
	}
	/* The first consistent state: every object of the program is loaded
	   and relocated, and no constructor has run yet. */
	if (!installed) {
		window_finish();
		if (!inherited) {
			layout_send();
			inherit_publish();
			install_filter();
		} else {
			inherit_loaded();
		}
		installed = true;
	}
	window_epoch_change(true);
}

EXPORT uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook,
		       unsigned *flags, const char *name)
{
	(void)ndx;
	(void)flags;
	/* Objects the loader does not audit (this library's namespace's)
	   have a null cookie. */
	const struct object *ref = (const void *)*refcook, *def = (const void *)*defcook;
	uintptr_t target = sym->st_value;
	if (ref != NULL && def != NULL && def->wrappers && ref->slot >= 0) {
		long offset = stub_offset(name);
		if (offset >= 0)
			target = window_slot(ref->slot) + offset;
		else
			target = gate_binding(ref->slot, name, target);
		if (config.phases)
			target = phase_binding(name, target);
	}
	return target;
}
