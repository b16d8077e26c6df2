#!/usr/bin/env bash
# The redis workload for run.sh: a redis-server (inheriting LD_PRELOAD, so
# the server is what is measured) on a private port, loaded by
# redis-benchmark (run without the preloaded allocator), then shut down.
# Its time is the whole session's; with REDIS_CSV set, redis-benchmark's
# CSV (requests per second of each test) is written to that file.
set -euo pipefail
port=$((20000 + $$ % 20000))
redis-server --port "$port" --save '' --appendonly no --daemonize no --loglevel warning &
server=$!
bench_env=(env -u LD_PRELOAD -u SYSCELL_HEAPGUARD)
for _ in $(seq 100); do
	"${bench_env[@]}" redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.05
done
"${bench_env[@]}" redis-benchmark -p "$port" -q --csv -n 20000 -c 20 -t set,get,lpush,lpop,sadd,hset,mset >"${REDIS_CSV:-/dev/null}"
"${bench_env[@]}" redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" || true
