#!/usr/bin/env bash
# Measure syscell's compiler against libseccomp and gVisor on Docker's
# default profile, all in one run, and print the tables of
# docs/PERFORMANCE.md:
#
#   bench/compare/report.sh OUTDIR [--kernel-bench]
#
# Program sizes and instruction counts come from syscell's interpreter
# (syscell measure) on the same inputs for every compiler; compile times
# from each compiler's own timer (median of 101); --kernel-bench adds
# syscell bench filter on each program (slow, and noisy on a shared
# machine).
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 OUTDIR [--kernel-bench]" >&2
	exit 2
fi
mkdir -p "$1"
out=$(realpath "$1")
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$top"
go build -o "$out/syscell" ./cmd/syscell
sc="$out/syscell"
profile=policy/testdata/docker-default.json

# The policy every compiler gets: Docker's profile resolved for its default
# capabilities on this kernel, as runc receives it.
"$sc" convert "$profile" --to oci --arch x86_64 --kernel 6.18 -o "$out/docker-x86_64.json" 2>/dev/null
"$sc" convert "$profile" --to oci --arch x86_64,x86,x32 --kernel 6.18 -o "$out/docker-multiarch.json" 2>/dev/null
bench/compare/run.sh "$out/docker-x86_64.json" "$out" "$out/docker-multiarch.json" >/dev/null
"$sc" compile "$out/docker-x86_64.json" --arch x86_64 -o "$out/syscell.bpf"
"$sc" compile "$out/docker-multiarch.json" --arch x86_64,x86,x32 -o "$out/syscell-multiarch.bpf"

row() { # row NAME PROGRAM ARCHES
	"$sc" measure "$out/$2" --policy "$out/docker-x86_64.json" --arch "$3" --json |
		python3 -c 'import json,sys; r=json.load(sys.stdin); print("| %s | %d | %.2f / %d | %.2f / %d | %d | %d |" % (sys.argv[1], r["instructions"], r["uniform_mean"], r["uniform_max"], r["arg_rules_mean"], r["arg_rules_max"], len(r["not_cacheable"] or []), len(r["mismatches"] or [])))' "$1"
}
echo "| compiler | instructions | executed, uniform (mean / max) | executed, argument rules (mean / max) | allowed but not cacheable | mismatches |"
echo "| --- | --- | --- | --- | --- | --- |"
row "libseccomp 2.5.4, linear" libseccomp-linear.bpf x86_64
row "libseccomp 2.5.4, binary tree" libseccomp-tree.bpf x86_64
row "gVisor, optimized (libseccomp's syscall list)" gvisor-libseccomp-syscalls.bpf x86_64
row "gVisor, optimized (its own syscall table)" gvisor.bpf x86_64
row "syscell" syscell.bpf x86_64
row "libseccomp 2.5.4, linear, x86_64+x86+x32" libseccomp-linear-multiarch.bpf x86_64,x86,x32
row "syscell, x86_64+x86+x32" syscell-multiarch.bpf x86_64,x86,x32
echo
echo "Compile time (median of 101; each compiler's own timer):"
sed -n 's/^\([a-z-]*\.bpf\) .*build \([0-9]*\) us.*/\1 \2 us/p' "$out/summary.txt"
go test -run '^$' -bench CompileDocker -benchtime 101x -count 3 ./compile/ | grep Benchmark

if [[ ${2:-} == --kernel-bench ]]; then
	for p in syscell.bpf libseccomp-tree.bpf gvisor-libseccomp-syscalls.bpf; do
		echo
		echo "$p:"
		"$sc" bench filter "$out/$p" --runs 5
	done
fi
