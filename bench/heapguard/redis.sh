#!/usr/bin/env bash
# The redis workload for run.sh: a redis-server (inheriting LD_PRELOAD, so
# the server is what is measured) on a private port, loaded by
# redis-benchmark (run without the guard), then shut down. Its time is
# the whole session's.
set -euo pipefail
port=$((20000 + $$ % 20000))
redis-server --port "$port" --save '' --appendonly no --daemonize no --loglevel warning &
server=$!
bench_env=(env -u LD_PRELOAD)
for _ in $(seq 100); do
	"${bench_env[@]}" redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.05
done
"${bench_env[@]}" redis-benchmark -p "$port" -q -n 20000 -c 20 -t set,get,lpush,lpop,sadd,hset,mset >/dev/null
"${bench_env[@]}" redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" || true
