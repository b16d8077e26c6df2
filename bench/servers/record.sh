#!/usr/bin/env bash
# Records servers from Debian's packages under load, three runs each,
# merged, and scores the merged policies with addrfilter's privilege metric:
#
#   bench/servers/record.sh redis|nginx|postgres|fio|all OUTDIR
#
# For each SERVER, OUTDIR gets
#
#   SERVER.toml                   the policy of the three runs merged
#   SERVER.RANKING.{txt,json,svg} `syscell score SERVER.toml --ranking RANKING`,
#                                 as a table, as JSON and as a bar chart
#                                 (RANKING: younis2014, addrfilter's table;
#                                 default, syscell's corrected one)
#   runs/SERVER/                  run-1.toml and run-2.toml, recorded alone;
#                                 run-3-merged.toml, run 3 recorded with
#                                 --merge of the first two (record merges
#                                 only into a run: there is no merge without
#                                 a command); each run's recorder summary
#                                 (.log), server output (.server.log) and
#                                 load output (.load.log; fio, its own
#                                 load, has no .server.log); the runs
#                                 compared with `syscell diff`; the
#                                 package versions
#
# and OUTDIR/summary.md is rewritten from every SERVER in OUTDIR
# (summary.py). Each run is `SERVER.sh record RUN.toml` of this directory
# (redis.sh, nginx.sh, postgres.sh, fio.sh), which installs what it needs
# with apt-get. RUNS (default 3) changes the number of runs; STACK_BYTES
# and ALLOW_LOSSY are passed on (lib.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
servers=(redis nginx postgres fio)
RUNS=${RUNS:-3}

usage() {
	echo "usage: $0 redis|nginx|postgres|fio|all OUTDIR" >&2
	exit 2
}
[[ $# -eq 2 ]] || usage
case $1 in
all) selected=("${servers[@]}") ;;
redis | nginx | postgres | fio) selected=("$1") ;;
*) usage ;;
esac
mkdir -p "$2"
out=$(cd "$2" && pwd)
syscell=${SYSCELL:-$repo/bin/syscell}
if [[ ! -x $syscell ]]; then
	make -C "$repo" build >/dev/null
fi
# A private copy: a rebuild of bin/syscell while the servers run must not
# mix two recorders in one set of runs.
pinned=$(mktemp -d /tmp/syscell-servers-bin.XXXXXX)
trap 'rm -rf "$pinned"' EXIT
cp "$syscell" "$pinned/syscell"
chmod 755 "$pinned" "$pinned/syscell"
syscell=$pinned/syscell
export SYSCELL=$syscell

versions() {
	local p
	"$syscell" version | sed 's/^/syscell: /'
	echo "kernel: $(uname -r)"
	for p in "$@" libc6; do
		echo "$p: $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo missing)"
	done
}

record_server() {
	local server=$1 runs=$out/runs/$1 i flags=() start=$SECONDS
	rm -rf "$runs"
	mkdir -p "$runs"
	for ((i = 1; i <= RUNS; i++)); do
		if ((i < RUNS)); then
			"$here/$server.sh" record "$runs/run-$i.toml"
			flags+=(--merge "$runs/run-$i.toml")
		else
			"$here/$server.sh" record "$runs/run-$i-merged.toml" "${flags[@]}"
		fi
	done
	echo "$server: $RUNS runs in $((SECONDS - start))s" >&2
	cp "$runs/run-$RUNS-merged.toml" "$out/$server.toml"

	case $server in
	redis) versions redis-server redis-tools ;;
	nginx) versions nginx nginx-common wrk ;;
	postgres) versions postgresql postgresql-15 postgresql-client-15 ;;
	fio) versions fio ;;
	esac >"$runs/versions.txt"

	# How much a run adds to the ones before it. Relative paths, as the
	# outputs name their inputs.
	(
		cd "$runs"
		for ((i = 2; i < RUNS; i++)); do
			"$syscell" diff "run-$((i - 1)).toml" "run-$i.toml" >"diff-run-$((i - 1))-run-$i.txt"
		done
		if ((RUNS > 1)); then
			"$syscell" diff "run-$((RUNS - 1)).toml" "run-$RUNS-merged.toml" >"diff-run-$((RUNS - 1))-merged.txt"
		fi
	)

	local ranking
	for ranking in younis2014 default; do
		(
			cd "$out"
			"$syscell" score "$server.toml" --ranking "$ranking" --svg "$server.$ranking.svg" >"$server.$ranking.txt"
			"$syscell" score "$server.toml" --ranking "$ranking" --json >"$server.$ranking.json"
		)
	done
	cat "$out/$server.younis2014.txt" >&2
}

for server in "${selected[@]}"; do
	record_server "$server"
done
python3 "$here/summary.py" "$out" >"$out/summary.md"
echo "summary: $out/summary.md" >&2
