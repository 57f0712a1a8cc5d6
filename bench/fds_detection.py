#!/usr/bin/python3
"""Detection rate of `extmem fds`: a reader opens a file, reads 299 bytes and
closes it every 10 ms, keeping it open 1 ms (build/tests/programs/fds_opener);
`extmem fds` samples its /proc/PID/fd for the same time. Rate = opens the tool
saw / opens the reader made. Side by side in alternating rounds: the 1 ms
sampler against a 150 ms one (the period of the sampler that missed such a
reader every time). A benchmark, not a test.

  python3 bench/fds_detection.py [--opens 500] [--rounds 3] [--build build]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def one_run(build, period, opens):
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "data")
        with open(f, "wb") as out:
            out.write(os.urandom(4096))
        opener = subprocess.Popen([os.path.join(build, "tests/programs/fds_opener"), f, "10000", "1000", str(opens)],
                                  stdout=subprocess.PIPE, text=True)
        duration = opens * 0.010 + 0.5  # outlives the reader: the tool stops when it exits
        p = subprocess.run([os.path.join(build, "extmem"), "fds", f"--pid={opener.pid}", f"--period={period}",
                            f"--duration={duration}s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        made = int(opener.stdout.read().split()[1])
        opener.wait()
        m = re.search(re.escape(f) + r"\n    opens seen (\d+)", p.stdout)
        seen = int(m.group(1)) if m else 0
        head = p.stdout.splitlines()[0] if p.stdout else p.stderr
        return seen, made, head


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opens", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; reader: open, read 299 bytes, hold 1 ms, close, every 10 ms; {a.opens} opens a run")
    rates = {"1ms": [], "150ms": []}
    for r in range(a.rounds):
        for period in ("1ms", "150ms"):
            seen, made, head = one_run(a.build, period, a.opens)
            rates[period].append(seen / made)
            print(f"round {r + 1} --period={period}: saw {seen} of {made} opens = {100 * seen / made:.1f} %  ({head.split(': ', 1)[-1]})")
    for period, v in rates.items():
        print(f"median --period={period}: {100 * sorted(v)[len(v) // 2]:.1f} % of opens seen")


if __name__ == "__main__":
    main()
