"""Prints floor.sh's tables: per workload, the runtime floor of any design
that keeps heapguard's strict guarantee, next to strict mode measured in the
same rounds; and the floor of any allocator that never reuses an address,
next to deferred mode.

    summary.py tmin WORKDIR                        prints t_min, ns
    summary.py table WORKDIR CPUS NAME...

WORKDIR holds revoke.md, primitives.md, times-KIND-NAME ("wall_s cpu_s"
lines; KIND plain, count, delay, strict or deferred) and counts-KIND-NAME
(count.so's lines).
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
# primitives.c rows that give a fresh private page, and release one.
FRESH_PAGE = ["write fault, private anon (fresh page)", "MADV_POPULATE_WRITE, private anon, 2 MiB at a time"]
RELEASE_PAGE = "MADV_GUARD_INSTALL, one call over all pages, private anon"
# primitives.c rows that map an existing frame at a new page.
MAP_PAGE = ["read fault, memfd window (fault-around)", "MADV_POPULATE_WRITE, 2 MiB at a time"]


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


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def cheapest(work):
    prim = primitives(f"{work}/primitives.md")
    t_rev, mech, rev_rows = revoke(f"{work}/revoke.md")
    cands = [(t_rev, f"{mech} (revoke, best round)")]
    cands += [(prim[k], f"{k} (primitives, min of 5 rounds)") for k in PRIMITIVE_REVOCATIONS if k in prim]
    t_min, t_name = min(cands)
    return round(t_min), t_name, prim, rev_rows


def times(work, kind, name):
    with open(f"{work}/times-{kind}-{name}") as f:
        return [tuple(map(float, line.split())) for line in f if line.strip()]


def median_wall(work, kind, name):
    return statistics.median(w for w, _ in times(work, kind, name))


class Workload:
    """One workload's measurements and bounds."""

    def __init__(self, work, name, cpus):
        plain = times(work, "plain", name)
        self.name, self.cpus = name, cpus
        self.T = statistics.median(w for w, _ in plain)
        self.C = statistics.median(c for _, c in plain)
        c_count = times(work, "count", name)[0][1]
        self.scale = min(1.0, self.C / c_count) if c_count > 0 else 1.0
        self.E = median_wall(work, "delay", name)
        delayed = counts(f"{work}/counts-delay-{name}")  # every delay run's lines
        waited = sum(float(p["delay_s"]) for p in delayed)
        self.wait_ns = waited / max(1, sum(int(p["frees"]) for p in delayed)) * 1e9
        self.procs = counts(f"{work}/counts-count-{name}")
        self.F = sum(int(p["frees"]) for p in self.procs)
        self.A = sum(float(p["alloc_s"]) for p in self.procs)
        self.bytes = sum(int(p["bytes"]) for p in self.procs)
        self.allocs = sum(int(p[k]) for p in self.procs for k in ALLOC_CALLS)
        self.threads = max((int(p["threads"]) for p in self.procs), default=0)
        self.mode = {k: (median_wall(work, k, name) / self.T,
                         statistics.median(c for _, c in times(work, k, name)) / self.C)
                     for k in ("strict", "deferred")}

    def bound(self, total_s, exit_s):
        """The max(work, thread) bound over T, the design costing total_s
        seconds more in all and exit_s(proc) more on a process's exit thread."""
        # A overestimates (it includes the timing's own cost): the program's
        # own time is never counted below zero.
        work_b = (max(0.0, self.C - self.A) + total_s) / self.cpus
        thread_b = max((max(0.0, float(p["exit_thread_cpu"]) * self.scale - float(p["exit_thread_alloc_s"]))
                        + exit_s(p) for p in self.procs), default=0.0)
        return max(work_b, thread_b) / self.T

    def cpu_bound(self, total_s):
        """The same design's CPU time over the plain runs' CPU time C: no
        machine noise in either (waiting for a CPU is not CPU time)."""
        return (max(0.0, self.C - self.A) + total_s) / self.C

    def strict_floor(self, t_free, t_map=0.0):
        """Floor of the strict guarantee: t_free ns per free (and t_map ns
        per allocation: each live object needs a page of its own)."""
        def exit_s(p):
            return (int(p["exit_thread_frees"]) * t_free + sum(int(p[k]) for k in ALLOC_CALLS) * t_map) * 1e-9
        return self.bound((self.F * t_free + self.allocs * t_map) * 1e-9, exit_s)

    def fresh_s(self, t_page):
        return self.bytes / 4096 * t_page * 1e-9


ALLOC_CALLS = ("malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign",
               "valloc", "pvalloc")


def floor_table(ws, t_min, t_name, t_fast, t_sys):
    print(f"t_min = {t_min:.0f} ns per free: {t_name}.")
    print()
    print("| workload | T glibc s (median) | CPU s | images / max threads | allocations "
          "| F frees | frees/s | A: time in glibc malloc s | F × t_min s | floor × (T+F·t_min)/T "
          "| floor × strict | emulated s | its wait per free ns | floor × emulated |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    serial, strict, emul, fast, sysf = [], [], [], [], []
    for w in ws:
        s = (w.T + w.F * t_min * 1e-9) / w.T
        st = w.strict_floor(t_min)
        serial.append(s)
        strict.append(st)
        emul.append(w.E / w.T)
        fast.append(w.strict_floor(t_fast))
        if t_sys:
            sysf.append(w.strict_floor(t_sys))
        print(f"| {w.name} | {w.T:.3f} | {w.C:.3f} | {len(w.procs)} / {w.threads} | {w.allocs:,} | {w.F:,} "
              f"| {w.F / w.T:,.0f} | {w.A:.3f} | {w.F * t_min * 1e-9:.3f} | {s:.2f} | {st:.2f} "
              f"| {w.E:.3f} | {w.wait_ns:.0f} | {w.E / w.T:.2f} |")
    print(f"| **geomean** | | | | | | | | | **{geomean(serial):.2f}** | **{geomean(strict):.2f}** "
          f"| | | **{geomean(emul):.2f}** |")
    over = [w.name for w, x in zip(ws, strict) if x > 2]
    print()
    print(f"Strict floor: geomean {geomean(strict):.2f}×, max {max(strict):.2f}×, {len(over)} of {len(ws)} "
          f"workloads over 2× ({', '.join(over) or 'none'}).")
    print()
    print(f"Sensitivity (strict floor): with t = {t_fast:.0f} ns, the single fastest revocation call "
          f"measured, geomean {geomean(fast):.2f}×, max {max(fast):.2f}×"
          + (f"; with t = {t_sys:.0f} ns, an empty madvise (a kernel entry that revokes "
             f"nothing), geomean {geomean(sysf):.2f}×, max {max(sysf):.2f}×." if sysf else "."))


def mode_table(ws, mode, floors):
    """floors: (name, wall floor of w, CPU floor of w) to compare mode with."""
    head = f"| workload | {mode} × |"
    for name, _, _ in floors:
        head += f" {name} × | {mode} ÷ it |"
    head += f" {mode} CPU × |"
    for name, _, _ in floors:
        head += f" {name}, CPU × | {mode} CPU ÷ it |"
    print(head)
    print("| --- |" + " ---: |" * (2 + 4 * len(floors)))
    cols = {}
    for w in ws:
        wall, cpu = w.mode[mode]
        row = [wall]
        for _, f, _ in floors:
            row += [f(w), wall / f(w)]
        row.append(cpu)
        for _, _, f in floors:
            row += [f(w), cpu / f(w)]
        for i, x in enumerate(row):
            cols.setdefault(i, []).append(x)
        print(f"| {w.name} | " + " | ".join(f"{x:.2f}" for x in row) + " |")
    print("| **geomean** | " + " | ".join(f"**{geomean(cols[i]):.2f}**" for i in sorted(cols)) + " |")


def main():
    if sys.argv[1] == "tmin":
        print(cheapest(sys.argv[2])[0])
        return
    work, cpus, names = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    t_min, t_name, prim, rev_rows = cheapest(work)
    t_fast = min(r[2] for r in rev_rows.values())  # fastest single call of any mechanism
    t_sys = prim.get(SYSCALL_FLOOR)
    ws = [Workload(work, name, cpus) for name in names]
    floor_table(ws, t_min, t_name, t_fast, t_sys)
    print()
    t_map, map_name = min((prim[k], k) for k in MAP_PAGE if k in prim)
    print(f"Strict mode against its floor, and against the floor with one mapping per allocation "
          f"(t_map = {t_map:.0f} ns: {map_name}; every live object needs a page of its own, so every "
          f"allocation maps one), measured in the same rounds; CPU: user + system time, over the plain "
          f"runs' CPU time, against the same costs added to it:")
    print()
    mode_table(ws, "strict", [
        ("floor", lambda w: w.strict_floor(t_min), lambda w: w.cpu_bound(w.F * t_min * 1e-9)),
        ("floor + mapping", lambda w: w.strict_floor(t_min, t_map),
         lambda w: w.cpu_bound((w.F * t_min + w.allocs * t_map) * 1e-9)),
    ])
    print()
    fresh, fresh_name = min((prim[k], k) for k in FRESH_PAGE if k in prim)
    release = prim[RELEASE_PAGE]
    t_page = fresh + release
    print(f"Deferred mode against glibc plus the fresh memory that never reusing an address takes: "
          f"t_page = {t_page:.0f} ns per fresh page ({fresh_name}, plus {release:.0f} ns to release it: "
          f"{RELEASE_PAGE}); the bytes allocated, each object rounded to 16, are that many fresh pages "
          f"at least:")
    print()
    print("| workload | bytes allocated MiB | fresh pages | pages × t_page s |")
    print("| --- | ---: | ---: | ---: |")
    for w in ws:
        print(f"| {w.name} | {w.bytes / 2**20:.1f} | {w.bytes // 4096:,} | {w.bytes / 4096 * t_page * 1e-9:.3f} |")
    print()
    mode_table(ws, "deferred", [
        ("glibc + fresh pages", lambda w: (w.T + w.fresh_s(t_page)) / w.T,
         lambda w: (w.C + w.fresh_s(t_page)) / w.C),
    ])


if __name__ == "__main__":
    main()
