#!/usr/bin/env bash
# Measures syscell infer on the four servers of docs/servers (issue 14):
#
#   bench/infer/infer.sh [ROUNDS]
#
# 1. The time to infer redis-server and its libraries with an empty cache
#    (every object analysed) and with the cache the first run filled,
#    ROUNDS (default 5; 0 skips it) rounds taking turns, medians.
# 2. For redis, nginx, postgres and fio: the size of the inferred union
#    and of each compartment, and the privilege reduction (syscell score,
#    both rankings) of the inferred policy next to that of the recorded
#    one (docs/servers/SERVER.toml).
# 3. The map of libc's functions: how many a call of which can reach the
#    runtime's pool of functions whose address is taken, and its size.
#
# SYSCELL names the binary (default bin/syscell; make build). The
# inferred policies are left in OUT (default a temporary directory).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
syscell=${SYSCELL:-$repo/bin/syscell}
rounds=${1:-5}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
declare -A cmds=([redis]=/usr/bin/redis-server [nginx]=/usr/sbin/nginx
	[postgres]=/usr/lib/postgresql/15/bin/postgres [fio]=/usr/bin/fio)

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now() { date +%s.%N; }

if [[ $rounds -gt 0 ]]; then
echo "## infer time, redis-server and its libraries ($rounds rounds)"
first=() cached=()
for _ in $(seq "$rounds"); do
	cache=$(mktemp -d)
	t0=$(now)
	"$syscell" infer -q --cache "$cache" -o /dev/null -- "${cmds[redis]}"
	t1=$(now)
	"$syscell" infer -q --cache "$cache" -o /dev/null -- "${cmds[redis]}"
	t2=$(now)
	first+=("$(echo "$t1 - $t0" | bc)") cached+=("$(echo "$t2 - $t1" | bc)")
	rm -rf "$cache"
done
echo "first run: median $(printf '%s\n' "${first[@]}" | median) s (${first[*]})"
echo "cached:    median $(printf '%s\n' "${cached[@]}" | median) s (${cached[*]})"
fi

cache=$(mktemp -d)
for server in redis nginx postgres fio; do
	echo
	echo "## $server"
	"$syscell" infer --cache "$cache" -o "$out/$server.toml" -- "${cmds[$server]}" 2>&1 | grep -v '^syscell: analysing'
	for ranking in default younis2014; do
		for policy in "$repo/docs/servers/$server.toml" "$out/$server.toml"; do
			printf '%-10s %-60s ' "$ranking" "$policy"
			"$syscell" score "$policy" --ranking "$ranking" | awk '/^P_A|^P_seccomp|^reduction/ {printf "%s %s  ", $1, $2} END {print ""}'
		done
	done
	"$syscell" infer -q --cache "$cache" --check "$repo/docs/servers/$server.toml" -- "${cmds[$server]}" 2>&1 | sed -n 1p
done

echo
echo "## libc's map (in redis-server's context)"
"$syscell" infer -q --cache "$cache" --map -- "${cmds[redis]}" >"$out/libc.map"
awk -F'\t' '{n++; k = ($2 == "*") ? -1 : split($2, c, " ")
	if (k < 0) all++; else if ($0 ~ /indirect: taken/) {pool++; pmin = (pmin == "" || k < pmin) ? k : pmin; pmax = (k > pmax) ? k : pmax}
	else {rest++; sum += k; if (k == 0) none++}}
	END {printf "%d functions: %d can make any call; %d reach the pool of taken functions (%d to %d calls); the other %d make %.1f calls on average, %d none\n",
		n, all, pool, pmin, pmax, rest, sum / rest, none}' "$out/libc.map"
rm -rf "$cache"
echo
echo "inferred policies and the map: $out"
