"""run.sh's arithmetic.

    table.py rps CSV
        redis-benchmark's --csv output: the geomean of its requests/s.
    table.py table DIR "CONFIG..." NAME...
        DIR holds CONFIG-NAME files of "seconds rss_kb peak_kb reports rps
        cpu_seconds" lines, one per run. Prints a markdown table: per
        workload, the first configuration's (the anchor's) medians, then
        each other configuration's ratios of medians to it: wall time, CPU
        time (user + system, less disturbed by the machine's other jobs)
        and peak memory;
        their geomeans; redis-benchmark's throughput ratios; and the
        heapguard reports each configuration's runs printed (false reports:
        the workloads are correct).
"""
import csv
import math
import statistics
import sys


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def rps(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    print(f"{geomean([float(r['rps']) for r in rows]):.1f}")


def load(path):
    with open(path) as f:
        rows = [line.split() for line in f if line.strip()]
    peaks = [int(r[2]) for r in rows if r[2] != "n/a"]
    rpss = [float(r[4]) for r in rows if r[4] != "-"]
    return {
        "t": statistics.median(float(r[0]) for r in rows),
        "cpu": statistics.median(float(r[5]) for r in rows),
        "mem": statistics.median(peaks) if peaks else None,
        "reports": sum(int(r[3]) for r in rows),
        "rps": statistics.median(rpss) if rpss else None,
    }


def ratio(x, base):
    return x / base if x and base else None


def fmt(x):
    return "n/a" if x is None else f"{x:.2f}"


def table(out, configs, names):
    anchor, others = configs[0], configs[1:]
    head = f"| workload | {anchor} s | {anchor} MiB |"
    for c in others:
        head += f" {c} time × | {c} CPU × | {c} memory × |"
    print(head)
    print("| --- | ---: | ---: |" + " ---: | ---: | ---: |" * len(others))
    ratios = {c: {"t": [], "cpu": [], "mem": []} for c in others}
    reports = {c: 0 for c in configs}
    throughput = {}
    for name in names:
        runs = {c: load(f"{out}/{c}-{name}") for c in configs}
        base = runs[anchor]
        mem = "n/a" if base["mem"] is None else f"{base['mem'] / 1024:.1f}"
        row = f"| {name} | {base['t']:.3f} | {mem} |"
        for c in others:
            t, m = ratio(runs[c]["t"], base["t"]), ratio(runs[c]["mem"], base["mem"])
            cpu = ratio(runs[c]["cpu"], base["cpu"])
            ratios[c]["t"].append(t)
            if cpu:
                ratios[c]["cpu"].append(cpu)
            if m:
                ratios[c]["mem"].append(m)
            row += f" {fmt(t)} | {fmt(cpu)} | {fmt(m)} |"
        print(row)
        for c in configs:
            reports[c] += runs[c]["reports"]
        if base["rps"]:
            throughput = {c: ratio(runs[c]["rps"], base["rps"]) for c in others}
            throughput[anchor] = base["rps"]
    row = "| **geomean** | | |"
    for c in others:
        row += " | ".join(f" **{fmt(geomean(ratios[c][k]))}**" for k in ("t", "cpu", "mem")) + " |"
    print(row)
    if throughput:
        print()
        print(f"redis-benchmark throughput (geomean requests/s of its tests, median run) ÷ {anchor}'s "
              f"({throughput[anchor]:.0f}/s): "
              + ", ".join(f"{c} {fmt(throughput[c])}" for c in others))
    print()
    print("heapguard reports in the workloads' runs (false reports): "
          + ", ".join(f"{c} {reports[c]}" for c in configs))


def main():
    if sys.argv[1] == "rps":
        rps(sys.argv[2])
    else:
        table(sys.argv[2], sys.argv[3].split(), sys.argv[4:])


if __name__ == "__main__":
    main()
