#!/usr/bin/env bash
# The redis workload for run.sh: a redis-server (inheriting LD_PRELOAD, so
# the server is what is measured) on a private port, loaded by
# redis-benchmark (run without the preloaded allocator), then shut down.
# Its time is the whole session's; with REDIS_CSV set, redis-benchmark's
# CSV (requests per second of each test) is written to that file. A server
# that does not answer within 5 s (it crashed, or another job holds the
# port) fails the run rather than leaving redis-benchmark retrying.
set -euo pipefail
port=$((20000 + $$ % 20000))
redis-server --port "$port" --save '' --appendonly no --daemonize no --loglevel warning &
server=$!
bench_env=(env -u LD_PRELOAD -u SYSCELL_HEAPGUARD)
up=
for _ in $(seq 100); do
	"${bench_env[@]}" redis-cli -p "$port" ping >/dev/null 2>&1 && up=1 && break
	sleep 0.05
done
if [[ -z $up ]]; then
	echo "redis-server did not answer on port $port" >&2
	kill "$server" 2>/dev/null || true
	exit 1
fi
"${bench_env[@]}" timeout 120 redis-benchmark -p "$port" -q --csv -n 20000 -c 20 -t set,get,lpush,lpop,sadd,hset,mset >"${REDIS_CSV:-/dev/null}"
"${bench_env[@]}" redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" || true
