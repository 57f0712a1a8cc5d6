#!/usr/bin/env python3
"""A/B timing of two `extmem probe` binaries on the same machine, alternating.

Runs A and B in turn (A B A B ...) after one untimed warm-up of each, so load
on a shared machine hits both alike; for each it reports the median and
min-max of the wall time and of the CPU time of the whole process tree (user +
system of the probe and every child and worker it reaped, from wait4), and the
ratios B/A of the medians. Each run's exit code must match the first run's, so
a broken binary cannot look fast.

  bench/probe_ab.py --a /tmp/base/build/extmem --b build/extmem --runs 9
  bench/probe_ab.py --a OLD --b NEW --runs 9 -- --only=T1-opaque-fd,T3-memfd-cross-process

Arguments after `--` go to `extmem probe` (both binaries).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def one_run(binary, args):
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "probe", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, code


def summary(values):
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the reference binary (e.g. built from an older commit)")
    p.add_argument("--b", required=True, help="the binary under test")
    p.add_argument("--runs", type=int, default=9, help="timed runs of each (default 9)")
    p.add_argument("probe_args", nargs="*", help="arguments for extmem probe (after --)")
    o = p.parse_args()
    if o.runs < 1:
        p.error("--runs must be at least 1")
    for b in (o.a, o.b):
        if not os.access(b, os.X_OK):
            p.error(f"{b}: not an executable file")
    results = {"A": {"wall": [], "cpu": [], "code": None}, "B": {"wall": [], "cpu": [], "code": None}}
    for name, binary in (("A", o.a), ("B", o.b)):
        results[name]["code"] = one_run(binary, o.probe_args)[2]  # warm-up: page cache, driver caches
    for _ in range(o.runs):
        for name, binary in (("A", o.a), ("B", o.b)):
            wall, cpu, code = one_run(binary, o.probe_args)
            if code != results[name]["code"]:
                sys.exit(f"{name} ({binary}) exited {code}, its warm-up exited {results[name]['code']}")
            results[name]["wall"].append(wall)
            results[name]["cpu"].append(cpu)
    print(f"extmem probe {' '.join(o.probe_args) or '(defaults)'}: {o.runs} alternating runs each, after a warm-up")
    for name, binary in (("A", o.a), ("B", o.b)):
        r = results[name]
        print(f"  {name} {binary}: wall {summary(r['wall'])}, cpu {summary(r['cpu'])}, exit {r['code']}")
    ra = statistics.median(results["B"]["wall"]) / statistics.median(results["A"]["wall"])
    rc = statistics.median(results["B"]["cpu"]) / statistics.median(results["A"]["cpu"])
    print(f"  B/A: wall x{ra:.2f}, cpu x{rc:.2f}")


if __name__ == "__main__":
    main()
