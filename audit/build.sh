#!/bin/sh
# Builds the audit library: build.sh OUT.so [CC]. The one place its
# compiler flags live (make build and the Go tests both call it). Hidden
# visibility leaves the loader's la_* entry points the only exports; the
# soname is what the supervisor knows the library by (it counts as the
# runtime).
#
# The library needs no libc (rt.h says why): it is built freestanding,
# without the compiler's stack protector (which would call libc), linked
# with nothing, and every symbol must be resolved in it. The compiler may still call memcpy and memset
# for structure copies, which the runtime has; it must not turn the
# runtime's own loops into calls of themselves.
set -eu
out=$1
cc=${2:-${CC:-gcc}}
here=$(dirname "$0")
exec "$cc" -O2 -std=gnu11 -D_GNU_SOURCE -U_FORTIFY_SOURCE -Wall -Wextra -fPIC -shared -fvisibility=hidden \
	-ffreestanding -fno-stack-protector -fno-tree-loop-distribute-patterns -nostdlib \
	-Wl,-soname,libsyscell-audit.so -Wl,-z,now -Wl,-z,noexecstack -Wl,--no-undefined \
	-o "$out" "$here"/*.c "$here"/*.S
