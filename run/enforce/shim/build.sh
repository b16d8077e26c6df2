#!/bin/sh
# Builds the shim's own binary: build.sh OUT [CC]. The one place its
# compiler flags live (make build and the Go tests both call it). Linked
# statically, it starts without the dynamic loader; it needs no C library
# (src/shim.c says why) and has the audit library's runtime instead,
# built as audit/build.sh builds it: freestanding, without the stack
# protector, with no loop turned into a call of the runtime's own.
set -eu
out=$1
cc=${2:-${CC:-gcc}}
here=$(dirname "$0")
rt=$here/../../../audit
exec "$cc" -O2 -std=gnu11 -D_GNU_SOURCE -U_FORTIFY_SOURCE -Wall -Wextra \
	-ffreestanding -fno-stack-protector -fno-tree-loop-distribute-patterns -nostdlib -static -no-pie \
	-I"$rt" -Wl,-z,noexecstack -o "$out" "$here"/src/shim.c "$here"/src/start.S \
	"$rt"/rt_syscall.c "$rt"/rt_string.c "$rt"/rt_error.c "$rt"/rt_format.c "$rt"/rt_alloc.c "$rt"/rt_socket.c "$rt"/rt_clone.S
