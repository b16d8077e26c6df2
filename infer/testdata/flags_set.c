/* Calls of libc whose paths depend on a flag they are given, given the
 * flags that take them: faccessat checks the caller's groups only for a
 * mode other than F_OK (when faccessat2 is missing), and glob reads the
 * home directory (getlogin_r, whose utmp reader sets an alarm) only with
 * GLOB_TILDE. flags_clear.c gives the flags that do not. */
#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

int flags_set(const char *path)
{
	glob_t g;
	int r = glob(path, GLOB_TILDE, NULL, &g);

	if (r == 0)
		globfree(&g);
	return r + faccessat(AT_FDCWD, path, R_OK, AT_EACCESS);
}
