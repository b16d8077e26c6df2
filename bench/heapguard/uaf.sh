#!/usr/bin/env bash
# Which of heapguard's use-after-free tests (heapguard/testdata/cases.c,
# every case but the correct programs `clean`, `recycle_fork` and
# `realloc_room`) each allocator stops, as a markdown table:
#
#   [FFMALLOC=/path/libffmallocnpmt.so] [MARKUS=/path/libgc.so:/path/libgccpp.so]
#   bench/heapguard/uaf.sh
#
# Allocators: glibc malloc, the guard's strict and deferred modes, and the
# anchors whose LD_PRELOAD values are given (as for run.sh). Verdicts:
#   fault + sites   the use faulted and the guard's report named the
#                   allocation and free sites
#   fault + report  the use faulted in memory released so long ago that its
#                   sites were dropped; the report says so
#   fault           the use faulted (SIGSEGV)
#   no reuse        the probe (cases.c) allocated thousands of objects of
#                   many sizes and none overlapped the freed byte, which
#                   still read: a dangling pointer reaches no other object
#   reused          a new object overlapped the freed byte
#   stopped         a bad free ended the process (SIGABRT or SIGSEGV)
#   nothing         a bad free returned as if it were fine
#   n/a             realloc grew the object in place: nothing was freed
set -euo pipefail

here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/heapguard/build.sh" "$work/guard.so"
gcc -O1 -g -fno-omit-frame-pointer -rdynamic -pthread -w -o "$work/cases" "$root/heapguard/testdata/cases.c"

source "$here/configs.sh"
configs_define "$work/guard.so"

cases=$(sed -n 's/^\t{"\([a-z_]*\)", [a-z_]*},$/\1/p' "$root/heapguard/testdata/cases.c" | grep -Ev '^(clean|recycle_fork|realloc_room)$')

# status CONFIG ARGS...: runs the case binary; prints its exit status (128 +
# signal when a signal ended it); its stderr is left in $work/stderr.
status() {
	local config=$1
	shift
	set +e
	# shellcheck disable=SC2086 # the environment is a list of words
	timeout -k 5 120 env ${envs[$config]} "$work/cases" "$@" >/dev/null 2>"$work/stderr"
	echo $?
	set -e
}

verdict() {
	local config=$1 name=$2 s
	s=$(status "$config" "$name")
	case $name in
	double_free | invalid_free_*)
		[[ $s == 0 ]] && echo nothing || echo stopped
		return
		;;
	esac
	if [[ $s == 139 ]] && grep -q 'heapguard: use-after-free' "$work/stderr"; then
		grep -q 'allocated at:' "$work/stderr" && echo "fault + sites" || echo "fault + report"
		return
	fi
	case $(status "$config" probe "$name") in
	4) echo n/a ;;
	10) echo "no reuse" ;;
	11) echo reused ;;
	12 | 139) echo fault ;;
	*) echo "error (exit $s)" ;;
	esac
}

printf '| test |'
printf ' %s |' "${configs[@]}"
printf '\n| --- |'
printf ' --- |%.0s' "${configs[@]}"
printf '\n'
for name in $cases; do
	printf '| %s |' "$name"
	for config in "${configs[@]}"; do
		printf ' %s |' "$(verdict "$config" "$name")"
	done
	printf '\n'
done
