/* The calls of flags_set.c, with flags that keep libc off the paths
 * flags_set.c takes: F_OK, and no GLOB_TILDE. */
#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

int flags_clear(const char *path)
{
	glob_t g;
	int r = glob(path, 0, NULL, &g);

	if (r == 0)
		globfree(&g);
	return r + faccessat(AT_FDCWD, path, F_OK, AT_EACCESS);
}
