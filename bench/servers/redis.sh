#!/usr/bin/env bash
# One recorded run of Debian's redis-server: default settings except no
# persistence (--save '' --appendonly no) and a private port on 127.0.0.1,
# loaded by redis-benchmark's default suite with 48 clients (addrfilter's
# -c 48) and REDIS_REQUESTS requests per test (default 20000; the default
# 100000 would take several times longer on two cores), then stopped with
# SIGTERM (a clean shutdown without saving).
#
#   bench/servers/redis.sh record OUT.toml [syscell record flags, e.g. --merge FILE]
#
# or sourced by throughput.sh (lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(redis-server redis-tools)
REDIS_REQUESTS=${REDIS_REQUESTS:-20000}

server_prepare() {
	SERVER_CMD=(redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no
		--dir "$WORK" --daemonize no)
}

server_ready() { [[ $(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) == PONG ]]; }

server_load() {
	timeout 120 redis-benchmark -h 127.0.0.1 -p "$PORT" -c 48 -n "$REDIS_REQUESTS" --csv
}

server_quick() { REDIS_REQUESTS=2000; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	server_main "$@"
fi
