#!/usr/bin/env bash
# The heap guard's benchmark: each workload under the system allocator
# (glibc malloc; Debian's redis-server links jemalloc), the guard's strict
# and deferred modes and, when their paths are given, anchor allocators
# built elsewhere (never in this repository), RUNS interleaved rounds
# (default 3), printed as a markdown table of median runtime and peak memory
# ratios to the system allocator, their geomeans, and redis-benchmark's
# throughput ratio:
#
#   [FFMALLOC=/path/libffmallocnpmt.so] [MARKUS=/path/libgc.so:/path/libgccpp.so]
#   [GUARD_BEFORE=/path/guard.so] [CONFIGS="glibc strict deferred ..."] \
#     bench/heapguard/run.sh [RUNS] [WORKLOAD...]
#
# GUARD_BEFORE: another build of the guard, run in deferred mode as
# "before", e.g. an earlier commit's:
#   git archive COMMIT heapguard | tar -x -C /tmp/old && /tmp/old/heapguard/build.sh /tmp/old.so
#
# FFMALLOC and MARKUS are LD_PRELOAD values; an anchor whose variable is
# unset is left out. Naming workloads measures only those (and skips the
# primitives), e.g. bench/heapguard/run.sh 3 larson python-dict.
#
# A round runs every workload under every configuration in turn, so that
# the machine's drift spreads over all of them. Peak RSS is /usr/bin/time's
# maximum resident set size; it counts a page once per mapping, and strict
# mode maps a heap frame once per object in it, so it overstates strict
# mode's memory. Peak memory is what the kernel charged the run's memory
# cgroup at most (every page once, page tables included); it needs a
# writable cgroup (root), else that column says n/a. A run whose standard
# error has a heapguard report counts as a false report: the workloads are
# correct.
set -euo pipefail

runs=${1:-3}
only=("${@:2}")
here=$(dirname "$(realpath "$0")")
root=$(realpath "$here/../..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

need=()
for p in time redis-server redis-tools sqlite3 g++ python3 gcc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [[ ${#need[@]} -gt 0 ]]; then
	echo "installing ${need[*]}" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

"$root/heapguard/build.sh" "$work/guard.so"
for w in binary_trees larson bignum; do
	gcc -O2 -pthread -o "$work/$w" "$here/workloads/$w.c"
done
gcc -O2 -pthread -o "$work/primitives" "$here/primitives.c" "$here/kvm_exit.c" "$here/move.c"
source "$here/cgroup.sh"

[[ ${#only[@]} -gt 0 ]] || { "$work/primitives"; echo; }

# The workloads: name, then the command (a shell snippet run with
# LD_PRELOAD set or not). Sized so the whole run takes a few minutes.
names=(binary-trees larson cfrac-like sqlite3 python-dict python-json g++-compile redis)
declare -A cmds=(
	[binary-trees]="$work/binary_trees 12"
	[larson]="$work/larson 2 100000"
	[cfrac-like]="$work/bignum 120000"
	[sqlite3]="sqlite3 :memory: < $here/inputs/sqlite.sql"
	[python-dict]="PYTHONMALLOC=malloc /usr/bin/python3 $here/inputs/py_dict.py"
	[python-json]="PYTHONMALLOC=malloc /usr/bin/python3 $here/inputs/py_json.py"
	[g++-compile]="g++ -O1 -c -o $work/compile.o $here/inputs/compile.cc"
	[redis]="$here/redis.sh"
)

if [[ ${#only[@]} -gt 0 ]]; then
	for name in "${only[@]}"; do
		[[ -v cmds[$name] ]] || { echo "no workload $name (have: ${names[*]})" >&2; exit 2; }
	done
	names=("${only[@]}")
fi

source "$here/configs.sh"
configs_define "$work/guard.so"

# CPU time of a run's processes: perf's task-clock where perf works (to the
# nanosecond: binary-trees and larson take 10 to 40 ms), else
# /usr/bin/time's user + system time (10 ms ticks).
cpu_clock=()
if perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
	cpu_clock=(perf stat -x, -e task-clock -o "$work/cpu" --)
fi

# cpu_seconds USER SYS: the last run's CPU time.
cpu_seconds() {
	if [[ ${#cpu_clock[@]} -gt 0 ]]; then
		awk -F, '$3 == "task-clock" { printf "%.6f\n", $1 / 1000 }' "$work/cpu"
	else
		echo "$1 + $2" | bc
	fi
}

# measure CONFIG NAME: one run; appends "seconds rss_kb peak_kb reports rps
# cpu_seconds" (rps: redis-benchmark's geomean requests/s, or - for other
# workloads; cpu: the CPU time of the run's processes). Other jobs
# share this machine (a redis on the same port, say): a run that fails is
# made again, twice at most.
measure() {
	local config=$1 name=$2 attempt
	for attempt in 1 2 3; do
		measure_once "$config" "$name" && return
		echo "$name under $config failed, attempt $attempt:" >&2
		cat "$work/stderr" >&2
	done
	exit 1
}

measure_once() {
	local config=$1 name=$2 cg start end reports rps=- rss user sys
	cg=$(cgroup_new) || cg=
	rm -f "$work/redis.csv"
	start=$(date +%s.%N)
	if ! REDIS_CSV=$work/redis.csv BENCH_ENV="${envs[$config]}" cgroup_run "$cg" "${cpu_clock[@]}" /usr/bin/time -f '%M %U %S' -o "$work/rss" \
		bash -c "[ -z \"\$BENCH_ENV\" ] || export \$BENCH_ENV; ${cmds[$name]}" >/dev/null 2>"$work/stderr"; then
		cgroup_remove "$cg"
		return 1
	fi
	end=$(date +%s.%N)
	reports=$(grep -c '== heapguard: ' "$work/stderr" || true)
	[[ ! -s $work/redis.csv ]] || rps=$(python3 "$here/table.py" rps "$work/redis.csv")
	read -r rss user sys < <(tail -1 "$work/rss")
	echo "$(echo "$end - $start" | bc) $rss $(cgroup_peak_kb "$cg") $reports $rps $(cpu_seconds "$user" "$sys")" >>"$work/$config-$name"
	cgroup_remove "$cg"
}

for ((i = 0; i < runs; i++)); do
	for name in "${names[@]}"; do
		for config in "${configs[@]}"; do
			measure "$config" "$name"
		done
	done
	echo "round $((i + 1)) of $runs done (${SECONDS}s)" >&2
done

python3 "$here/table.py" table "$work" "${configs[*]}" "${names[@]}"
