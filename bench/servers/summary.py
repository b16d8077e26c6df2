#!/usr/bin/env python3
"""Markdown summary of the server recordings in OUTDIR (record.sh's output).

    bench/servers/summary.py OUTDIR > OUTDIR/summary.md

Reads SERVER.{younis2014,default}.json (syscell score --json), the runs'
recorder summaries (runs/SERVER/*.log) and package versions, and the
ranking tables of ranking/data to list each compartment's dangerous calls.
Standard library only.
"""

import json
import os
import re
import sys

SERVERS = ["redis", "nginx", "postgres", "fio"]
RANKINGS = ["younis2014", "default"]

# addrfilter's Table "Privilege reduction when using addrfilter over
# seccomp" (raw seccomp score, raw addrfilter score, reduction), with the
# Ubuntu 24.04 versions it was measured on, and its load.
ADDRFILTER = {
    "redis": (119, 53, 55.46, "Redis 7.0.15; redis-benchmark -c 48, defaults"),
    "nginx": (78, 59, 24.35, "Nginx 1.24.0; wrk -c 200 -t 4, 30 s"),
    "postgres": (93, 71, 23.66, "PostgreSQL 16.8; pgbench -c 48 -j 48 -T 30"),
    "fio": (45, 20, 55.56, "fio 3.39; sequential 1 MiB direct writes, 16 jobs, iodepth 64, 30 s"),
}

PACKAGE = {"redis": "redis-server", "nginx": "nginx", "postgres": "postgresql-15", "fio": "fio"}

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNISTD = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"

RECORDED = re.compile(
    r"recorded (\d+) calls? of (\d+) process(?:es)? \((\d+) threads?, (\d+) execs?\) in (\d+) compartments?"
)
KERNEL = re.compile(r"(\d+) attributed in the kernel from (\d+) learnt paths, (\d+) from stack snapshots")
DEEPEST = re.compile(r"deepest unwind read (\d+) bytes of the stack \((.*)\); snapshots copy (\d+)")
LOST = re.compile(r"LOST (\d+) events")
UNATTRIBUTED = re.compile(r"UNATTRIBUTED (\d+) calls?")


def ranking_levels(name):
    """Danger levels above 1 of a ranking file, by entry (name or number).

    The files are flat YAML lists under high-threat and medium-threat; the
    higher level wins for an entry at both (mount, 165)."""
    levels = {}
    level = None
    with open(os.path.join(REPO, "ranking", "data", name + ".yaml")) as f:
        for line in f:
            stripped = line.split("#", 1)[0].strip()
            if stripped == "high-threat:":
                level = 3
            elif stripped == "medium-threat:":
                level = 2
            elif stripped.startswith("- ") and level:
                entry = stripped[2:].strip()
                levels[entry] = max(levels.get(entry, 0), level)
    return levels


def x86_64_numbers():
    numbers = {}
    try:
        with open(UNISTD) as f:
            for line in f:
                m = re.match(r"#define __NR_(\w+) (\d+)", line)
                if m:
                    numbers[m.group(1)] = m.group(2)
    except OSError:
        pass
    return numbers


def level(levels, numbers, syscall):
    return levels.get(syscall) or levels.get(numbers.get(syscall, ""), 1)


def read_versions(path):
    versions = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                versions[key.strip()] = value.strip()
    except OSError:
        pass
    return versions


def runs(outdir, server):
    """Each run's recorder statistics, in run order."""
    d = os.path.join(outdir, "runs", server)
    rows = []
    for name in sorted(os.listdir(d)):
        if not (name.startswith("run-") and name.endswith(".toml.log")):
            continue
        text = open(os.path.join(d, name)).read()
        row = {"run": name[: -len(".toml.log")], "command": "", "status": "?"}
        for line in text.splitlines():
            if line.startswith("# ") and " record " in line:
                row["command"] = line[2:]
            m = re.match(r"# recorder exit status (\d+) after (\d+)s", line)
            if m:
                row["status"], row["seconds"] = m.group(1), m.group(2)
        for key, regex in (("recorded", RECORDED), ("kernel", KERNEL), ("deepest", DEEPEST)):
            m = regex.search(text)
            row[key] = m.groups() if m else None
        row["lost"] = sum(int(n) for n in LOST.findall(text))
        row["unattributed"] = sum(int(n) for n in UNATTRIBUTED.findall(text))
        rows.append(row)
    return rows


def load(outdir, server, run):
    """What the load achieved in a run, from its client's output."""
    try:
        text = open(os.path.join(outdir, "runs", server, run + ".toml.load.log")).read()
    except OSError:
        return "?"
    if server == "redis":
        tests = [l for l in text.splitlines() if l.startswith('"') and not l.startswith('"test"')]
        return f"{len(tests)} tests"
    if server == "nginx":
        m = re.search(r"(\d+) requests in ([\d.]+s)", text)
        return f"{m.group(1)} requests in {m.group(2)}" if m else "?"
    if server == "fio":
        try:
            job = json.loads(text[text.index("{"):])["jobs"][0]
        except (ValueError, KeyError, IndexError):
            return "?"
        ios = job["read"]["total_ios"] + job["write"]["total_ios"]
        return f"{ios} I/Os ({job['read']['iops'] + job['write']['iops']:.0f} IOPS)"
    m = re.search(r"number of transactions actually processed: (\d+)", text)
    return f"{m.group(1)} transactions" if m else "?"


def pct(x):
    return f"{x:.2f} %"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py OUTDIR")
    outdir = sys.argv[1]
    numbers = x86_64_numbers()
    levels = {r: ranking_levels(r) for r in RANKINGS}
    present = [s for s in SERVERS if os.path.exists(os.path.join(outdir, f"{s}.younis2014.json"))]
    scores = {
        s: {r: json.load(open(os.path.join(outdir, f"{s}.{r}.json"))) for r in RANKINGS} for s in present
    }
    out = []
    w = out.append

    w("| server | package | objects (compartments) | syscalls (union) "
      "| P_A / P_seccomp, younis2014 | reduction, younis2014 "
      "| P_A / P_seccomp, default | reduction, default "
      "| most privileged compartment | addrfilter: P_A / P_seccomp | addrfilter: reduction |")
    w("|" + "---|" * 11)
    for s in present:
        y, d = scores[s]["younis2014"], scores[s]["default"]
        versions = read_versions(os.path.join(outdir, "runs", s, "versions.txt"))
        most = y["most_privileged"]
        if d["most_privileged"] != most:
            most += f" (default: {d['most_privileged']})"
        a_seccomp, a_pa, a_red, _ = ADDRFILTER[s]
        w(f"| {s} | {PACKAGE[s]} {versions.get(PACKAGE[s], '?')} | {len(y['compartments'])} "
          f"| {len(y['union']['syscalls'])} "
          f"| {y['application_privilege']} / {y['seccomp_privilege']} | {pct(y['reduction_percent'])} "
          f"| {d['application_privilege']} / {d['seccomp_privilege']} | {pct(d['reduction_percent'])} "
          f"| `{most}` | {a_pa} / {a_seccomp} | {a_red:.2f} % |")
    w("")
    w("addrfilter's figures are its Table \"Privilege reduction when using addrfilter "
      "over seccomp\" (younis2014 ranking, syso's attribution, Ubuntu 24.04): "
      + "; ".join(f"{s}: {ADDRFILTER[s][3]}" for s in present) + ".")
    w("")

    w("### Runs")
    w("")
    w("| server | run | calls | processes | threads | compartments | from snapshots "
      "| learnt paths | deepest unwind (bytes) | lost | unattributed | recorder status | seconds | load |")
    w("|" + "---|" * 14)
    for s in present:
        for r in runs(outdir, s):
            rec = r["recorded"] or ("?",) * 5
            ker = r["kernel"] or ("?",) * 3
            deep = r["deepest"] or ("?", "?", "?")
            w(f"| {s} | {r['run']} | {rec[0]} | {rec[1]} | {rec[2]} | {rec[4]} | {ker[2]} | {ker[1]} "
              f"| {deep[0]} | {r['lost']} | {r['unattributed']} | {r['status']} | {r.get('seconds', '?')} "
              f"| {load(outdir, s, r['run'])} |")
    w("")
    w("Run 3's figures are its own; its policy is merged with runs 1 and 2 (`--merge`).")
    w("")

    w("### Dangerous calls by compartment")
    w("")
    w("Calls scored 3 (high) or 2 (medium) by the default ranking; "
      "those younis2014 scores lower are marked with their younis2014 score.")
    w("")
    for s in present:
        w(f"**{s}**")
        w("")
        w("| compartment | P_C younis2014 | P_C default | high (3) | medium (2) |")
        w("|---|---|---|---|---|")
        young = {c["name"]: c for c in scores[s]["younis2014"]["compartments"]}
        for c in scores[s]["default"]["compartments"]:
            cols = {3: [], 2: []}
            for call in c["syscalls"]:
                dl = level(levels["default"], numbers, call)
                if dl < 2:
                    continue
                yl = level(levels["younis2014"], numbers, call)
                cols[dl].append(f"{call}" + (f" ({yl})" if yl != dl else ""))
            w(f"| `{c['name']}` | {young[c['name']]['privilege']} | {c['privilege']} "
              f"| {', '.join(cols[3]) or '-'} | {', '.join(cols[2]) or '-'} |")
        w("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
