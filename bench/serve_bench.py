#!/usr/bin/env python3
"""The targets of extmem probe serve / --peer (docs/serve.md), measured side by side.

1. One tree: `extmem probe` (A) against a fresh `extmem probe serve
   --sessions=1` started beside `extmem probe --peer` on a path endpoint (B),
   the same rows, alternating A B A B; wall time of the whole of each (B: from
   starting the server to both having exited). Target B/A <= 1.2.
2. A warm server: the driving side's wall time in the first session of a fresh
   server against the second session of the same server. Target second/first <= 0.6.
3. Twenty sessions on one server: its RSS (VmRSS) and open fds after the first
   and after the twentieth. Targets: RSS within 5 %, fds equal.

  python3 bench/serve_bench.py --extmem build-probe/extmem --runs 7 [-- PROBE ARGS]

Each run's exit code must match the first's, so a broken run cannot look fast.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def wait_for(path, what, timeout=120):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if os.path.exists(path) and what in open(path).read():
            return
        time.sleep(0.01)
    sys.exit(f"{path}: no '{what}' within {timeout} s:\n" + (open(path).read() if os.path.exists(path) else ""))


def run(cmd):
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, code


def start_server(extmem, sock, out, sessions):
    log = open(out, "w")
    return subprocess.Popen([extmem, "probe", "serve", f"--endpoint={sock}", f"--sessions={sessions}"],
                            stdout=log, stderr=subprocess.STDOUT)


def one_tree_pair(extmem, args, tmp):
    """B: the server and the driving side in one tree, timed from the server's start."""
    sock, out = os.path.join(tmp, "sock"), os.path.join(tmp, "serve.out")
    start = time.perf_counter()
    server = start_server(extmem, sock, out, 1)
    while not os.path.exists(sock):  # bound before its drivers start: the hello then waits for them
        if server.poll() is not None:
            sys.exit(open(out).read())
        time.sleep(0.001)
    code = subprocess.run([extmem, "probe", f"--peer={sock}", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    server.wait()
    return time.perf_counter() - start, code


def status_of(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def summary(values):
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--extmem", required=True)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("probe_args", nargs="*")
    o = p.parse_args()
    extmem, args = os.path.realpath(o.extmem), o.probe_args
    tmp = tempfile.mkdtemp(prefix="extmem-serve-bench-")

    # 1. one tree, alternating, after a warm-up of each
    a_code = run([extmem, "probe", *args])[1]
    b_code = one_tree_pair(extmem, args, tmp)[1]
    a_wall, b_wall = [], []
    for _ in range(o.runs):
        wall, code = run([extmem, "probe", *args])
        if code != a_code:
            sys.exit(f"the single tree exited {code}, its warm-up {a_code}")
        a_wall.append(wall)
        wall, code = one_tree_pair(extmem, args, tmp)
        if code != b_code:
            sys.exit(f"serve + --peer exited {code}, its warm-up {b_code}")
        b_wall.append(wall)
    print(f"extmem probe {' '.join(args) or '(defaults)'}: {o.runs} alternating runs each, after a warm-up")
    print(f"  A single tree          wall {summary(a_wall)}")
    print(f"  B serve + --peer (path) wall {summary(b_wall)}")
    print(f"  B/A median wall {statistics.median(b_wall) / statistics.median(a_wall):.2f} (target <= 1.2)")

    # 2. first against second session, one fresh server per pair
    first, second = [], []
    for _ in range(o.runs):
        sock, out = os.path.join(tmp, "sock2"), os.path.join(tmp, "serve2.out")
        server = start_server(extmem, sock, out, 2)
        while not os.path.exists(sock):
            time.sleep(0.001)
        first.append(run([extmem, "probe", f"--peer={sock}", *args])[0])
        second.append(run([extmem, "probe", f"--peer={sock}", *args])[0])
        server.wait()
    print(f"  driving side, first session of a fresh server  wall {summary(first)}")
    print(f"  driving side, second session (warm server)     wall {summary(second)}")
    print(f"  second/first median wall {statistics.median(second) / statistics.median(first):.2f} (target <= 0.6)")

    # 3. twenty sessions on one server
    sock, out = os.path.join(tmp, "sock3"), os.path.join(tmp, "serve3.out")
    server = start_server(extmem, sock, out, 21)
    wait_for(out, "== serving on")
    rss, fds = [], []
    for s in range(1, 21):
        if run([extmem, "probe", f"--peer={sock}", *args])[1] != b_code:
            sys.exit(f"session {s} exited differently from the others")
        wait_for(out, f"session {s}:")
        rss.append(status_of(server.pid, "VmRSS"))
        fds.append(len(os.listdir(f"/proc/{server.pid}/fd")))
    server.kill()
    server.wait()
    print(f"  serving process after session 1: VmRSS {rss[0]} KiB, {fds[0]} fds; after session 20: VmRSS {rss[-1]} KiB, "
          f"{fds[-1]} fds; RSS {100.0 * (rss[-1] - rss[0]) / rss[0]:+.1f} % (target within 5 %), fds "
          f"{'equal' if fds[0] == fds[-1] else 'differ'} (target equal)")
    print(f"  VmRSS per session (KiB): {' '.join(map(str, rss))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
