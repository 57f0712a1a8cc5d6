#!/usr/bin/python3
"""Side-by-side cost of `extmem watch` and a psutil sampler on one process
holding ~40 000 mappings, in one run (a benchmark, not a test).

For each sampler, run at 10 Hz for DURATION seconds on the same process:
  * CPU share: the sampler process's user+system CPU (from the kernel's
    accounting of the finished child, getrusage(RUSAGE_CHILDREN)) over its wall time;
  * cost of one full sample: CPU per sample when every sample reads the
    mappings (extmem: --budget=100; psutil: memory_info() + memory_maps()).
extmem is run twice: with --budget=100 (every sample counts the 40 000 map
lines) and with its default budget (map counts spread to stay near 1 % of a
core). Needs python3-psutil (Debian) and a build (cmake --build build).

  python3 bench/watch_cost.py [--mappings 40000] [--duration 10] [--build build]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def run_child(argv):
    """Runs argv to completion; returns (stdout, cpu seconds, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} failed ({proc.returncode}): {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.stdout, cpu, wall


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--mappings", type=int, default=40000)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--build", default=os.path.join(root, "build"))
    a = ap.parse_args()
    extmem = os.path.join(a.build, "extmem")
    holder_bin = os.path.join(a.build, "tests", "programs", "watch_maps_holder")
    holder = subprocess.Popen([holder_bin, f"--mappings={a.mappings}"], stdout=subprocess.PIPE, text=True)
    try:
        ready = holder.stdout.readline().split()
        if len(ready) != 2 or ready[0] != "ready":
            sys.exit(f"holder did not start: {ready}")
        print(f"process {holder.pid} holds {ready[1]} mappings; each sampler runs {a.duration:g} s at 10 Hz\n")
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for label, budget in (("extmem watch --budget=100", "100"), ("extmem watch (default budget 1%)", None)):
                summary = os.path.join(tmp, "s.json")
                argv = [extmem, "watch", f"--pid={holder.pid}", "--period=100ms", f"--duration={a.duration:g}s",
                        f"--summary={summary}"]
                if budget:
                    argv.append(f"--budget={budget}")
                _, cpu, wall = run_child(argv)
                s = json.load(open(summary))
                p = s["processes"][0]
                rows.append({"sampler": label, "samples": s["samples"], "map_reads": s["cost"]["map_reads"],
                             "cpu_s": cpu, "wall_s": wall,
                             "per_full_sample_ms": 1000 * cpu / max(1, s["cost"]["map_reads"]) if budget else None,
                             "peak_mappings": p["peak_mappings"]})
            out, cpu, wall = run_child([sys.executable, os.path.join(root, "bench", "watch_psutil_sampler.py"),
                                        str(holder.pid), "--period", "0.1", "--duration", f"{a.duration:g}"])
            r = json.loads(out)
            rows.append({"sampler": "psutil memory_info()+memory_maps()", "samples": r["samples"],
                         "map_reads": r["samples"], "cpu_s": cpu, "wall_s": wall,
                         "per_full_sample_ms": 1000 * r["median_sample_cpu_s"],
                         "peak_mappings": r["last_map_entries"]})
    finally:
        holder.kill()
        holder.wait()

    print(f"{'sampler':<38} {'samples':>7} {'map reads':>9} {'CPU s':>7} {'wall s':>7} {'CPU share':>9} "
          f"{'ms/full sample':>14}")
    for r in rows:
        per = f"{r['per_full_sample_ms']:.2f}" if r["per_full_sample_ms"] is not None else "-"
        print(f"{r['sampler']:<38} {r['samples']:>7} {r['map_reads']:>9} {r['cpu_s']:>7.3f} {r['wall_s']:>7.2f} "
              f"{100 * r['cpu_s'] / r['wall_s']:>8.2f}% {per:>14}")
    full, default, ps = rows
    print(f"\nfull sample: psutil / extmem = {ps['per_full_sample_ms'] / full['per_full_sample_ms']:.1f}x "
          f"(psutil's memory_maps() lists {ps['peak_mappings']} paths; extmem counted {full['peak_mappings']} mappings)")
    print(f"CPU at 10 Hz: psutil / extmem(default) = {ps['cpu_s'] / default['cpu_s']:.1f}x, "
          f"psutil / extmem(--budget=100) = {ps['cpu_s'] / full['cpu_s']:.1f}x")
    print("(per full sample for extmem = all its CPU over its map reads; for psutil the median CPU of one sample; "
          "psutil samples fewer than 10 times a second when one sample takes longer than 100 ms)")


if __name__ == "__main__":
    main()
