#!/usr/bin/env bash
# One recorded run of Debian's PostgreSQL server (the newest major version
# installed): a fresh cluster (initdb, not recorded) with default settings
# in a private directory, the server in the foreground as the postgres user
# (postgres refuses root), listening on 127.0.0.1 and a private Unix socket
# directory; `pgbench -i` then pgbench with 4 clients on 2 threads for
# PG_SECONDS (default 10; addrfilter ran -c 48 -j 48 -T 30 on 96 cores),
# both over TCP, then SIGTERM (a smart shutdown: no client is left, so it
# exits at once, after a checkpoint).
#
#   bench/servers/postgres.sh record OUT.toml [syscell record flags, e.g. --merge FILE]
#
# or sourced by throughput.sh (lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(postgresql postgresql-contrib)
PG_SECONDS=${PG_SECONDS:-10}
RUN_AS=postgres

pg_bin() {
	local v
	v=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
	echo "/usr/lib/postgresql/$v/bin"
}

server_prepare() {
	local bin
	bin=$(pg_bin)
	mkdir -p "$WORK/data" "$WORK/socket"
	chown postgres: "$WORK/data" "$WORK/socket"
	runuser -u postgres -- "$bin/initdb" -D "$WORK/data" -U postgres --auth=trust \
		-E UTF8 --locale=C.UTF-8 >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
	SERVER_CMD=("$bin/postgres" -D "$WORK/data" -k "$WORK/socket" -p "$PORT"
		-c listen_addresses=127.0.0.1)
}

server_ready() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres; }

server_load() {
	local bin
	bin=$(pg_bin)
	timeout 120 "$bin/pgbench" -h 127.0.0.1 -p "$PORT" -U postgres -i postgres
	timeout $((PG_SECONDS + 60)) "$bin/pgbench" -h 127.0.0.1 -p "$PORT" -U postgres \
		-c 4 -j 2 -T "$PG_SECONDS" postgres
}

server_quick() { PG_SECONDS=2; }

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	server_main "$@"
fi
