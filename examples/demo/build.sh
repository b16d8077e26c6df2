#!/bin/sh
# Build the demo into DIR: two libraries and the program, -O2 and without
# frame pointers, as Debian builds.
#
#   examples/demo/build.sh DIR
set -eu
src=$(dirname "$0")
out=$1
mkdir -p "$out"
cc=${CC:-cc}
flags="-O2 -fomit-frame-pointer -Wall -Wextra"
$cc $flags -shared -fPIC -o "$out/libgetpid.so" "$src/libgetpid.c"
$cc $flags -shared -fPIC -o "$out/libmk.so" "$src/libmk.c"
$cc $flags -o "$out/demo" "$src/main.c" -L"$out" -lgetpid -lmk -Wl,-rpath,'$ORIGIN'
