#!/usr/bin/env bash
# The heap guard's benchmark. First the kernel primitives the design rests
# on (primitives.c), then each workload under glibc malloc and under the
# guard (LD_PRELOAD), RUNS times (default 3), printed as a markdown table of
# median runtime, peak RSS and peak memory, their ratios and geomeans:
#
#   bench/heapguard/run.sh [RUNS] [WORKLOAD...]
#
# Naming workloads measures only those (and skips the primitives), e.g.
# bench/heapguard/run.sh 3 larson python-dict.
#
# Peak RSS is /usr/bin/time's maximum resident set size. It counts a page
# once per mapping, and the guard maps a heap frame once per object in it,
# so for the guard it overstates memory (up to 256x for 16-byte objects).
# Peak memory is what the kernel charged the run's memory cgroup at most
# (every page once, page tables included); it needs a writable cgroup
# (root), else that column says n/a. A run whose standard error has a
# heapguard report counts as a false report: the workloads are correct.
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
gcc -O2 -pthread -o "$work/primitives" "$here/primitives.c" "$here/kvm_exit.c"
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

# measure CONFIG NAME: one run; appends "seconds rss_kb peak_kb reports".
measure() {
	local config=$1 name=$2 preload=
	[[ $config == guard ]] && preload=$work/guard.so
	local cg
	cg=$(cgroup_new) || cg=
	local start end
	start=$(date +%s.%N)
	LD_PRELOAD_BENCH=$preload cgroup_run "$cg" /usr/bin/time -f '%M' -o "$work/rss" \
		bash -c "export LD_PRELOAD=\$LD_PRELOAD_BENCH; ${cmds[$name]}" >/dev/null 2>"$work/stderr" || {
		echo "$name under $config failed:" >&2
		cat "$work/stderr" >&2
		exit 1
	}
	end=$(date +%s.%N)
	local reports
	reports=$(grep -c '== heapguard: ' "$work/stderr" || true)
	echo "$(echo "$end - $start" | bc) $(tail -1 "$work/rss") $(cgroup_peak_kb "$cg") $reports" >>"$work/$config-$name"
	cgroup_remove "$cg"
}

for name in "${names[@]}"; do
	for ((i = 0; i < runs; i++)); do
		measure glibc "$name"
		measure guard "$name"
	done
	echo "measured $name" >&2
done

python3 "$here/table.py" "$work" "${names[@]}"
