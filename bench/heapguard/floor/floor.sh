#!/usr/bin/env bash
# The floor of heapguard's guarantee on this machine: a lower bound on the
# runtime of ANY allocator that keeps "after free(p) returns, every load and
# store through p faults", for each workload of bench/heapguard/run.sh, next
# to the guard's strict mode measured in the same interleaved rounds; and
# the floor of any allocator that never hands an address out twice (as
# deferred mode and FFmalloc), next to deferred mode.
#
#   bench/heapguard/floor/floor.sh [RUNS] [WORKLOAD...]   (default 3 runs of
#                                       every workload; about 5 minutes)
#
# Naming workloads measures only those; floor.md is written only for all.
# For each workload (run.sh's own definitions, read from run.sh):
#   T  median wall time of RUNS plain runs under glibc malloc (and C, the
#      median CPU time, user + system, of all its processes);
#   F  the frees in one run under count.so (LD_PRELOAD, like the guard):
#      free(p) with p != NULL and realloc(p, 0), in every preloaded process.
# t_min is the cheapest revocation of one populated page measured here:
# the minimum of revoke.c's best round means (every mechanism that makes a
# page fault: MADV_GUARD_INSTALL, process_madvise with one range, mprotect
# PROT_NONE, munmap, mmap MAP_FIXED PROT_NONE) and of primitives.c's
# single-page revocation rows (min column), all single-threaded.
#
# Floors (ratios to T):
#   serial  (T + F*t_min) / T: every revocation lands on the critical path;
#           exact for one thread, not for frees made in parallel.
#   strict  max over two bounds that hold however the work is spread over
#           threads, processes and CPUs, each allowing the design an
#           allocator that costs nothing (A = time count.so measured inside
#           glibc's allocator functions, an overestimate):
#             work:   (C - A + F*t_min) / CPUS  (wall >= CPU time / CPUS)
#             thread: for each process, the thread that called exit: its CPU
#                     time (scaled by C / the count run's CPU time, to take
#                     the counting out) - its A + its frees * t_min (a
#                     thread's CPU time <= wall)
#           divided by T.
#   emulated  the median wall time of RUNS runs with glibc malloc plus, on
#           every counted free, t_min of busy waiting on the freeing thread
#           (count.so with FREE_DELAY_NS=t_min), divided by T: the serial
#           model measured end to end, with the real overlap of threads and
#           processes (redis-server with redis-benchmark; larson's threads).
# All ignore every other cost of such a design (alias set-up, TLB
# shootdowns with other threads running, the caches and TLB a kernel entry
# disturbs, reallocs that move): lower bounds, the first two strictly, the
# third up to glibc's own allocator time (A, small) which it keeps.
#
# Floor with mapping: every live object needs a virtual page of its own (a
# page it shared with another live object would be revoked with it), so
# every allocation maps one: the strict floor plus N allocations * t_map,
# the cheapest mapping of an existing frame at a new page (primitives.c).
#
# Fresh pages: an allocator that never reuses an address takes fresh memory
# for every object: B bytes allocated (count.so's bytes, each object rounded
# up to 16) are B/4096 fresh pages at least, each populated and, once dead,
# released: t_page = the cheaper of a write fault and MADV_POPULATE_WRITE
# per fresh private page, plus MADV_GUARD_INSTALL per page over a whole
# range (which also frees it), all from primitives.c's min column. glibc +
# fresh pages = (T + B/4096 * t_page) / T: glibc's run with that added, what
# deferred mode (or FFmalloc) costs if all else were as cheap as glibc.
#
# CPU columns compare user + system times (the plain runs' C): waiting for
# a CPU on this shared machine is not CPU time, so they are steadier.
#
# strict and deferred: the guard's modes (heapguard/build.sh), run in the
# same rounds as plain: their median wall time over T.
# The table goes to stdout and, with the measurements, to floor.md.
set -euo pipefail

runs=${1:-3}
only=("${@:2}")
floor=$(dirname "$(realpath "$0")")
here=$(realpath "$floor/..") # bench/heapguard, run.sh's $here
root=$(realpath "$here/../..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
command="bench/heapguard/floor/floor.sh $*"
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

need=()
for p in time redis-server redis-tools sqlite3 g++ python3 gcc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [[ ${#need[@]} -gt 0 ]]; then
	echo "installing ${need[*]}" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Built as run.sh builds them.
for w in binary_trees larson bignum; do
	gcc -O2 -pthread -o "$work/$w" "$here/workloads/$w.c"
done
gcc -O2 -pthread -o "$work/primitives" "$here/primitives.c" "$here/kvm_exit.c" "$here/move.c"
gcc -O2 -Wall -shared -fPIC -o "$work/count.so" "$floor/count.c" -ldl
gcc -O2 -Wall -o "$work/revoke" "$floor/revoke.c"
gcc -O2 -Wall -o "$work/cputime" "$floor/cputime.c"
"$root/heapguard/build.sh" "$work/guard.so"

# run.sh's workload definitions (names and cmds, which use $work and $here).
defs=$(sed -n '/^names=(/,/^)$/p' "$here/run.sh")
[[ $defs == *'declare -A cmds'* ]] || { echo "cannot read the workloads from run.sh" >&2; exit 1; }
eval "$defs"
[[ ${#only[@]} -eq 0 ]] || names=("${only[@]}")

echo "measuring revocation primitives" >&2
"$work/primitives" >"$work/primitives.md"
"$work/revoke" >"$work/revoke.md"
t_min=$(python3 "$floor/summary.py" tmin "$work")
echo "primitives and revoke done (${SECONDS}s): t_min = $t_min ns" >&2

# measure NAME KIND: one run as run.sh makes it (under timeout, and cputime in the place of
# /usr/bin/time, for CPU time in microseconds), KIND plain (glibc), count
# (count.so), delay (count.so, t_min per free), strict or deferred (the
# guard); appends "wall_s cpu_s" to $work/times-KIND-NAME.
measure() {
	local name=$1 kind=$2 preload=$work/count.so delay= start end attempt
	[[ $kind == plain ]] && preload=
	[[ $kind == delay ]] && delay=$t_min
	[[ $kind == strict || $kind == deferred ]] && preload=$work/guard.so
	# Other jobs share this machine (a redis on the same port, say): a run
	# that fails or hangs is killed after 120 s and made again, twice at most.
	for attempt in 1 2 3; do
		rm -f "$work/counts-new"
		start=$(date +%s.%N)
		if FREE_DELAY_NS=$delay COUNT_OUT=$work/counts-new LD_PRELOAD_BENCH=$preload SYSCELL_HEAPGUARD=$kind \
			timeout -k 5 120 "$work/cputime" "$work/time" \
			bash -c "export LD_PRELOAD=\$LD_PRELOAD_BENCH; ${cmds[$name]}" >/dev/null 2>"$work/stderr"; then
			end=$(date +%s.%N)
			echo "$(echo "$end - $start" | bc) $(cat "$work/time")" >>"$work/times-$kind-$name"
			[[ $preload != "$work/count.so" ]] || cat "$work/counts-new" >>"$work/counts-$kind-$name"
			return
		fi
		echo "$name ($kind) failed, attempt $attempt:" >&2
		cat "$work/stderr" >&2
	done
	exit 1
}

for name in "${names[@]}"; do
	for ((i = 0; i < runs; i++)); do
		measure "$name" plain
		measure "$name" delay
		measure "$name" strict
		measure "$name" deferred
	done
	measure "$name" count
	echo "measured $name (${SECONDS}s)" >&2
done

python3 "$floor/summary.py" table "$work" "$(nproc)" "${names[@]}" >"$work/table.md"
cat "$work/table.md"
[[ ${#only[@]} -eq 0 ]] || exit 0

{
	echo "# heapguard: the floor of the guarantee on this machine"
	echo
	echo "Command: \`$command\` (RUNS=$runs), run $started on $(uname -r),"
	echo "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average"
	echo "before the run $load_before (other jobs share the machine). Generated by the"
	echo "script; see its header for the method."
	echo
	echo "## The floor per workload"
	echo
	cat "$work/table.md"
	echo
	cat <<'NOTES'
Columns: T and CPU s are glibc medians; images counts each program image
that reported (an `execve` reports the image it replaces); allocations,
F and bytes are from one count.so run; A is the time measured inside
glibc's allocator (an overestimate); the floors are defined in floor.sh's
header; strict and deferred are the guard's modes, medians of the same
rounds. Runs this short (binary-trees and larson take 15–35 ms under
glibc, mostly process start-up) move by ±30 % between runs.

What the floor leaves out, each making it lower than any real design: the
allocation side (every live object needs a virtual page of its own, mapped
when it is made: the "floor + mapping" columns add the cheapest mapping,
t_map, per allocation), the TLB shootdown when another thread of the
process runs (MADV_GUARD_INSTALL costs ~2× then: larson), the cache and TLB
damage of a kernel entry and of one object a page, and reallocs that move
an object (not counted in F). Excluded as
not a per-free revocation: MADV_GUARD_INSTALL on a never-touched page (a
freed object's page was used), one call over many contiguous pages, and
process_madvise over many ranges (both batch several frees, but each free
must have revoked its object when it returns). Protection keys (the CPU has
PKU) revoke a whole key, and there are 15 of them, not one per object.

NOTES
	echo
	echo "## t_min: the cheapest revocation of one populated page"
	echo
	echo "\`bench/heapguard/floor/revoke\` (20,000 pages a round, 7 rounds; per call):"
	echo
	cat "$work/revoke.md"
	echo
	echo "\`bench/heapguard/primitives\` (built as run.sh builds it; ns per page, median and"
	echo "min–max of 5 rounds):"
	echo
	cat "$work/primitives.md"
	echo
	echo "## Frees counted (count.so), per process"
	echo
	echo '```'
	for name in "${names[@]}"; do
		echo "== $name"
		cat "$work/counts-count-$name"
	done
	echo '```'
	echo
	echo "## Raw times (wall s, CPU s; delay: t_min = $t_min ns per free)"
	echo
	echo '```'
	for name in "${names[@]}"; do
		echo "$name plain: $(tr '\n' ';' <"$work/times-plain-$name") count: $(tr '\n' ';' <"$work/times-count-$name") delay: $(tr '\n' ';' <"$work/times-delay-$name") strict: $(tr '\n' ';' <"$work/times-strict-$name") deferred: $(tr '\n' ';' <"$work/times-deferred-$name")"
	done
	echo '```'
} >"$floor/floor.md"
echo "wrote $floor/floor.md" >&2
