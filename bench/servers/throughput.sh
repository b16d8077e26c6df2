#!/usr/bin/env bash
# Throughput of the servers of bench/servers under their committed policies
# (docs/servers/SERVER.toml), in three modes, in one invocation:
#
#   bench/servers/throughput.sh [--quick] redis|nginx|postgres|fio|all OUTDIR
#
#   none   the server plainly
#   whole  syscell run --whole-process --policy SERVER.toml: the policy's
#          union as one whole-process filter
#   cell   syscell run --report R.json --policy SERVER.toml: per-library
#          compartments (audit library, compartment filter, supervisor)
#
# Each server's load (server_load of SERVER.sh, or fio's own job) runs
# ROUNDS times (default 3) in each mode, interleaved round by round (none,
# whole, cell, none, ...), so that a drift of the shared machine hits every
# mode alike; each run starts a fresh server in a fresh directory. Per mode
# the median over the rounds, and its ratio to none's median of the same
# invocation. Throughput is
#
#   redis     redis-benchmark's default suite: all its requests over the
#             suite's total time (sum over tests of requests/rps), i.e. the
#             harmonic mean of the tests' rps
#   nginx     wrk's Requests/sec
#   postgres  pgbench's tps without initial connection time
#   fio       read + write IOPS of fio's group report (JSON)
#
# and for cell runs the supervisor's rate: calls it decided (the report's
# "supervised" counts) per second of the run (server start to exit) and
# per 1,000 operations (requests, transactions, I/Os) of the load.
#
# Then, where `syscell run --mode audit` takes policies with compartments
# (probed at start), one more run per server in audit mode with the short
# load: every call the policy would deny, in the kernel or in the
# supervisor, is in its report's "denied", which must be empty. Where it
# does not, a warning says that calls the kernel denies were not checked
# (a cell run's report lists only the supervisor's denials).
#
# --quick: one round, short loads (server_quick: redis 2,000 requests per
# test, wrk, pgbench and fio 2 s).
#
# Fails (status 1, saying which run and why) if a server or its load
# fails, a server exits with a non-zero status, a load's output has no
# throughput, a cell run's report has a denied call (allowed: false, or
# "denied"), or the audit run's "denied" is not empty; the other servers
# are still run. The table goes to stdout and, with the command, date,
# versions and nproc, to OUTDIR/throughput.md; every run's figures to
# OUTDIR/throughput.json; every run's logs and reports to
# OUTDIR/runs/SERVER/ (rN-MODE.{log,server.log,load.log,report.json},
# lib.sh's serve). POLICIES (default: the repository's docs/servers) is
# where SERVER.toml is read from. Needs root: apt-get, and nginx's and postgres's users;
# postgres and syscell with it run as the postgres user (run needs no
# privilege). SYSCELL as for lib.sh; the binary and its audit library are
# copied first, so that a rebuild during the runs changes nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
servers=(redis nginx postgres fio)
ROUNDS=${ROUNDS:-3}
modes=(none whole cell)
invocation="$0$(printf ' %q' "$@")"

usage() {
	echo "usage: $0 [--quick] redis|nginx|postgres|fio|all OUTDIR" >&2
	exit 2
}
quick=0
if [[ ${1:-} == --quick ]]; then
	quick=1
	ROUNDS=1
	shift
fi
[[ $# -eq 2 ]] || usage
case $1 in
all) selected=("${servers[@]}") ;;
redis | nginx | postgres | fio) selected=("$1") ;;
*) usage ;;
esac
[[ $(id -u) -eq 0 ]] || {
	echo "$0: needs root (apt-get; nginx and postgres switch users)" >&2
	exit 1
}
mkdir -p "$2"
out=$(cd "$2" && pwd)

# A private copy of syscell, its audit library and the policies, which
# postgres's user can read.
syscell=${SYSCELL:-$repo/bin/syscell}
if [[ ! -x $syscell ]]; then
	make -C "$repo" build >/dev/null
fi
policies=${POLICIES:-$repo/docs/servers}
pinned=$(mktemp -d /tmp/syscell-throughput.XXXXXX)
trap 'rm -rf "$pinned"' EXIT
cp "$syscell" "$(dirname "$syscell")/libsyscell-audit.so" "$pinned/"
for server in "${selected[@]}"; do
	cp "$policies/$server.toml" "$pinned/"
done
chmod -R a+rX "$pinned"
syscell_from=$syscell
syscell=$pinned/syscell
export SYSCELL=$syscell

# The parser of loads' outputs and reports, and the summary: one Python
# program, standard library only.
cat >"$pinned/throughput.py" <<'PY'
import json
import os
import re
import statistics
import sys

UNIT = {"redis": "requests/s", "nginx": "requests/s", "postgres": "tps", "fio": "IOPS"}
OPS = {"redis": "requests", "nginx": "requests", "postgres": "transactions", "fio": "I/Os"}


def fail(msg):
    sys.exit(msg)


def load_figures(server, text):
    """Throughput and operations of a load's output; exits on a failed load."""
    if server == "redis":
        rps = []
        for line in text.splitlines():
            m = re.match(r'"([^"]*)","([\d.]+)"', line)
            if m and m.group(1) != "test":
                rps.append(float(m.group(2)))
        if not rps or min(rps) <= 0:
            fail("no test results in redis-benchmark's output")
        n = int(os.environ["REDIS_REQUESTS"])
        return len(rps) / sum(1 / r for r in rps), n * len(rps), {"tests": len(rps)}
    if server == "nginx":
        rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
        total = re.search(r"(\d+) requests in ([\d.]+)(\w+)", text)
        if not rate or not total:
            fail("no Requests/sec in wrk's output")
        extra = {}
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        if errors:
            extra = dict(zip(("connect", "read", "write", "timeout"), map(int, errors.groups())))
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        if bad:
            extra["non_2xx_3xx"] = int(bad.group(1))
        if any(extra.get(k, 0) for k in ("connect", "read", "write", "non_2xx_3xx")):
            fail(f"wrk saw errors: {extra}")
        return float(rate.group(1)), int(total.group(1)), extra
    if server == "postgres":
        tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", text)
        done = re.search(r"number of transactions actually processed: (\d+)", text)
        if not tps or not done:
            fail("no tps in pgbench's output")
        failed = re.search(r"number of failed transactions: (\d+)", text)
        if failed and int(failed.group(1)):
            fail(f"pgbench: {failed.group(1)} failed transactions")
        return float(tps.group(1)), int(done.group(1)), {}
    if server == "fio":
        start = re.search(r"^\{", text, re.M)
        if not start:
            fail("no JSON in fio's output")
        job = json.loads(text[start.start():])["jobs"][0]
        if job["error"]:
            fail(f"fio's job failed: error {job['error']}")
        ios = job["read"]["total_ios"] + job["write"]["total_ios"]
        return job["read"]["iops"] + job["write"]["iops"], ios, {}
    fail(f"unknown server {server}")


def parse(server, mode, seconds, load_log, report):
    """One run's figures as a JSON line; exits saying why on a failed run."""
    rate, ops, extra = load_figures(server, open(load_log).read())
    run = {"mode": mode, "seconds": float(seconds), "throughput": rate, "ops": ops}
    run.update(extra)
    if report:
        r = json.load(open(report))
        sup = r.get("supervised", [])
        run["supervised"] = sum(s["count"] for s in sup)
        stopped = [s for s in sup if not s["allowed"]]
        denied = r.get("denied")
        if "unsealed" in r:
            run["unsealed"] = r["unsealed"]
        if r.get("exit_code", 0) != 0 or r.get("signal"):
            fail(f"the report says the server exited with {r.get('exit_code')} {r.get('signal', '')}")
        if mode == "audit":
            if denied is None:
                fail(f"{report} has no \"denied\" array")
            run["denied"] = denied
            if denied:
                fail("calls outside the policy (audit mode):\n" + "\n".join(
                    f"  {d['owner']} {d['syscall']} x{d['count']} (would get {d['action']})" for d in denied))
        elif stopped or denied:
            calls = {(s["owner"], s["syscall"]): s for s in stopped}
            for d in denied or []:
                calls.setdefault((d["owner"], d["syscall"]), d)
            fail("the supervisor denied calls:\n" + "\n".join(
                f"  {c['owner']} {c['syscall']} x{c['count']}" + (f": {c['why']}" if c.get("why") else "")
                for c in calls.values()))
    print(json.dumps(run))


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, digits=0):
    return "-" if x is None else f"{x:,.{digits}f}"


def summarize(outdir, meta_path):
    meta = json.load(open(meta_path))
    results = {"meta": meta, "servers": {}}
    rows, rounds = [], []
    for server in meta["servers"]:
        path = os.path.join(outdir, "runs", server, "runs.jsonl")
        runs = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
        by = {m: [r for r in runs if r["mode"] == m] for m in ("none", "whole", "cell", "audit")}
        med = {m: median([r["throughput"] for r in by[m]]) for m in ("none", "whole", "cell")}
        cell = by["cell"]
        s = {
            "unit": UNIT[server],
            "ops": OPS[server],
            "runs": runs,
            "median": med,
            "ratio": {m: (med[m] / med["none"] if med[m] and med["none"] else None) for m in ("whole", "cell")},
            "supervised_per_run": median([r["supervised"] for r in cell]),
            "supervised_per_second": median([r["supervised"] / r["seconds"] for r in cell]),
            "supervised_per_1000_ops": median([1000 * r["supervised"] / r["ops"] for r in cell]),
            "failure": meta["failures"].get(server),
        }
        if by["audit"]:
            s["audit_denied"] = sum(len(r["denied"]) for r in by["audit"])
        results["servers"][server] = s
        if s["failure"]:
            audit = "run failed"
        elif not meta["audit"]["supported"]:
            audit = "NOT CHECKED"
        elif by["audit"]:
            audit = f"{s['audit_denied']} denied"
        else:
            audit = "-"
        ratio = lambda m: "-" if s["ratio"][m] is None else f"{s['ratio'][m]:.3f}"
        rows.append(
            f"| {server}{' (FAILED)' if s['failure'] else ''} | {s['unit']} | {fmt(med['none'])} | {fmt(med['whole'])} "
            f"| {ratio('whole')} | {fmt(med['cell'])} | {ratio('cell')} | {fmt(s['supervised_per_run'])} "
            f"| {fmt(s['supervised_per_second'], 1)} | {fmt(s['supervised_per_1000_ops'], 3)} | {audit} |")
        for m in ("none", "whole", "cell"):
            vals = [fmt(r["throughput"]) for r in by[m]]
            rounds.append(f"| {server} | {m} | {', '.join(vals) or '-'} | {fmt(med[m])} |")
    table = [
        "| server | throughput | none | whole | whole / none | cell | cell / none "
        "| supervised calls per cell run | per second of run | per 1,000 operations | audit mode |",
        "|" + "---|" * 11,
    ] + rows
    print("\n".join(table))
    json.dump(results, open(os.path.join(outdir, "throughput.json"), "w"), indent=2)
    return table, rounds, results


def markdown(outdir, meta_path):
    table, rounds, results = summarize(outdir, meta_path)
    meta = results["meta"]
    w = []
    w.append("# Server throughput: none, whole-process, per-library")
    w.append("")
    w.append(f"Measured {meta['date']} by `bench/servers/throughput.sh`:")
    w.append("")
    w.append(f"    {meta['command']}")
    w.append("")
    w.append(f"{meta['rounds']} round(s) per mode, interleaved (none, whole, cell, none, ...); medians over "
             "the rounds, and ratios to none's median of the same invocation. Policies: "
             "`docs/servers/SERVER.toml`. Loads: `server_load` of `bench/servers/SERVER.sh` "
             "(`docs/servers/README.md` has the commands), with " + "; ".join(meta["loads"]) + ".")
    w.append("")
    w.append("- *none*: the server plainly; *whole*: `syscell run --whole-process --policy SERVER.toml` "
             "(the union as one filter); *cell*: `syscell run --report R.json --policy SERVER.toml` "
             "(per-library compartments).")
    w.append("- redis: all requests of redis-benchmark's suite over the suite's total time (the harmonic "
             "mean of the tests' rps); nginx: wrk's Requests/sec; postgres: pgbench's tps without initial "
             "connection time; fio: read + write IOPS.")
    w.append("- Supervised calls: the cell runs' report (`supervised` counts: calls made inside libc or "
             "by code no compartment owns, decided by syscell's supervisor), medians per run, per second "
             "of run (server start to exit) and per 1,000 operations of the load (requests, transactions, I/Os).")
    a = meta["audit"]
    if a["supported"]:
        w.append("- Audit mode: one more run per server, `syscell run --mode audit --report R.json` with "
                 "the short load; the column counts the calls its report lists as outside the policy "
                 "(`denied`: in-kernel and supervised).")
    else:
        w.append(f"- **WARNING: in-kernel denials were NOT checked**: `syscell run --mode audit` does not take "
                 f"policies with compartments here ({a['why']}). The cell runs' reports list only the "
                 "supervisor's denials; a call the kernel denied with EPERM is invisible to this benchmark.")
    w.append("")
    w.extend(table)
    w.append("")
    w.append("Per round:")
    w.append("")
    w.append("| server | mode | rounds | median |")
    w.append("|---|---|---|---|")
    w.extend(rounds)
    w.append("")
    if meta["failures"]:
        w.append("**Failures:**")
        w.append("")
        for server, why in meta["failures"].items():
            w.append(f"- {server}:")
            w.append("")
            w.append("  ```")
            w.extend("  " + line for line in why.splitlines())
            w.append("  ```")
        w.append("")
    w.append("Machine and versions:")
    w.append("")
    w.append("```")
    w.append(meta["versions"].rstrip())
    w.append("```")
    open(os.path.join(outdir, "throughput.md"), "w").write("\n".join(w) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "parse":
        parse(*sys.argv[2:7])
    elif sys.argv[1] == "summarize":
        markdown(sys.argv[2], sys.argv[3])
    else:
        fail("usage: throughput.py parse SERVER MODE SECONDS LOAD.log REPORT|'' | summarize OUTDIR META.json")
PY

log() { echo "throughput.sh: $*" >&2; }

# The audit probe: a compartment policy that allows echo nothing but
# exit_group, in audit mode, must report echo's write as outside it.
audit_supported=0
audit_why=
probe_audit() {
	cat >"$pinned/probe.toml" <<'TOML'
version = 1
default = "errno(EPERM)"
arches = ["x86_64"]

[[rule]]
action = "allow"
syscalls = ["exit_group"]

[[compartment]]
name = "echo"
syscalls = ["exit_group"]
TOML
	local status=0
	"$syscell" run --mode audit --report "$pinned/probe.json" --policy "$pinned/probe.toml" \
		-- /bin/echo syscell-probe >/dev/null 2>"$pinned/probe.err" || status=$?
	if [[ $status -ne 0 ]]; then
		audit_why="exit status $status: $(tr '\n' ' ' <"$pinned/probe.err")"
	elif ! python3 -c 'import json, sys
d = json.load(open(sys.argv[1])).get("denied")
sys.exit(0 if d and any(x["syscall"] == "write" for x in d) else 1)' "$pinned/probe.json"; then
		audit_why="its report does not list the denied write of the probe"
	else
		audit_supported=1
	fi
}
probe_audit
warn_audit() {
	if [[ $audit_supported -eq 0 ]]; then
		log "**********************************************************************"
		log "WARNING: in-kernel denials are NOT checked: syscell run --mode audit"
		log "does not take policies with compartments ($audit_why)"
		log "**********************************************************************"
	fi
}
warn_audit

# bench_run SERVER ROUND MODE: one run of the server sourced in this shell,
# its figures appended to runs.jsonl; dies saying why if it failed.
bench_run() {
	local server=$1 round=$2 mode=$3 dir=$out/runs/$1
	local base=$dir/r$round-$mode policy=$pinned/$1.toml report=
	rm -f "$base".*
	RUN_LABEL="$server round $round, $mode"
	RUN_BASE=$base
	new_work
	server_prepare
	run_as_prefix
	if [[ $mode == cell || $mode == audit ]]; then
		# The report where syscell's user can write it.
		report=$base.report.json
		if [[ -n $RUN_AS ]]; then
			mkdir -p "$WORK/rec"
			chown "$RUN_AS:" "$WORK/rec"
			report=$WORK/rec/report.json
		fi
	fi
	local cmd=("${RUN_AS_PREFIX[@]}")
	case $mode in
	none) ;;
	whole) cmd+=("$syscell" run --whole-process --policy "$policy" --) ;;
	cell) cmd+=("$syscell" run --report "$report" --policy "$policy" --) ;;
	audit) cmd+=("$syscell" run --mode audit --report "$report" --policy "$policy" --) ;;
	esac
	cmd+=("${SERVER_CMD[@]}")
	{
		echo "# $(date -u +%FT%TZ) $server round $round, $mode"
		echo "#$(printf ' %q' "${cmd[@]}")"
	} >"$base.log"
	log "$server round $round: $mode"
	serve "$base" "${cmd[@]}"
	echo "# exit status $SERVE_STATUS after ${SERVE_SECONDS}s (load ${SERVE_LOAD_SECONDS}s)" >>"$base.log"
	if [[ -n $report && $report != "$base.report.json" && -f $report ]]; then
		cp "$report" "$base.report.json"
	fi
	[[ $SERVE_STATUS -eq 0 ]] || die "exited with status $SERVE_STATUS (log: $base.log)"
	[[ -z $report || -f $base.report.json ]] || die "no report (log: $base.log)"
	local line
	RUN_BASE=
	line=$(REDIS_REQUESTS=${REDIS_REQUESTS:-} python3 "$pinned/throughput.py" parse "$server" "$mode" \
		"$SERVE_SECONDS" "$base.load.log" "${report:+$base.report.json}" 2>"$base.parse.err") ||
		die "$(cat "$base.parse.err") (logs: $base.*)"
	rm -f "$base.parse.err"
	echo "$line" >>"$dir/runs.jsonl"
}

# bench_server SERVER: every round of SERVER, in a subshell that sources
# SERVER.sh (its functions, and lib.sh's serve), then the audit run. Why
# it failed, if it did, is in runs/SERVER/failure.txt.
bench_server() {
	local server=$1
	(
		# The caller turns errexit off to go on with the next server.
		set -e
		# shellcheck source=/dev/null
		source "$here/$server.sh"
		# Which run failed, and the end of its log (the server's or
		# syscell's last words).
		die() {
			local msg=${RUN_LABEL:+$RUN_LABEL: }$*
			if [[ -n ${RUN_BASE:-} && -f $RUN_BASE.log ]]; then
				msg+=$'\n'"end of $RUN_BASE.log:"$'\n'$(tail -n 5 "$RUN_BASE.log")
			fi
			log "$msg"
			printf '%s\n' "$msg" >"$out/runs/$server/failure.txt"
			exit 1
		}
		ensure_packages "${PACKAGES[@]}"
		[[ $quick -eq 1 ]] && server_quick
		# The load's setting, for the summary.
		case $server in
		redis) echo "redis: REDIS_REQUESTS=$REDIS_REQUESTS (redis-benchmark, requests per test)" ;;
		nginx) echo "nginx: NGINX_SECONDS=$NGINX_SECONDS (wrk)" ;;
		postgres) echo "postgres: PG_SECONDS=$PG_SECONDS (pgbench, after pgbench -i)" ;;
		fio) echo "fio: FIO_SECONDS=$FIO_SECONDS (the job's time after the layout)" ;;
		esac >"$out/runs/$server/load.txt"
		local round mode
		for ((round = 1; round <= ROUNDS; round++)); do
			for mode in "${modes[@]}"; do
				bench_run "$server" "$round" "$mode"
			done
		done
		if [[ $audit_supported -eq 1 ]]; then
			server_quick
			bench_run "$server" 1 audit
		fi
	)
}

versions() {
	echo "date: $started"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p')"
	echo "kernel: $(uname -r)"
	echo "syscell: $("$syscell" version) (a copy of $syscell_from)"
	echo "repository: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
	local debs=() p server
	for server in "${selected[@]}"; do
		case $server in
		redis) debs+=(redis-server redis-tools) ;;
		nginx) debs+=(nginx wrk) ;;
		postgres) debs+=(postgresql-15 postgresql-client-15) ;;
		fio) debs+=(fio) ;;
		esac
	done
	for p in "${debs[@]}" libc6; do
		echo "$p: $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo missing)"
	done
}

declare -A failures=()
start=$SECONDS
started=$(date -u +%FT%TZ)
for server in "${selected[@]}"; do
	rm -rf "$out/runs/$server"
	mkdir -p "$out/runs/$server"
	set +e
	bench_server "$server" 2>&1 | tee "$out/runs/$server/log.txt" >&2
	status=${PIPESTATUS[0]}
	set -e
	if [[ $status -ne 0 ]]; then
		failures[$server]=$out/runs/$server/failure.txt
		if [[ ! -f ${failures[$server]} ]]; then
			echo "exited with status $status (log: $out/runs/$server/log.txt)" >"${failures[$server]}"
		fi
		log "$server FAILED: $(cat "${failures[$server]}")"
	fi
done

# The summary's inputs.
python3 - "$pinned/meta.json" "$invocation" "$ROUNDS" "$audit_supported" "$audit_why" \
	"$(versions)" "$out" "${selected[*]}" "${failures[@]}" <<'PY'
import json, os, sys
path, command, rounds, supported, why, versions, out, servers = sys.argv[1:9]
failures = {os.path.basename(os.path.dirname(f)): open(f).read().strip() for f in sys.argv[9:]}
loads = []
for server in servers.split():
    try:
        loads.append(open(os.path.join(out, "runs", server, "load.txt")).read().strip())
    except OSError:
        pass
json.dump({
    "command": command,
    "date": versions.splitlines()[0].split(": ", 1)[1],
    "rounds": int(rounds),
    "audit": {"supported": supported == "1", "why": why},
    "versions": versions,
    "loads": loads,
    "servers": servers.split(),
    "failures": failures,
}, open(path, "w"), indent=2)
PY
python3 "$pinned/throughput.py" summarize "$out" "$pinned/meta.json"
log "$out/throughput.md, $out/throughput.json in $((SECONDS - start))s"
warn_audit
if [[ ${#failures[@]} -gt 0 ]]; then
	log "FAILED: ${!failures[*]} (see $out/runs/SERVER/log.txt)"
	exit 1
fi
