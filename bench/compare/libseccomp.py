#!/usr/bin/python3
"""Compile a resolved OCI seccomp policy with libseccomp and export raw BPF.

Run with /usr/bin/python3: Debian's python3-seccomp binds the system
libseccomp, which is the baseline syscell is compared against.

The rules are added the way runc adds them (libcontainer/seccomp), so the
program is the one a container runtime would load:
  - an ERRNO/TRACE action without errnoRet returns EPERM;
  - a rule whose action equals the default action is dropped (libseccomp
    rejects it);
  - conditions on distinct arguments are ANDed in one rule, but when an
    argument index repeats, each condition becomes a rule of its own (OR);
  - names the library does not know are skipped (and listed on stderr).
"""

import argparse
import ctypes
import errno
import json
import os
import statistics
import sys
import time

import seccomp

# The binding only exposes the per-arch resolver, which returns an error for
# names valid on another arch (mmap2 on x86_64). runc asks the arch-neutral
# seccomp_syscall_resolve_name and skips a name only when libseccomp does not
# know it at all (__NR_SCMP_ERROR); the rest libseccomp maps per arch.
_resolve = ctypes.CDLL("libseccomp.so.2").seccomp_syscall_resolve_name
_resolve.argtypes = [ctypes.c_char_p]
NR_SCMP_ERROR = -1

OPS = {
    "SCMP_CMP_NE": seccomp.NE,
    "SCMP_CMP_LT": seccomp.LT,
    "SCMP_CMP_LE": seccomp.LE,
    "SCMP_CMP_EQ": seccomp.EQ,
    "SCMP_CMP_GE": seccomp.GE,
    "SCMP_CMP_GT": seccomp.GT,
    "SCMP_CMP_MASKED_EQ": seccomp.MASKED_EQ,
}


def action(name, errno_ret):
    """Map an OCI action name to a libseccomp action value."""
    ret = errno.EPERM if errno_ret is None else errno_ret
    return {
        "SCMP_ACT_KILL": seccomp.KILL,
        "SCMP_ACT_KILL_THREAD": seccomp.KILL,
        "SCMP_ACT_KILL_PROCESS": seccomp.KILL_PROCESS,
        "SCMP_ACT_TRAP": seccomp.TRAP,
        "SCMP_ACT_ERRNO": seccomp.ERRNO(ret),
        "SCMP_ACT_TRACE": seccomp.TRACE(ret),
        "SCMP_ACT_ALLOW": seccomp.ALLOW,
        "SCMP_ACT_LOG": seccomp.LOG,
        "SCMP_ACT_NOTIFY": seccomp.NOTIFY,
    }[name]


def conditions(args):
    """Yield the Arg lists to add as separate rules (see module doc)."""
    conds = [
        # For MASKED_EQ the OCI "value" is the mask and "valueTwo" the datum,
        # which is exactly libseccomp's (datum_a, datum_b) order.
        seccomp.Arg(a["index"], OPS[a["op"]], a["value"], a.get("valueTwo", 0))
        for a in args or []
    ]
    indexes = [a["index"] for a in args or []]
    if len(set(indexes)) == len(indexes):
        yield conds
    else:
        yield from ([c] for c in conds)


def unknown_names(policy):
    """Names libseccomp cannot resolve on any architecture."""
    return sorted(
        {
            n
            for r in policy["syscalls"]
            for n in r["names"]
            if _resolve(n.encode()) == NR_SCMP_ERROR
        }
    )


def write_numbers(policy, path):
    """Write the x86_64 numbers libseccomp gives the policy's names."""
    nrs = {
        n: seccomp.resolve_syscall(seccomp.Arch.X86_64, n)
        for r in policy["syscalls"]
        for n in r["names"]
    }
    with open(path, "w") as fp:
        json.dump({n: nr for n, nr in sorted(nrs.items()) if nr >= 0}, fp, indent=0)
        fp.write("\n")


def build(policy, optimize, skip):
    """Build a filter from policy, leaving out the names in skip."""
    default = action(policy["defaultAction"], policy.get("defaultErrnoRet"))
    f = seccomp.SyscallFilter(default)
    # Architectures first: rules only reach the arches present when added.
    for arch in policy.get("architectures") or []:
        a = getattr(seccomp.Arch, arch.removeprefix("SCMP_ARCH_"))
        if not f.exist_arch(a):
            f.add_arch(a)
    f.set_attr(seccomp.Attr.CTL_NNP, 0)  # as runc: never set NNP for us
    f.set_attr(seccomp.Attr.CTL_OPTIMIZE, optimize)
    for rule in policy["syscalls"]:
        act = action(rule["action"], rule.get("errnoRet"))
        if act == default:
            continue
        for name in (n for n in rule["names"] if n not in skip):
            for conds in conditions(rule.get("args")):
                f.add_rule(act, name, *conds)
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("policy", help="resolved OCI linux.seccomp JSON")
    p.add_argument("output", help="raw BPF output (struct sock_filter[])")
    p.add_argument(
        "--optimize",
        type=int,
        choices=(1, 2),
        default=1,
        help="SCMP_FLTATR_CTL_OPTIMIZE: 1 linear, 2 binary tree",
    )
    p.add_argument("--reps", type=int, default=101)
    p.add_argument(
        "--numbers-out",
        metavar="FILE",
        help="also write {name: x86_64 number} for the names "
        "libseccomp resolves, so gvisor/ can compile the same set",
    )
    opts = p.parse_args()

    with open(opts.policy) as fp:
        policy = json.load(fp)
    skipped = unknown_names(policy)
    skip = set(skipped)
    if skipped:
        print(
            "libseccomp: skipped unknown syscalls: " + " ".join(skipped),
            file=sys.stderr,
        )

    if opts.numbers_out:
        write_numbers(policy, opts.numbers_out)

    # libseccomp generates BPF lazily inside export, so the build is timed in
    # two phases: rule insertion and BPF generation (into /dev/null, to keep
    # file I/O out).
    total, rules, gen = [], [], []
    with open(os.devnull, "wb") as null:
        for _ in range(opts.reps):
            t0 = time.perf_counter_ns()
            f = build(policy, opts.optimize, skip)
            t1 = time.perf_counter_ns()
            f.export_bpf(null)
            t2 = time.perf_counter_ns()
            total.append(t2 - t0)
            rules.append(t1 - t0)
            gen.append(t2 - t1)
    with open(opts.output, "wb") as out:
        f.export_bpf(out)

    n = os.path.getsize(opts.output) // 8
    print(
        f"{n} instructions, build {median_us(total):.0f} us = rules "
        f"{median_us(rules):.0f} + bpf {median_us(gen):.0f} "
        f"(median of {opts.reps})"
    )


def median_us(ns):
    return statistics.median(ns) / 1000


if __name__ == "__main__":
    main()
