"""Prints run.sh's measurements as a markdown table: medians per workload,
guard/glibc ratios and their geometric means.

    table.py DIR NAME...   (DIR holds CONFIG-NAME files of
                            "seconds rss_kb peak_kb reports" lines)
"""
import math
import statistics
import sys


def load(path):
    with open(path) as f:
        rows = [line.split() for line in f if line.strip()]
    secs = statistics.median(float(r[0]) for r in rows)
    rss = statistics.median(int(r[1]) for r in rows)
    peaks = [int(r[2]) for r in rows if r[2] != "n/a"]
    peak = statistics.median(peaks) if peaks else None
    reports = sum(int(r[3]) for r in rows)
    return secs, rss, peak, reports


def mib(kb):
    return "n/a" if kb is None else f"{kb / 1024:.1f}"


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def main():
    out, names = sys.argv[1], sys.argv[2:]
    print("| workload | glibc s | guard s | runtime × | glibc RSS MiB | guard RSS MiB | RSS × "
          "| glibc mem MiB | guard mem MiB | memory × | false reports |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = {"t": [], "rss": [], "mem": []}
    for name in names:
        gs, grss, gpeak, _ = load(f"{out}/glibc-{name}")
        hs, hrss, hpeak, reports = load(f"{out}/guard-{name}")
        t, r = hs / gs, hrss / grss
        ratios["t"].append(t)
        ratios["rss"].append(r)
        m = hpeak / gpeak if gpeak and hpeak else None
        if m:
            ratios["mem"].append(m)
        print(f"| {name} | {gs:.3f} | {hs:.3f} | {t:.2f} | {mib(grss)} | {mib(hrss)} | {r:.2f} "
              f"| {mib(gpeak)} | {mib(hpeak)} | {'n/a' if m is None else f'{m:.2f}'} | {reports} |")
    g = {k: geomean(v) for k, v in ratios.items()}
    mem = "n/a" if g["mem"] is None else f"**{g['mem']:.2f}**"
    print(f"| **geomean** | | | **{g['t']:.2f}** | | | **{g['rss']:.2f}** | | | {mem} | |")


if __name__ == "__main__":
    main()
