#!/usr/bin/env python3
"""Bad input to examples/pytorch_alias.py and python/extmem_zerocopy.py: a clear error, never a traceback.

pytorch_bad_input.py SCRIPT LIB: runs SCRIPT (pytorch_alias.py) with out-of-range and empty arguments and
expects exit 2 with the argument and its accepted range on stderr (argparse refuses them before torch is
imported, so torch is not needed), then calls Zerocopy.check_rw from LIB (libextmem.so.0) with lengths and
options ctypes would wrap and expects ValueError naming the argument. Exit 0 when all hold, 1 otherwise.
"""
import os
import subprocess
import sys

script, lib = sys.argv[1], sys.argv[2]
failures = []

for args, words in [
        (["--size=1099511627777"], ["--size", "from 1 to 1099511627776"]),
        (["--size=99999999999999999999999"], ["--size", "from 1 to"]),
        (["--size=0"], ["--size", "from 1 to"]),
        (["--size=1", "--view-offset=1099511627776"], ["--view-offset", "from 0 to 1099511627775"]),
        (["--view-offset=-1"], ["--view-offset", "from 0 to"]),
        (["--lib="], ["--lib", "empty"])]:
    r = subprocess.run([sys.executable, script, "--device=cpu"] + args, capture_output=True, text=True, timeout=60)
    ok = r.returncode == 2 and all(w in r.stderr for w in words) and "Traceback" not in r.stderr
    if not ok:
        failures.append("%s: exit %d, stderr %r (wanted exit 2 and %r)" % (args, r.returncode, r.stderr, words))

# A tensor torch cannot allocate (1 TiB of CPU memory): exit 7 with the byte count, no traceback; exit 3
# (torch not importable) leaves this part untested here.
r = subprocess.run([sys.executable, script, "--device=cpu", "--lib=" + lib, "--size=1099511627776"],
                   capture_output=True, text=True, timeout=120)
if r.returncode != 3 and (r.returncode != 7 or "cannot allocate 1099511627776 bytes on cpu" not in r.stderr or
                          "Traceback" in r.stderr):
    failures.append("1 TiB tensor: exit %d, stderr %r (wanted exit 7, 'cannot allocate ... on cpu')" %
                    (r.returncode, r.stderr))

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(script)), "..", "python"))
from extmem_zerocopy import Zerocopy  # noqa: E402

zc = Zerocopy.load(lib)
memory = bytearray(8192)


def read(offset, n):
    return bytes(memory[offset:offset + n])


def write(offset, data):
    memory[offset:offset + len(data)] = data


for kwargs, word in [({"length": -1}, "length=-1"), ({"length": 2**64 + 5}, "length="),
                     ({"length": 8192.0}, "length="), ({"length": 8192, "random_offsets": -1}, "random_offsets=-1"),
                     ({"length": 8192, "random_offsets": 10**9}, "random_offsets=1000000000"),
                     ({"length": 8192, "boundary_pages": 2**64}, "boundary_pages="),
                     ({"length": 8192, "seed": -1}, "seed=-1"),
                     ({"length": 8192, "producer_address": -5}, "producer_address=-5")]:
    length = kwargs.pop("length")
    try:
        v = zc.check_rw(length, read, write, read, **kwargs)
        failures.append("check_rw(%r, %r) returned %s instead of raising ValueError" % (length, kwargs, v.status_name))
    except ValueError as e:
        if word not in str(e) or "accepted" not in str(e):
            failures.append("check_rw(%r, %r): %s (wanted %r and the accepted range)" % (length, kwargs, e, word))
v = zc.check_rw(8192, read, write, read, random_offsets=1 << 20)
if not v.alias:
    failures.append("check_rw at the maximum random_offsets: %s %s" % (v.status_name, v.message))

for f in failures:
    print("FAIL: " + f, file=sys.stderr)
print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
