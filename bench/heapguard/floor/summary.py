"""Prints floor.sh's table: per workload, the runtime floor of any design
that keeps heapguard's guarantee, next to heapguard's measured ratio.

    summary.py tmin WORKDIR                        prints t_min, ns
    summary.py table WORKDIR PERFORMANCE.md CPUS NAME...

WORKDIR holds revoke.md, primitives.md, times-KIND-NAME ("wall_s cpu_s"
lines; KIND plain, count or delay) and counts-KIND-NAME (count.so's lines).
"""
import math
import re
import statistics
import sys

# primitives.c rows that revoke one populated page with one call. Left out:
# a page never touched (a freed object's page has been used), one call over
# many contiguous pages and process_madvise with 1,024 ranges (both batch the
# revocations of many frees: the guarantee holds when each free returns).
PRIMITIVE_REVOCATIONS = [
    "MADV_GUARD_INSTALL, one page, memfd window",
    "MADV_GUARD_INSTALL, one page, private anon",
    "MADV_GUARD_INSTALL, one page, 2nd thread running",
    "mprotect(PROT_NONE) one page (splits VMA)",
]
SYSCALL_FLOOR = "madvise(MADV_NORMAL), syscall floor"

# run.sh's names -> the start of their label in docs/PERFORMANCE.md.
DOC_LABELS = {
    "binary-trees": "binary-trees", "larson": "larson", "cfrac-like": "cfrac-like",
    "sqlite3": "sqlite3", "python-dict": "python3 dict", "python-json": "python3 json",
    "g++-compile": "g++ compile", "redis": "redis",
}


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def primitives(path):
    mins = {}
    with open(path) as f:
        for line in f:
            c = cells(line)
            if line.startswith("|") and len(c) == 3 and "–" in c[2] and c[1].replace(".", "").isdigit():
                mins[c[0]] = float(c[2].split("–")[0])
    return mins


def revoke(path):
    rows, t_min, mech = {}, None, None
    with open(path) as f:
        for line in f:
            m = re.match(r"t_min_ns=([\d.]+) mechanism=(.*)", line)
            if m:
                t_min, mech = float(m.group(1)), m.group(2)
            elif line.startswith("| `"):
                c = cells(line)
                rows[c[0]] = [float(x) for x in c[1:]]
    return t_min, mech, rows


def counts(path):
    procs = []
    with open(path) as f:
        for line in f:
            kv = dict(w.split("=", 1) for w in line.split())
            procs.append(kv)
    return procs


def doc_ratios(path):
    out, inside = {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("## "):
                inside = line.startswith("## Heap guard (issue 6)")
            elif inside and line.startswith("| ") and not line.startswith("| workload"):
                c = cells(line)
                for name, label in DOC_LABELS.items():
                    if c[0].startswith(label):
                        out[name] = float(c[1])
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def cheapest(work):
    prim = primitives(f"{work}/primitives.md")
    t_rev, mech, rev_rows = revoke(f"{work}/revoke.md")
    cands = [(t_rev, f"{mech} (revoke, best round)")]
    cands += [(prim[k], f"{k} (primitives, min of 5 rounds)") for k in PRIMITIVE_REVOCATIONS if k in prim]
    t_min, t_name = min(cands)
    return round(t_min), t_name, prim, rev_rows


def main():
    if sys.argv[1] == "tmin":
        print(cheapest(sys.argv[2])[0])
        return
    work, perf, cpus, names = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
    t_min, t_name, prim, rev_rows = cheapest(work)
    t_fast = min(r[2] for r in rev_rows.values())  # fastest single call of any mechanism
    t_sys = prim.get(SYSCALL_FLOOR)
    ref = doc_ratios(perf)

    rows, serial, strict, emul, fast, sysf = [], [], [], [], [], []
    for name in names:
        def times(kind):
            with open(f"{work}/times-{kind}-{name}") as f:
                return [tuple(map(float, l.split())) for l in f if l.strip()]
        plain = times("plain")
        T = statistics.median(w for w, _ in plain)
        C = statistics.median(c for _, c in plain)
        C_count = times("count")[0][1]
        scale = min(1.0, C / C_count) if C_count > 0 else 1.0
        E = statistics.median(w for w, _ in times("delay"))
        delayed = counts(f"{work}/counts-delay-{name}")  # every delay run's lines
        waited = sum(float(p["delay_s"]) for p in delayed)
        wait_ns = waited / max(1, sum(int(p["frees"]) for p in delayed)) * 1e9
        procs = counts(f"{work}/counts-count-{name}")
        F = sum(int(p["frees"]) for p in procs)
        A = sum(float(p["alloc_s"]) for p in procs)
        allocs = sum(int(p[k]) for p in procs for k in ("malloc", "calloc", "realloc", "reallocarray",
                                                        "posix_memalign", "aligned_alloc", "memalign",
                                                        "valloc", "pvalloc"))
        threads = max((int(p["threads"]) for p in procs), default=0)

        def bound(t):
            t *= 1e-9
            work_b = (C - A + F * t) / cpus
            thread_b = max((float(p["exit_thread_cpu"]) * scale - float(p["exit_thread_alloc_s"])
                            + int(p["exit_thread_frees"]) * t for p in procs), default=0.0)
            return (T + F * t) / T, max(work_b, thread_b) / T

        s, st = bound(t_min)
        serial.append(s)
        strict.append(st)
        emul.append(E / T)
        fast.append(bound(t_fast)[1])
        if t_sys:
            sysf.append(bound(t_sys)[1])
        h = ref.get(name)
        rows.append(f"| {name} | {T:.3f} | {C:.3f} | {len(procs)} / {threads} | {allocs:,} | {F:,} "
                     f"| {F / T:,.0f} | {A:.3f} | {F * t_min * 1e-9:.3f} | {s:.2f} | {st:.2f} "
                     f"| {E:.3f} | {wait_ns:.0f} | {E / T:.2f} "
                     f"| {'n/a' if h is None else f'{h:.2f}'} |")

    print(f"t_min = {t_min:.0f} ns per free: {t_name}.")
    print()
    print("| workload | T glibc s (median) | CPU s | images / max threads | allocations "
          "| F frees | frees/s | A: time in glibc malloc s | F × t_min s | floor × (T+F·t_min)/T "
          "| floor × strict | emulated s | its wait per free ns | floor × emulated | heapguard × measured (docs/PERFORMANCE.md) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    hs = [ref[n] for n in names if n in ref]
    print(f"| **geomean** | | | | | | | | | **{geomean(serial):.2f}** | **{geomean(strict):.2f}** "
          f"| | | **{geomean(emul):.2f}** | {geomean(hs):.2f} |" if hs else "")
    over = [n for n, x in zip(names, strict) if x > 2]
    over_serial = [n for n, x in zip(names, serial) if x > 2]
    over_emul = [n for n, x in zip(names, emul) if x > 2]
    print()
    print(f"Target: geomean ≤ 1.15×, no workload > 2×. Floor (T+F·t_min)/T: geomean "
          f"{geomean(serial):.2f}×, {len(over_serial)} of {len(names)} workloads over 2×. Emulated: "
          f"geomean {geomean(emul):.2f}×, {len(over_emul)} of {len(names)} over 2×. Strict floor: "
          f"geomean {geomean(strict):.2f}×, "
          f"max {max(strict):.2f}×, {len(over)} of {len(names)} workloads over 2× "
          f"({', '.join(over) or 'none'}). "
          f"Target {'UNREACHABLE' if geomean(strict) > 1.15 or over else 'not excluded'} "
          f"by this bound.")
    print()
    print(f"Sensitivity (strict floor): with t = {t_fast:.0f} ns, the single fastest revocation call "
          f"measured, geomean {geomean(fast):.2f}×, max {max(fast):.2f}×"
          + (f"; with t = {t_sys:.0f} ns, an empty madvise (a kernel entry that revokes "
             f"nothing), geomean {geomean(sysf):.2f}×, max {max(sysf):.2f}×." if sysf else "."))


if __name__ == "__main__":
    main()
