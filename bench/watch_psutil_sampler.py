#!/usr/bin/python3
"""The yardstick for bench/watch_cost.py: a memory sampler built on psutil, as
one would write it in Python. Every PERIOD it takes memory_info() (RSS, from
/proc/PID/statm) and memory_maps() (one entry per mapped path, from
/proc/PID/smaps) of PID and counts the mappings, until DURATION has passed.
Prints one JSON line: samples taken and the CPU seconds spent per sample.

  watch_psutil_sampler.py PID [--period 0.1] [--duration 10]
"""
import argparse
import json
import time

import psutil


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pid", type=int)
    ap.add_argument("--period", type=float, default=0.1)
    ap.add_argument("--duration", type=float, default=10.0)
    a = ap.parse_args()
    proc = psutil.Process(a.pid)
    start = time.monotonic()
    next_t = start
    samples = 0
    sample_cpu = []
    last = None
    while time.monotonic() - start < a.duration:
        c0 = time.process_time()
        rss = proc.memory_info().rss
        maps = proc.memory_maps()
        sample_cpu.append(time.process_time() - c0)
        last = (rss, len(maps))
        samples += 1
        next_t += a.period
        now = time.monotonic()
        if next_t > now:
            time.sleep(next_t - now)
        else:
            next_t = now  # behind: sample again at once, as a real sampler would
    sample_cpu.sort()
    print(json.dumps({"samples": samples, "wall_s": time.monotonic() - start,
                      "median_sample_cpu_s": sample_cpu[len(sample_cpu) // 2] if sample_cpu else None,
                      "last_rss_bytes": last[0] if last else None, "last_map_entries": last[1] if last else None}))


if __name__ == "__main__":
    main()
