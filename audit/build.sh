#!/bin/sh
# Builds the audit library: build.sh OUT.so [CC]. The one place its
# compiler flags live (make build and the Go tests both call it). Hidden
# visibility leaves the loader's la_* entry points the only exports; the
# soname is what the supervisor knows the library by (it counts as the
# runtime).
set -eu
out=$1
cc=${2:-${CC:-gcc}}
here=$(dirname "$0")
exec "$cc" -O2 -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -fPIC -shared -fvisibility=hidden \
	-Wl,-soname,libsyscell-audit.so -Wl,-z,now -Wl,-z,noexecstack -o "$out" "$here"/*.c "$here"/stubs.S "$here"/phase.S "$here"/gate.S
