#!/usr/bin/env python3
"""The probe's fleet contracts, run against the real `extmem probe` on lavapipe (docs/fleet.md).

Usage: probe_fleet.py CASE EXTMEM_BINARY SOURCE_DIR
CASE: require, expect, bad-input, npd, prometheus, ctrf, json.
Exit 0: every check held; 1: one failed (each failure printed); 77: a tool the case
needs is not installed (ctest reports SKIP; scripts/deps.sh --tests installs it).
T1-opaque-fd is OK on lavapipe; the CUDA rows are SKIP there (no CUDA driver).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

case, binary, source = sys.argv[1], sys.argv[2], sys.argv[3]
tmp = tempfile.mkdtemp(prefix="extmem-fleet-")
failures = []


def probe(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([binary, "probe", *args], capture_output=True, text=True, env=e, timeout=300)


def check(ok, what, r=None):
    if not ok:
        failures.append(what + (f"\n  exit {r.returncode}\n  stdout: {r.stdout[-2000:]}\n  stderr: {r.stderr[-1000:]}"
                                if r is not None else ""))


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def require_tool(tool, package):
    from shutil import which
    if which(tool) is None:
        print(f"SKIP: {tool} is not installed (Debian package {package}; scripts/deps.sh --tests installs it)")
        sys.exit(77)


if case == "require":
    # A required row that is OK: health OK, exit 0.
    r = probe("--only=T1-opaque-fd", "--require=T1-opaque-fd")
    check(r.returncode == 0 and "== health: OK (1 required row, 0 problems)" in r.stdout, "required OK row", r)
    # Failing closed: a required row that SKIPs is a problem with its own code.
    r = probe("--only=T1-opaque-fd,T1-opaque-fd-cuda", "--require=T1-opaque-fd,T1-opaque-fd-cuda")
    check(r.returncode == 1 and re.search(r"^problem T1-opaque-fd-cuda SKIP EM106 required-row-skipped", r.stdout, re.M),
          "required SKIP row fails with EM106", r)
    # A required run that this run did not make (no @pidfd twin without --fd-transport) fails closed.
    r = probe("--only=T1-opaque-fd", "--require=T1-opaque-fd@pidfd")
    check(r.returncode == 1 and re.search(r"^problem T1-opaque-fd@pidfd absent EM105 required-row-missing", r.stdout, re.M),
          "required run absent fails with EM105", r)
    # --require-group: every row of the group counts, so the t1 CUDA rows SKIP and fail it.
    r = probe("--only-t1", "--require-group=t1")
    check(r.returncode == 1 and "problem T1-cuda-ipc SKIP EM106" in r.stdout, "required group with SKIP rows fails", r)
    # Without --require a non-failing run is healthy even though rows SKIP (the plain exit rule).
    r = probe("--only=T1-opaque-fd,T1-opaque-fd-cuda")
    check(r.returncode == 0 and "== health" not in r.stdout, "no --require: plain exit rule, no health section", r)
elif case == "expect":
    good = write("good.baseline", "# lavapipe\nT1-opaque-fd OK\nT1-opaque-fd-cuda SKIP\n"
                                  "T1-opaque-fd FAIL device=NoSuchGpu\n")
    r = probe("--only=T1-opaque-fd,T1-opaque-fd-cuda", f"--expect={good}")
    check(r.returncode == 0 and "== health: OK" in r.stdout, "baseline met (the unmatched device line ignored)", r)
    # The most specific matching line wins: a driver-qualified FAIL for llvmpipe overrides the plain OK.
    bad = write("bad.baseline", "T1-opaque-fd OK\nT1-opaque-fd FAIL driver=llvmpipe\n")
    r = probe("--only=T1-opaque-fd", f"--expect={bad}")
    check(r.returncode == 1 and re.search(r"^problem T1-opaque-fd OK EM107 differs-from-baseline expected FAIL", r.stdout, re.M),
          "baseline difference fails with EM107", r)
elif case == "bad-input":
    r = probe("--only=T1-opaque-fd", "--require=NoSuchRow")
    check(r.returncode == 2 and 'extmem probe: --require: unknown row "NoSuchRow"; accepted:' in r.stderr and not r.stdout,
          "unknown required row: exit 2, named, nothing run", r)
    r = probe("--only=T1-opaque-fd", "--require-group=nosuchgroup")
    check(r.returncode == 2 and 'unknown group "nosuchgroup"; groups: ' in r.stderr, "unknown group: exit 2", r)
    for text, said in [("T1-opaque-fd\n", '"T1-opaque-fd" has no status'), ("T1-opaque-fd MAYBE\n", 'unknown status "MAYBE"'),
                       ("NoSuchRow OK\n", 'unknown row "NoSuchRow"'), ("T1-opaque-fd OK gpu=x\n", '"gpu=x" is not a qualifier')]:
        path = write("malformed.baseline", "# comment\n" + text)
        r = probe("--only=T1-opaque-fd", f"--expect={path}")
        check(r.returncode == 2 and f"--expect: {path}:2: {said}; accepted: lines" in r.stderr,
              f"malformed baseline {text.strip()!r}: exit 2 naming line 2", r)
    r = probe("--only=T1-opaque-fd", f"--expect={tmp}/absent.baseline")
    check(r.returncode == 2 and "cannot be read" in r.stderr, "unreadable baseline: exit 2", r)
elif case == "npd":
    def one_line(r):
        lines = r.stdout.split("\n")
        return len(lines) == 2 and lines[1] == "" and len(lines[0].encode()) <= 80 and lines[0] != ""
    r = probe("--npd", "--only=T1-opaque-fd", "--require=T1-opaque-fd")
    check(r.returncode == 0 and one_line(r) and r.stdout == "OK: 1 required row OK\n", "NPD OK: exit 0, one line", r)
    r = probe("--npd", "--only=T1-opaque-fd,T1-opaque-fd-cuda", "--require=T1-opaque-fd-cuda,T1-opaque-fd")
    check(r.returncode == 1 and one_line(r) and r.stdout.startswith("T1-opaque-fd-cuda SKIP EM106"),
          "NPD problem: exit 1, the first required row not OK and its code", r)
    # Unknown: the Vulkan driver cannot start (no ICD), so the run decides nothing.
    r = probe("--npd", "--only=T1-opaque-fd", "--require=T1-opaque-fd",
              env={"VK_ICD_FILENAMES": "/nonexistent.json", "VK_DRIVER_FILES": "/nonexistent.json"})
    check(r.returncode == 2 and one_line(r) and r.stdout.startswith("unknown: cannot run"), "NPD unknown: exit 2", r)
    # Timeout: a route that outlives --timeout is that row's problem, with the step it was in.
    r = probe("--npd", "--only=T1-opaque-fd", "--require=T1-opaque-fd", "--timeout=1ms")
    check(r.returncode == 1 and one_line(r) and r.stdout.startswith("T1-opaque-fd FAIL EM5"),
          "NPD timeout: exit 1 naming the row and a harness code", r)
    # The shipped NPD config: what NPD's own Validate() requires, and every rule run through the real probe.
    cfg = json.load(open(os.path.join(source, "docs/fleet/npd-extmem-probe.json")))
    check(cfg["plugin"] == "custom", "config: plugin custom")
    conditions = {c["type"] for c in cfg["conditions"]}
    check("GpuMemorySharing" in conditions, "config: condition GpuMemorySharing has a default")
    kinds = {rule["type"] for rule in cfg["rules"]}
    check(kinds == {"temporary", "permanent"}, f"config: a temporary and a permanent rule: {kinds}")
    seconds = lambda d: int(d[:-1]) * {"s": 1, "m": 60}[d[-1]]
    limit = cfg["pluginConfig"]["max_output_length"]
    for rule in cfg["rules"]:
        check(rule["type"] != "permanent" or rule["condition"] in conditions, f"config: {rule['reason']} condition")
        check(seconds(rule["timeout"]) <= seconds(cfg["pluginConfig"]["timeout"]), f"config: {rule['reason']} timeout")
        args = [a.replace("/var/lib/node-exporter/textfile", tmp) for a in rule["args"]]
        check(args[0] == "probe", f"config: {rule['reason']} runs extmem probe")
        r = probe(*args[1:])
        lines = r.stdout.split("\n")
        check(r.returncode in (0, 1, 2) and len(lines) == 2 and len(lines[0].encode()) <= limit,
              f"config rule {rule['reason']} keeps the contract", r)
    # Bad input is unknown too, still one line.
    r = probe("--npd", "--require=NoSuchRow")
    check(r.returncode == 2 and one_line(r) and r.stdout.startswith("unknown: --require: unknown row"), "NPD bad input", r)
elif case == "prometheus":
    require_tool("promtool", "prometheus")
    require_tool("prometheus-node-exporter", "prometheus-node-exporter")
    textdir = os.path.join(tmp, "textfile")
    os.mkdir(textdir)
    prom = os.path.join(textdir, "extmem.prom")
    # --measure on a small allocation, once: its figures become the bandwidth and latency gauges.
    r = probe("--only=T1-opaque-fd,T1-opaque-fd-cuda", "--measure", "--measure-size=1048576", "--measure-repeats=1",
              f"--prometheus={prom}")
    check(r.returncode == 0 and os.path.exists(prom), "probe wrote the textfile", r)
    text = open(prom).read() if os.path.exists(prom) else ""
    check(not [f for f in os.listdir(textdir) if f != "extmem.prom"], "no temporary file left beside it")
    pc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    check(pc.returncode == 0, f"promtool check metrics: {pc.stdout}{pc.stderr}")
    print(f"promtool check metrics: exit {pc.returncode} {pc.stdout.strip()} {pc.stderr.strip()}")
    # Negative control: promtool refuses a broken exposition, so the check above can fail.
    bad = subprocess.run(["promtool", "check", "metrics"], input=text.replace("# TYPE extmem_probe_row_status gauge",
                         "# TYPE extmem_probe_row_status gauge\n# TYPE extmem_probe_row_status counter"),
                         capture_output=True, text=True)
    check(bad.returncode != 0, "promtool accepted a doubled TYPE line: the check cannot fail")
    # The real consumer: node_exporter's textfile collector on a loopback port, scraped over HTTP.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ne = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{port}",
                           "--collector.disable-defaults", "--collector.textfile",
                           f"--collector.textfile.directory={textdir}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    body = ""
    try:
        for _ in range(100):  # until it listens (bounded: 10 s), not a timing assertion
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.1)
    finally:
        ne.terminate()
        ne.wait(10)
    served = [l for l in body.splitlines() if l.startswith("extmem_probe_")]
    print("node_exporter served:\n  " + "\n  ".join(served[:6]))
    check(re.search(r'^extmem_probe_row_status\{code="",device="[^"]+",device_uuid="[0-9a-f]{32}",driver="[^"]*",'
                    r'driver_version="[^"]*",fd_transport="scm",row="T1-opaque-fd"\} 0$', body, re.M),
          "node_exporter serves T1-opaque-fd's status 0 with its labels:\n" + "\n".join(served))
    check(re.search(r'^extmem_probe_row_status\{code="EM101",.*row="T1-dma-buf"\} 4$', body, re.M),
          "node_exporter serves a filtered row as SKIP (4) with EM101")
    check(re.search(r'^extmem_probe_health 1$', body, re.M), "health gauge served")
    check(re.search(r'^extmem_probe_bandwidth_bytes_per_second\{[^}]*figure="gpu_out",leg="gpu",row="T1-opaque-fd"\} '
                    r'[0-9.e+]+$', body, re.M), "node_exporter serves the --measure gpu_out bandwidth of T1-opaque-fd")
    check(re.search(r'^extmem_probe_latency_seconds\{[^}]*figure="export",leg="",row="T1-opaque-fd"\} [0-9.e+-]+$',
                    body, re.M), "node_exporter serves the --measure export latency of T1-opaque-fd")
    check('node_textfile_scrape_error 0' in body, "textfile collector reported no scrape error")
elif case == "ctrf":
    schema = os.path.join(source, "tests/data/ctrf.schema.json")
    out = os.path.join(tmp, "run.ctrf.json")
    r = probe("--only=T1-opaque-fd,T1-opaque-fd-cuda", f"--ctrf={out}")
    check(r.returncode == 0 and os.path.exists(out), "probe wrote the CTRF report", r)
    import jsonschema
    sch = json.load(open(schema))
    cls = jsonschema.validators.validator_for(sch)
    cls.check_schema(sch)
    doc = json.load(open(out)) if os.path.exists(out) else {}
    errors = [e.message for e in cls(sch, format_checker=cls.FORMAT_CHECKER).iter_errors(doc)]
    print(f"CTRF validation against {schema}: {len(errors)} errors")
    check(not errors, "CTRF report validates: " + "; ".join(errors[:5]))
    tests = {t["name"]: t for t in doc.get("results", {}).get("tests", [])}
    check(tests.get("T1-opaque-fd", {}).get("status") == "passed", "T1-opaque-fd passed")
    cuda = tests.get("T1-opaque-fd-cuda", {})
    check(cuda.get("status") == "skipped" and cuda.get("extra", {}).get("code") == "EM301",
          f"the CUDA row skipped with EM301: {cuda}")
    summary = doc.get("results", {}).get("summary", {})
    check(summary.get("tests") == len(tests) and summary.get("passed", 0) + summary.get("failed", 0) +
          summary.get("skipped", 0) + summary.get("other", 0) == len(tests), "summary counts add up")
    # Negative control: the schema refuses a status CTRF does not have.
    if tests:
        doc["results"]["tests"][0]["status"] = "OK"
        check(list(cls(sch).iter_errors(doc)), "the schema accepted status \"OK\": the check cannot fail")
elif case == "json":
    # The run's health in the --json document: what --npd says, typed, and valid against the schema.
    import jsonschema
    sch = json.load(open(os.path.join(source, "docs/probe-result.schema.json")))
    cls = jsonschema.validators.validator_for(sch)

    def document(*args):
        out = os.path.join(tmp, "run.json")
        if os.path.exists(out):
            os.remove(out)
        r = probe(*args, f"--json={out}")
        doc = json.load(open(out)) if os.path.exists(out) else {}
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in cls(sch).iter_errors(doc)]
        check(doc and not errors, f"{args}: the document validates: " + "; ".join(errors[:5]), r)
        return r, doc.get("health", {})

    r, h = document("--only=T1-opaque-fd", "--require=T1-opaque-fd")
    check(r.returncode == 0 and h == {"ok": True, "rule": "required", "baseline": False, "required": ["T1-opaque-fd"],
                                      "problems": []}, f"healthy required run: {h}", r)
    # Failing closed: the problems as the text's health section lists them, codes typed.
    r, h = document("--only=T1-opaque-fd,T1-opaque-fd-cuda", "--require=T1-opaque-fd-cuda,T1-opaque-fd@pidfd")
    p = h.get("problems", [])
    check(r.returncode == 1 and h.get("ok") is False and [x["row"] for x in p] == ["T1-opaque-fd@pidfd", "T1-opaque-fd-cuda"]
          and p[0]["status"] == "absent" and p[0]["code"]["id"] == "EM105" and p[1]["status"] == "SKIP"
          and p[1]["code"] == {"id": "EM106", "class": "config", "name": "required-row-skipped",
                               "action": p[1]["code"].get("action", "")} and p[1]["expected"] is None,
          f"required problems in the JSON: {h}", r)
    npd = probe("--npd", "--only=T1-opaque-fd,T1-opaque-fd-cuda", "--require=T1-opaque-fd-cuda,T1-opaque-fd@pidfd")
    check(p and npd.stdout.startswith(f"{p[0]['row']} {p[0]['status']} {p[0]['code']['id']}"),
          "--npd names the JSON's first problem", npd)
    # A baseline difference: expected is the baseline's status.
    base = write("json.baseline", "T1-opaque-fd FAIL\n")
    r, h = document("--only=T1-opaque-fd", f"--expect={base}")
    p = h.get("problems", [])
    check(r.returncode == 1 and h.get("rule") == "plain" and h.get("baseline") is True and len(p) == 1
          and p[0]["expected"] == "FAIL" and p[0]["status"] == "OK" and p[0]["code"]["id"] == "EM107",
          f"baseline difference in the JSON: {h}", r)
    # The plain rule without fleet options: healthy, and the host is recorded for the report's node label.
    r, h = document("--only=T1-opaque-fd")
    check(h.get("ok") is True and h.get("rule") == "plain" and h.get("required") == [], f"plain run: {h}", r)
    doc = json.load(open(os.path.join(tmp, "run.json")))
    check(doc["context"].get("hostname") == os.uname().nodename, f"context.hostname: {doc['context']}")
    # Negative control: the schema refuses a health without its verdict.
    del doc["health"]["ok"]
    check(list(cls(sch).iter_errors(doc)), "the schema accepted a health without ok: the check cannot fail")
else:
    print(f"unknown case {case}")
    sys.exit(2)

for f in failures:
    print("FAIL: " + f)
print(f"{case}: {'ok' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
