#!/usr/bin/env python3
"""How long a new user waits for the README's first command.

Main against a branch, three runs of each, alternating (about 2 x 3 x the
first command's time):

    python3 bench/first_result.py --runs 3 main first

Each run makes a fresh `git clone` of the revision into a temporary directory
and runs `bash scripts/probe.sh` there in a pseudo-terminal (so the probe's
lines arrive as a user sees them), with ccache off (CCACHE_DISABLE=1, no
compiler launcher from the environment): configure, build from nothing, the
probe run. The packages must be installed already (scripts/deps.sh installs
nothing then, it only checks). Per run it prints the seconds to the first
`RESULT` line, to the first line printed (the build is done by then, unless
cmake printed a warning), to the exit, the CPU seconds of the whole command
(user + system of every process it waited for) and the load average before
it started.

With two revisions the runs alternate (A B A B ...), so that a change of load
on a shared machine falls on both, and it prints each revision's median and
range and the ratio B/A of the medians and of each pair. Arguments after `--`
go to scripts/probe.sh (default: none, the README's command).

    python3 bench/first_result.py [--runs N] [--repo DIR] [--keep] REV [REV2] [-- PROBE-ARGS]

--repo: the repository to clone from (default: the one this script is in).
--keep: leave the clones (their paths are printed).
Exit status: 0, or 1 when a run exited with a status other than 0 or 1 or
printed no RESULT line.
"""

import argparse
import os
import pty
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(repo, rev, probe_args, keep):
    """Clones `rev` and times scripts/probe.sh there; returns a dict of figures."""
    work = tempfile.mkdtemp(prefix="extmem-first-result-")
    tree = os.path.join(work, "extmem")
    full = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", rev + "^{commit}"], check=True,
                          capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", repo, tree], check=True)
    subprocess.run(["git", "-C", tree, "checkout", "--quiet", "--detach", full], check=True)
    commit = full[:7]
    env = dict(os.environ, CCACHE_DISABLE="1")
    for name in ("CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_C_COMPILER_LAUNCHER", "CMAKE_BUILD_PARALLEL_LEVEL",
                 "CMAKE_GENERATOR", "CXXFLAGS", "CFLAGS", "LDFLAGS"):
        env.pop(name, None)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tree)
        os.execvpe("bash", ["bash", "scripts/probe.sh", *probe_args], env)
    first_line = first_result = None
    pending = b""
    lines = []
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        now = time.monotonic() - start
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            line = raw.decode(errors="replace").rstrip("\r")
            lines.append(line)
            if first_line is None and line.strip():
                first_line = now
            if first_result is None and line.startswith("RESULT "):
                first_result = now
    _, status = os.waitpid(pid, 0)
    end = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    os.close(fd)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if keep:
        print(f"  kept {tree}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    summary = next((l for l in reversed(lines) if " OK, " in l and " SKIP" in l), "")
    return {"rev": rev, "commit": commit, "first_result": first_result, "first_line": first_line, "end": end,
            "cpu": cpu, "load": load, "exit": os.waitstatus_to_exitcode(status), "summary": summary,
            "tail": lines[-5:]}


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def spread(values, digits=1):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main():
    argv = sys.argv[1:]
    probe_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, probe_args = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description="Seconds to the first RESULT line of scripts/probe.sh from a clean clone.")
    ap.add_argument("--runs", type=int, default=3, help="runs of each revision (default 3)")
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--keep", action="store_true", help="leave the clones")
    ap.add_argument("revs", nargs="+", metavar="REV")
    a = ap.parse_args(argv)
    if len(a.revs) > 2 or a.runs < 1:
        ap.error("one or two revisions, at least one run")

    print(f"{os.cpu_count()} CPUs; bash scripts/probe.sh {' '.join(probe_args)} from a clean clone, ccache off; "
          f"seconds from its start (CPU: user + system of the whole command)")
    results = {rev: [] for rev in a.revs}
    bad = False
    for n in range(a.runs):
        for rev in a.revs:
            r = run_once(a.repo, rev, probe_args, a.keep)
            results[rev].append(r)
            print(f"run {n + 1} {rev} ({r['commit']}): first RESULT {fmt(r['first_result'])}  first line "
                  f"{fmt(r['first_line'])}  exit {fmt(r['end'])} (status {r['exit']})  CPU {fmt(r['cpu'])}  "
                  f"load {r['load']:.1f}  | {r['summary']}", flush=True)
            if r["exit"] not in (0, 1) or r["first_result"] is None:
                bad = True
                print("  last lines: " + " / ".join(r["tail"]), flush=True)

    print()
    for rev, rs in results.items():
        print(f"{rev} ({rs[0]['commit']}), {len(rs)} runs, median [min-max]: first RESULT "
              f"{spread([r['first_result'] for r in rs])}  exit {spread([r['end'] for r in rs])}  CPU "
              f"{spread([r['cpu'] for r in rs])}")
    if len(a.revs) == 2:
        ra, rb = results[a.revs[0]], results[a.revs[1]]
        for key, what in (("first_result", "first RESULT"), ("end", "exit"), ("cpu", "CPU")):
            pairs = [b[key] / x[key] for x, b in zip(ra, rb) if x[key] and b[key] is not None]
            ma = [r[key] for r in ra if r[key] is not None]
            mb = [r[key] for r in rb if r[key] is not None]
            if ma and mb and pairs:
                print(f"{what}: {a.revs[1]}/{a.revs[0]} = {statistics.median(mb) / statistics.median(ma):.2f} "
                      f"(medians); pairs {spread(pairs, 2)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
