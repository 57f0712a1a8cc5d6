#!/usr/bin/python3
"""CPU cost of `extmem threads --sample` at 1 kHz on a process with 50 threads,
side by side with a naive sampler that opens, reads and closes each thread's
syscall file every reading (a benchmark, not a test).

The target is build/tests/programs/threads_blocker with 47 extra sleeping
threads (50 threads plus its main thread); with --spinners=1 one of the
sleepers is replaced by a thread that never blocks, so the process's CPU time
moves at every reading and extmem's first gate (the process CPU clock) never
spares the per-thread reads. Each sampler runs for DURATION
seconds; runs alternate (extmem, naive, extmem, ...) so both see the same
machine load. CPU share = the finished child's user+system CPU
(getrusage(RUSAGE_CHILDREN)) over its wall time, in % of one core.

  python3 bench/threads_sample_cost.py [--duration 5] [--rounds 3] [--spinners 0|1] [--build build]
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import time

NAIVE = r'''
import os, sys, time
pid, period, duration = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
tids = [t for t in os.listdir(f"/proc/{pid}/task")]
end = time.monotonic() + duration
nxt = time.monotonic()
n = 0
while time.monotonic() < end:
    for t in tids:
        with open(f"/proc/{pid}/task/{t}/syscall") as f:
            f.read()
    n += 1
    nxt += period
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
print(n)
'''


def run_child(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--spinners", type=int, default=0)
    a = ap.parse_args()
    extmem = os.path.join(a.build, "extmem")
    blocker = subprocess.Popen([os.path.join(a.build, "tests/programs/threads_blocker"), "0x1234", str(47 - a.spinners), str(a.spinners)],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = blocker.stdout.readline()
        if line.startswith("seccomp"):
            line = blocker.stdout.readline()
        pid = int(line.split()[1])
        threads = len(os.listdir(f"/proc/{pid}/task"))
        print(f"target pid {pid}: {threads} threads; {os.cpu_count()} CPUs; {a.rounds} rounds of {a.duration} s each")
        results = {"extmem": [], "naive": []}
        for r in range(a.rounds):
            p, cpu, wall = run_child([extmem, "threads", f"--pid={pid}", f"--sample={a.duration}s", "--period=1ms"])
            if p.returncode != 0:
                sys.exit(f"extmem threads exited {p.returncode}: {p.stderr}")
            head = p.stdout.splitlines()[0]
            readings = int(re.search(r"(\d+) readings", head).group(1))
            results["extmem"].append(100 * cpu / wall)
            print(f"round {r + 1} extmem: {100 * cpu / wall:5.2f} % of a core, {1e6 * cpu / readings:5.1f} us CPU a reading "
                  f"({head.split(': ', 1)[1]})")
            p, cpu, wall = run_child([sys.executable, "-c", NAIVE, str(pid), "0.001", str(a.duration)])
            results["naive"].append(100 * cpu / wall)
            print(f"round {r + 1} naive open/read/close sampler (python): {100 * cpu / wall:5.2f} % of a core, "
                  f"{1e6 * cpu / int(p.stdout.strip()):5.1f} us CPU a reading ({p.stdout.strip()} readings)")
        e = sorted(results["extmem"])[len(results["extmem"]) // 2]
        n = sorted(results["naive"])[len(results["naive"]) // 2]
        print(f"median: extmem {e:.2f} %, naive {n:.2f} % of one core; naive/extmem = {n / e:.1f}x")
    finally:
        blocker.kill()
        blocker.wait()


if __name__ == "__main__":
    main()
