# shellcheck shell=bash
# Shared by the server scripts of bench/servers (sourced, not run). A server
# script defines
#
#   PACKAGES        the Debian packages it needs (installed when missing)
#   server_prepare  sets up a fresh configuration or data directory in $WORK
#                   for a server listening on 127.0.0.1:$PORT, and sets
#                   SERVER_CMD (the server, in the foreground)
#   server_ready    succeeds once the server answers
#   server_load     runs the bounded load against it
#
# and optionally RECORD_AS (a user that syscell and the server run as,
# syscell keeping CAP_BPF and CAP_PERFMON), then calls record_run "$@": one
# recorded run, from the server's start to its exit on SIGTERM.
#
# Environment: SYSCELL (default: the repository's bin/syscell, built when
# missing), STACK_BYTES (passed as --stack-bytes when set), ALLOW_LOSSY=1
# (passes --allow-lossy; the loss is in the log), READY_TIMEOUT and
# STOP_TIMEOUT in seconds.

set -euo pipefail

SERVERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SERVERS_DIR/../.." && pwd)
SYSCELL=${SYSCELL:-$REPO/bin/syscell}
READY_TIMEOUT=${READY_TIMEOUT:-30}
STOP_TIMEOUT=${STOP_TIMEOUT:-60}
RECORD_AS=${RECORD_AS:-}

log() { echo "$(basename "$0"): $*" >&2; }
die() {
	log "$*"
	exit 1
}

# ensure_packages installs those of its arguments that are missing.
ensure_packages() {
	local missing=() p
	for p in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# policy-rc.d or no init: the packages' own services are not wanted.
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_syscell() {
	if [[ ! -x $SYSCELL ]]; then
		log "building $SYSCELL"
		make -C "$REPO" build >/dev/null
	fi
}

# free_port prints a TCP port nothing listens on.
free_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 100); do
		if [[ -z $(ss -Htln "sport = :$p") ]]; then
			echo "$p"
			return 0
		fi
	done
	die "no free port"
}

# record_run OUT [RECORD-FLAGS...]: one run of the server under
# `syscell record RECORD-FLAGS -o OUT`, its summary in OUT.log, the
# server's own output in OUT.server.log, the load's in OUT.load.log. Fails
# if the recorder fails (a lossy recording among others) or the server
# exits with an error.
record_run() {
	[[ $# -ge 1 ]] || die "usage: $0 OUT.toml [syscell record flags, e.g. --merge FILE]"
	local out=$1
	shift
	local flags=("$@")
	[[ -n ${STACK_BYTES:-} ]] && flags+=(--stack-bytes "$STACK_BYTES")
	[[ ${ALLOW_LOSSY:-0} == 1 ]] && flags+=(--allow-lossy)
	[[ $(id -u) -eq 0 ]] || die "needs root (apt-get, and syscell record's eBPF program)"
	ensure_packages "${PACKAGES[@]}"
	ensure_syscell
	mkdir -p "$(dirname "$out")"
	out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	rm -f "$out" "$out".*

	WORK=$(mktemp -d /tmp/syscell-servers.XXXXXX)
	chmod 755 "$WORK"
	PORT=$(free_port)
	RECORDER=
	# shellcheck disable=SC2317 # called by the trap
	cleanup() {
		# Only after a failure: the recorder's process group, the server's
		# processes with it.
		if [[ -n ${RECORDER:-} ]] && kill -0 "$RECORDER" 2>/dev/null; then
			kill -TERM -- "-$RECORDER" 2>/dev/null || true
			sleep 2
			kill -KILL -- "-$RECORDER" 2>/dev/null || true
		fi
		rm -rf "$WORK"
	}
	trap cleanup EXIT

	server_prepare

	# syscell and the server run as RECORD_AS when the server refuses root:
	# syscell keeps CAP_BPF and CAP_PERFMON as ambient capabilities, which
	# the server inherits (and does not use). The files syscell reads and
	# writes are then in $WORK/rec, which RECORD_AS owns.
	local prefix=() target=$out i
	if [[ -n $RECORD_AS ]]; then
		# shellcheck disable=SC2054 # setpriv's capability lists
		prefix=(setpriv --reuid "$RECORD_AS" --regid "$RECORD_AS" --init-groups
			--inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon --)
		mkdir -p "$WORK/rec"
		for i in "${!flags[@]}"; do
			if [[ ${flags[$i]} == --merge && $((i + 1)) -lt ${#flags[@]} ]]; then
				cp "${flags[$((i + 1))]}" "$WORK/rec/merge-$i.toml"
				flags[i + 1]=$WORK/rec/merge-$i.toml
			fi
		done
		chown -R "$RECORD_AS:" "$WORK/rec"
		target=$WORK/rec/out.toml
	fi

	local start=$SECONDS
	{
		echo "# $(date -u +%FT%TZ) $(basename "$0") run, 127.0.0.1:$PORT"
		echo "#$(printf ' %q' "${prefix[@]}" "$SYSCELL" record "${flags[@]}" -o "$target" -- "${SERVER_CMD[@]}")"
	} >"$out.log"
	# setsid: a process group of its own, to end it all should the run fail.
	setsid "${prefix[@]}" "$SYSCELL" record "${flags[@]}" -o "$target" -- "${SERVER_CMD[@]}" \
		>"$out.server.log" 2>>"$out.log" </dev/null &
	RECORDER=$!

	local deadline=$((SECONDS + READY_TIMEOUT))
	until server_ready; do
		kill -0 "$RECORDER" 2>/dev/null || { cat "$out.log" "$out.server.log" >&2; die "the server or recorder exited before it was ready"; }
		((SECONDS < deadline)) || die "the server was not ready after ${READY_TIMEOUT}s"
		sleep 0.2
	done
	log "ready on 127.0.0.1:$PORT after $((SECONDS - start))s; load"
	server_load >"$out.load.log" 2>&1 || die "the load failed (see $out.load.log)"

	log "SIGTERM to the recorder (passed on to the server)"
	kill -TERM "$RECORDER"
	local status=0
	deadline=$((SECONDS + STOP_TIMEOUT))
	while kill -0 "$RECORDER" 2>/dev/null; do
		((SECONDS < deadline)) || die "the server did not exit ${STOP_TIMEOUT}s after SIGTERM"
		sleep 0.2
	done
	wait "$RECORDER" || status=$?
	RECORDER=
	echo "# recorder exit status $status after $((SECONDS - start))s" >>"$out.log"
	if [[ $target != "$out" && -f $target ]]; then
		cp "$target" "$out"
	fi
	if [[ $status -ne 0 ]]; then
		cat "$out.log" >&2
		die "syscell record exited with status $status (log: $out.log)"
	fi
	log "recorded in $((SECONDS - start))s: $out"
}
