// libgoodplug.so, loaded by dlopen after the program started: its
// compartment may make directories (evil.toml). plug_getpid is code an
// attacker in libevil.so tries to rewrite.
#include <unistd.h>

long plug_getpid(void)
{
	return getpid();
}
