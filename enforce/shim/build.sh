#!/bin/sh
# Builds the shim's own binary: build.sh OUT [CC]. The one place its
# compiler flags live (make build and the Go tests both call it). Linked
# statically: it starts without the dynamic loader.
set -eu
out=$1
cc=${2:-${CC:-gcc}}
here=$(dirname "$0")
exec "$cc" -O2 -std=gnu11 -Wall -Wextra -static -pthread -o "$out" "$here"/src/shim.c
