#!/usr/bin/env bash
# Measures syscell's OCI runtime (docs/PERFORMANCE.md, Containers): the
# servers' throughput in a container under their per-library policy over
# the same container without syscell, the time the runtime adds to a
# container's start, and the cost of a supervised call with one
# supervisor serving 1, 8 and 32 containers. As root, with runc.
#
#   bench/containers/run.sh [--quick] [OUT.json] [throughput|start|scale...]
#
# ROUNDS (default 5) interleaved rounds of each measure; --quick takes
# one round of short loads. Builds bin/syscell (make build) when missing,
# and cellprobe (integration/testdata/cellprobe) in a temporary
# directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ROUNDS=${ROUNDS:-5}
flags=()
if [[ ${1:-} == --quick ]]; then
	flags+=(-quick)
	ROUNDS=1
	shift
fi
out=${1:-}
[[ -n $out ]] && shift
what=("$@")
[[ ${#what[@]} -gt 0 ]] || what=(throughput start scale)
[[ $(id -u) -eq 0 ]] || {
	echo "$0: needs root (containers)" >&2
	exit 2
}

syscell=${SYSCELL:-$repo/bin/syscell}
if [[ ! -x $syscell ]]; then
	make -C "$repo" build >/dev/null
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
src=$repo/integration/testdata/cellprobe
cflags=(-O2 -fomit-frame-pointer -Wall -Wextra -Werror)
gcc "${cflags[@]}" -shared -fPIC -o "$probe/libmaymk.so" "$src/libmaymk.c"
gcc "${cflags[@]}" -shared -fPIC -o "$probe/libnomk.so" "$src/libnomk.c"
gcc "${cflags[@]}" -o "$probe/cellprobe" "$src/main.c" -L"$probe" -lmaymk -lnomk -Wl,-rpath,'$ORIGIN'

json=()
[[ -n $out ]] && json=(-json "$out")
cd "$repo"
go run ./bench/containers -syscell "$syscell" -probe "$probe" -rounds "$ROUNDS" "${flags[@]}" "${json[@]}" "${what[@]}"
