#!/bin/sh
# Builds the heap guard: build.sh OUT.so [CC]. The one place its compiler
# flags live (make build and the Go tests both call it). Frame pointers
# let the guard record the caller's stack cheaply; hidden visibility keeps
# every symbol but the allocator's entry points out of the program's way.
set -eu
out=$1
cc=${2:-${CC:-gcc}}
here=$(dirname "$0")
exec "$cc" -O2 -g -std=gnu11 -Wall -Wextra -fPIC -shared -pthread \
	-fvisibility=hidden -fno-omit-frame-pointer -fno-strict-aliasing \
	-o "$out" "$here"/src/*.c
