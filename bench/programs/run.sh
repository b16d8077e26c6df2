#!/usr/bin/env bash
# Measures ordinary programs under syscell run (docs/PERFORMANCE.md,
# Programs): a shell script that executes /bin/true 200 times, /bin/true's
# start, and sed, openssl, gzip and sort on their issue-13 inputs, each
# plainly, under its recorded policy as one whole-process filter, with
# per-library compartments, and with the policy record --bound static
# writes (main.go says how). As root: record needs it.
#
#   bench/programs/run.sh [OUT.json] [exec|start|tools...]
#
# ROUNDS (default 5) interleaved rounds. The binary, its audit library
# and its shim are copied first, so that a rebuild during the runs changes
# nothing; make build makes them (SYSCELL names another binary).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ROUNDS=${ROUNDS:-5}
out=${1:-}
[[ $out == *.json ]] && shift || out=
what=("$@")
[[ ${#what[@]} -gt 0 ]] || what=(exec start tools)
[[ $(id -u) -eq 0 ]] || {
	echo "$0: needs root (syscell record)" >&2
	exit 2
}
command -v openssl >/dev/null || "$repo/scripts/install-deps.sh" >/dev/null

syscell=${SYSCELL:-$repo/bin/syscell}
if [[ -z ${SYSCELL:-} ]]; then
	make -C "$repo" build >/dev/null
fi
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp "$syscell" "$(dirname "$syscell")/libsyscell-audit.so" "$copy/"
# The whole-process shim, where the binary has one (older builds do not).
shim=$(dirname "$syscell")/syscell-shim
[[ ! -x $shim ]] || cp "$shim" "$copy/"
cd "$repo"
go run ./bench/programs -syscell "$copy/$(basename "$syscell")" -rounds "$ROUNDS" ${out:+-json "$out"} "${what[@]}"
