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
#   server_quick    sets a short load (throughput.sh --quick, and its audit
#                   round)
#
# and optionally RUN_AS (a user that the server, and syscell with it, must
# run as: syscell record then keeps CAP_BPF and CAP_PERFMON). A "server"
# may also be a command that runs its own load and exits by itself (fio):
# it then defines neither server_ready nor server_load, its standard output
# is the load's, and a run waits for it to exit (RUN_TIMEOUT) instead of
# stopping it with SIGTERM.
#
# A server script ends with server_main "$@" when it is run, so that
#
#   bench/servers/SERVER.sh record OUT.toml [syscell record flags]
#
# records one run (record_run), while throughput.sh sources the same script
# and starts the server itself with serve.
#
# Environment: SYSCELL (default: the repository's bin/syscell, built when
# missing), STACK_BYTES (passed as --stack-bytes when set), ALLOW_LOSSY=1
# (passes --allow-lossy; the loss is in the log), PHASES=0 (records one
# phase; by default `record --phases`, with the server script's
# SERVING_FROM calls where it sets them), READY_TIMEOUT,
# STOP_TIMEOUT and RUN_TIMEOUT in seconds.

set -euo pipefail

SERVERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SERVERS_DIR/../.." && pwd)
SYSCELL=${SYSCELL:-$REPO/bin/syscell}
READY_TIMEOUT=${READY_TIMEOUT:-30}
STOP_TIMEOUT=${STOP_TIMEOUT:-60}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
RUN_AS=${RUN_AS:-}
WORK=
LAUNCHER=

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

# free_port prints a TCP port no socket uses, below the kernel's range of
# ephemeral ports: the loads' client sockets take those, and one of them
# left in TIME-WAIT (without SO_REUSEADDR) makes a server's bind to the
# same port fail with EADDRINUSE.
free_port() {
	local p low
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	((low > 20000)) || low=60000
	for p in $(shuf -i "20000-$((low - 1))" -n 100); do
		if [[ -z $(ss -Htan "sport = :$p") ]]; then
			echo "$p"
			return 0
		fi
	done
	die "no free port"
}

# self_loaded succeeds for a server that is its own load (no server_load).
self_loaded() { ! declare -F server_load >/dev/null; }

# stop_launcher ends what is left of a run: the launcher's process group,
# the server's processes with it. Only after a failure: a run that went
# well has already waited for them.
stop_launcher() {
	if [[ -n $LAUNCHER ]] && kill -0 "$LAUNCHER" 2>/dev/null; then
		kill -TERM -- "-$LAUNCHER" 2>/dev/null || true
		sleep 2
		kill -KILL -- "-$LAUNCHER" 2>/dev/null || true
	fi
	LAUNCHER=
}

# shellcheck disable=SC2317 # called by the trap
lib_cleanup() {
	stop_launcher
	[[ -n $WORK ]] && rm -rf "$WORK"
	return 0
}
trap lib_cleanup EXIT

# new_work gives the next run a fresh $WORK (the previous one removed) and
# a free $PORT.
new_work() {
	[[ -n $WORK ]] && rm -rf "$WORK"
	WORK=$(mktemp -d /tmp/syscell-servers.XXXXXX)
	chmod 755 "$WORK"
	PORT=$(free_port)
}

# run_as_prefix [CAPS]: the command prefix that runs the rest as RUN_AS
# (nothing without RUN_AS), keeping the capabilities CAPS (e.g.
# +bpf,+perfmon) as ambient ones, which the server then inherits.
run_as_prefix() {
	RUN_AS_PREFIX=()
	[[ -n $RUN_AS ]] || return 0
	RUN_AS_PREFIX=(setpriv --reuid "$RUN_AS" --regid "$RUN_AS" --init-groups)
	if [[ -n ${1:-} ]]; then
		RUN_AS_PREFIX+=(--inh-caps "$1" --ambient-caps "$1")
	fi
	RUN_AS_PREFIX+=(--)
}

# serve BASE CMD...: one run of CMD (the server's command, or a launcher
# such as syscell ending with it), as prepared by server_prepare in $WORK,
# in a process group of its own. CMD's standard output goes to
# BASE.server.log (to BASE.load.log for a server that is its own load),
# its standard error is appended to BASE.log, the load's output is
# BASE.load.log. Waits until the server is ready, runs the load, sends
# SIGTERM to CMD (which syscell passes on to the server) and waits for it
# to exit; a server that is its own load is waited for. Sets SERVE_STATUS
# (CMD's exit status), SERVE_SECONDS (from CMD's start to its exit) and
# SERVE_LOAD_SECONDS (the load's time, or CMD's for a server that is its
# own load). Dies if CMD exits before the server is ready, the server is
# not ready in time, the load fails or CMD does not exit in time; a
# non-zero exit status is the caller's to judge.
serve() {
	local base=$1
	shift
	local stdout=$base.server.log deadline t0 t1 t2
	self_loaded && stdout=$base.load.log
	t0=$EPOCHREALTIME
	# setsid: a process group of its own, to end it all should the run fail.
	setsid "$@" >"$stdout" 2>>"$base.log" </dev/null &
	LAUNCHER=$!

	if self_loaded; then
		log "running on its own (load included)"
		t1=$t0
		deadline=$((SECONDS + RUN_TIMEOUT))
		while kill -0 "$LAUNCHER" 2>/dev/null; do
			((SECONDS < deadline)) || die "the command did not exit within ${RUN_TIMEOUT}s"
			sleep 0.2
		done
		t2=$EPOCHREALTIME
	else
		deadline=$((SECONDS + READY_TIMEOUT))
		if declare -F server_ready >/dev/null; then
			until server_ready; do
				kill -0 "$LAUNCHER" 2>/dev/null || { cat "$base.log" "$stdout" >&2; die "the server or its launcher exited before it was ready"; }
				((SECONDS < deadline)) || die "the server was not ready after ${READY_TIMEOUT}s"
				sleep 0.2
			done
		fi
		t1=$EPOCHREALTIME
		log "ready on 127.0.0.1:$PORT after $(seconds "$t0" "$t1")s; load"
		server_load >"$base.load.log" 2>&1 || die "the load failed (see $base.load.log)"
		t2=$EPOCHREALTIME
		kill -0 "$LAUNCHER" 2>/dev/null || { cat "$base.log" >&2; die "the server exited during the load"; }
		log "SIGTERM to the server (through its launcher, if any)"
		kill -TERM "$LAUNCHER"
		deadline=$((SECONDS + STOP_TIMEOUT))
		while kill -0 "$LAUNCHER" 2>/dev/null; do
			((SECONDS < deadline)) || die "the server did not exit ${STOP_TIMEOUT}s after SIGTERM"
			sleep 0.2
		done
	fi
	SERVE_STATUS=0
	wait "$LAUNCHER" || SERVE_STATUS=$?
	LAUNCHER=
	SERVE_SECONDS=$(seconds "$t0" "$EPOCHREALTIME")
	# shellcheck disable=SC2034 # read by throughput.sh
	SERVE_LOAD_SECONDS=$(seconds "$t1" "$t2")
}

# seconds FROM TO: the time between two $EPOCHREALTIME values, in seconds
# with three decimals.
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# record_run OUT [RECORD-FLAGS...]: one run of the server under
# `syscell record RECORD-FLAGS -o OUT`, its summary in OUT.log, the
# server's own output in OUT.server.log, the load's in OUT.load.log. Fails
# if the recorder fails (a lossy recording among others) or the server
# exits with an error.
record_run() {
	[[ $# -ge 1 ]] || die "usage: $0 record OUT.toml [syscell record flags, e.g. --merge FILE]"
	local out=$1
	shift
	local flags=("$@")
	[[ -n ${STACK_BYTES:-} ]] && flags+=(--stack-bytes "$STACK_BYTES")
	[[ ${ALLOW_LOSSY:-0} == 1 ]] && flags+=(--allow-lossy)
	if [[ ${PHASES:-1} == 1 ]]; then
		flags+=(--phases)
		[[ -n ${SERVING_FROM:-} ]] && flags+=(--serving-from "$SERVING_FROM")
	fi
	[[ $(id -u) -eq 0 ]] || die "needs root (apt-get, and syscell record's eBPF program)"
	ensure_packages "${PACKAGES[@]}"
	ensure_syscell
	mkdir -p "$(dirname "$out")"
	out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
	rm -f "$out" "$out".*

	new_work
	server_prepare

	# syscell and the server run as RUN_AS when the server refuses root:
	# syscell keeps CAP_BPF and CAP_PERFMON as ambient capabilities, which
	# the server inherits (and does not use). The files syscell reads and
	# writes are then in $WORK/rec, which RUN_AS owns.
	local target=$out i
	run_as_prefix +bpf,+perfmon
	if [[ -n $RUN_AS ]]; then
		mkdir -p "$WORK/rec"
		for i in "${!flags[@]}"; do
			if [[ ${flags[$i]} == --merge && $((i + 1)) -lt ${#flags[@]} ]]; then
				cp "${flags[$((i + 1))]}" "$WORK/rec/merge-$i.toml"
				flags[i + 1]=$WORK/rec/merge-$i.toml
			fi
		done
		chown -R "$RUN_AS:" "$WORK/rec"
		target=$WORK/rec/out.toml
	fi

	local cmd=("${RUN_AS_PREFIX[@]}" "$SYSCELL" record "${flags[@]}" -o "$target" -- "${SERVER_CMD[@]}")
	local where="127.0.0.1:$PORT"
	self_loaded && where="its own load"
	{
		echo "# $(date -u +%FT%TZ) $(basename "$0") run, $where"
		echo "#$(printf ' %q' "${cmd[@]}")"
	} >"$out.log"
	serve "$out" "${cmd[@]}"
	echo "# recorder exit status $SERVE_STATUS after $(printf '%.0f' "$SERVE_SECONDS")s" >>"$out.log"
	if [[ $target != "$out" && -f $target ]]; then
		cp "$target" "$out"
	fi
	if [[ $SERVE_STATUS -ne 0 ]]; then
		cat "$out.log" >&2
		die "syscell record exited with status $SERVE_STATUS (log: $out.log)"
	fi
	log "recorded in ${SERVE_SECONDS}s: $out"
}

# server_main ARGS: what a server script does when it is run rather than
# sourced.
server_main() {
	case ${1:-} in
	record)
		shift
		record_run "$@"
		;;
	*) die "usage: $0 record OUT.toml [syscell record flags, e.g. --merge FILE]" ;;
	esac
}
