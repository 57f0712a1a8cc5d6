#!/usr/bin/env python3
"""Does a tensor sent to another process with torch.multiprocessing alias the sender's memory?

The parent makes a uint8 tensor (on CUDA, or on the CPU in shared memory), spawns a child with the spawn
context, sends it the tensor over a pipe and runs extmem's check (extmem_zc_check_rw, through
python/extmem_zerocopy.py): the parent writes a sentinel byte into its own tensor at each probed offset, asks
the child for its current byte there, then writes the original back and asks again. Then it sends
`tensor.clone()` instead, a copy, which must be reported as one. See docs/recipes/pytorch.md.

Exit codes: 0 every verdict right (the shared tensor an alias, the clone a copy); 1 a check could not be
completed (a callback failed, the child died); 2 usage; 3 torch not importable; 4 libextmem.so.0 not
found; 5 a verdict wrong; 6 the device asked for is not available (no CUDA device); 7 the tensor (or its
clone) could not be allocated on the device (the message says how many bytes where).
"""

import argparse
import os
import sys

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_NO_TORCH, EXIT_NO_LIB, EXIT_WRONG, EXIT_NO_DEVICE = 0, 1, 2, 3, 4, 5, 6
EXIT_NO_MEMORY = 7
MAX_BYTES = 1 << 40  # --view-offset + --size, bytes: 1 TiB, beyond any device this runs on
PATTERN_CHUNK = 1 << 24  # bytes of the pattern written per step: the only memory besides the tensor
ALLOC_CONF = {"default": None, "expandable": "expandable_segments:True"}
REPLY_TIMEOUT_S = 60  # a child that does not answer a read in this time fails the check (ETIMEDOUT)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def set_allocator(allocator):
    """Sets PYTORCH_CUDA_ALLOC_CONF for this process, before anything initialises CUDA (the child inherits it)."""
    conf = ALLOC_CONF[allocator]
    if conf is None:
        os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    else:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf


# ---- the child: holds what it is sent and answers reads of its own bytes ----

def child_main(conn, allocator, snapshot):
    # Before the first tensor arrives: unpickling a CUDA tensor initialises CUDA.
    set_allocator(allocator)
    import torch

    tensors = {}
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        if msg[0] == "tensor":
            _, name, t = msg
            # --child-snapshots: keep a private copy, so the "alias" is really a copy (the harness's own test).
            tensors[name] = t.clone() if snapshot else t
            t = tensors[name]
            conn.send(("ok", {"pid": os.getpid(), "data_ptr": t.data_ptr(), "device": str(t.device),
                              "is_shared": t.is_shared(), "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF")}))
        elif msg[0] == "read":
            _, name, offset, n = msg
            t = tensors[name]
            if t.is_cuda:
                torch.cuda.synchronize(t.device)  # whatever this process queued on the device is done
            conn.send(("bytes", bytes(t[offset:offset + n].cpu().tolist())))


class Child:
    """The spawned process and its end of the pipe; quit() asks it to exit and waits for it."""

    def __init__(self, ctx, allocator, snapshot):
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=child_main, args=(child_conn, allocator, snapshot), daemon=True)
        self.process.start()
        child_conn.close()

    def ask(self, *msg):
        self.conn.send(msg)
        if not self.conn.poll(REPLY_TIMEOUT_S):
            raise TimeoutError(110, "the child (pid %d) did not answer %r in %d s" % (self.process.pid, msg[0],
                                                                                      REPLY_TIMEOUT_S))
        return self.conn.recv()[1]  # EOFError when the child died

    def quit(self):
        try:
            self.conn.send(("quit",))
        except OSError:
            pass
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


# ---- the parent ----

class CannotAllocate(Exception):
    """torch could not allocate `nbytes` bytes on `device` (its RuntimeError or MemoryError in `why`)."""

    def __init__(self, nbytes, device, why):
        super().__init__("cannot allocate %d bytes on %s: %s" % (nbytes, device, why))


def make_tensor(torch, device, size, view_offset):
    """A uint8 tensor of view_offset + size bytes with a recognisable pattern; returns the view past view_offset.

    Byte i is i * 131 % 251. The pattern is written in uint8 in steps of PATTERN_CHUNK bytes from one tiled
    period, so the memory used is the tensor plus about PATTERN_CHUNK bytes (an int64 arange of the whole size
    used 9 times the request). Raises CannotAllocate when torch cannot allocate the tensor.
    """
    total = view_offset + size
    try:
        period = (torch.arange(251, dtype=torch.int64) * 131 % 251).to(torch.uint8)
        step = min(total, PATTERN_CHUNK)
        tiled = period.repeat(step // 251 + 2).to(device)  # step + 502 bytes: any window of `step` from any phase
        base = torch.empty(total, dtype=torch.uint8, device=device)
        if device != "cuda":
            # The CPU route: a tensor in shared memory (a memfd or /dev/shm file). Moved there before it is
            # written, so the private pages share_memory_() copies from were never touched (not resident).
            base.share_memory_()
        for start in range(0, total, step):
            n = min(step, total - start)
            phase = start % 251
            base[start:start + n] = tiled[phase:phase + n]
        del tiled
        if device == "cuda":
            torch.cuda.synchronize()
    except (RuntimeError, MemoryError) as e:  # torch.cuda.OutOfMemoryError is a RuntimeError
        raise CannotAllocate(total, device, e) from e
    return base[view_offset:]


def run_case(zc, torch, child, name, producer, sent, expect_alias, args):
    """Sends `sent` to the child, checks the child's view against `producer`; returns (verdict right?, complete?)."""
    info = child.ask("tensor", name, sent)
    is_cuda = producer.is_cuda

    def producer_read(offset, n):
        return bytes(producer[offset:offset + n].cpu().tolist())

    def producer_write(offset, data):
        producer[offset:offset + len(data)] = torch.tensor(list(data), dtype=torch.uint8, device=producer.device)
        if is_cuda:
            torch.cuda.synchronize(producer.device)  # on the device before the child is asked

    def consumer_read(offset, n):
        return child.ask("read", name, offset, n)

    verdict = zc.check_rw(producer.numel(), producer_read, producer_write, consumer_read,
                          producer_address=producer.data_ptr())
    what = "alias" if verdict.alias else "copy" if verdict.copy else "undecided"
    expected = "alias" if expect_alias else "copy"
    right = what == expected
    print("case %s: %s" % (name, "the shared tensor itself" if expect_alias else "tensor.clone() sent instead"))
    print("  device %s, allocator %s, %d bytes at view offset %d" % (
        producer.device, args.allocator if args.device == "cuda" else "n/a (cpu)", producer.numel(),
        args.view_offset))
    print("  parent pid %d data_ptr 0x%x; child pid %d data_ptr 0x%x device %s is_shared %s alloc_conf %s" % (
        os.getpid(), producer.data_ptr(), info["pid"], info["data_ptr"], info["device"], info["is_shared"],
        info["alloc_conf"]))
    print("  offsets probed (%d): %s" % (len(verdict.offsets_written), " ".join(map(str, verdict.offsets_written))))
    line = "  extmem_zc_check_rw: %s (status %d)" % (verdict.status_name, verdict.status)
    if verdict.alias:
        line += ", %d offsets: sentinel and restore seen by the child" % verdict.offsets_probed
    else:
        line += ": " + verdict.message
        if verdict.failed_side != "none":
            line += " [failed side %s]" % verdict.failed_side
        if verdict.callback_error:
            line += " [callback: %s]" % verdict.callback_error
        if verdict.restore_failed:
            line += " [RESTORE FAILED: byte at offset %d may hold 0x%02x]" % (verdict.offset, verdict.sentinel)
    print(line)
    print("  verdict: %s (expected %s) -> %s" % (what.upper(), expected, "right" if right else "WRONG"))
    return right, what != "undecided"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", help="path of libextmem.so.0 (default: $EXTMEM_LIB, then the loader's search); "
                                 "not empty")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--allocator", choices=sorted(ALLOC_CONF), default="default",
                   help="CUDA caching allocator: default, or expandable (PYTORCH_CUDA_ALLOC_CONF="
                        "expandable_segments:True in both processes); ignored on the CPU")
    p.add_argument("--case", choices=["alias", "copy", "both"], default="both")
    p.add_argument("--size", type=int, default=1 << 20,
                   help="bytes in the tensor's view, 1 to 2**40 with --view-offset (default 1 MiB)")
    p.add_argument("--view-offset", type=int, default=0,
                   help="share a view starting this many bytes into its allocation, 0 to 2**40 - 1 (default 0)")
    p.add_argument("--child-snapshots", action="store_true",
                   help="the child keeps a private clone of what it receives: the alias case must then be "
                        "reported WRONG (exit 5); tests the harness, not torch")
    args = p.parse_args(argv)
    if args.lib is not None and args.lib == "":
        p.error("--lib: the path is empty; accepted: the path of libextmem.so.0 (or no --lib: $EXTMEM_LIB, then "
                "the loader's search)")
    if not 1 <= args.size <= MAX_BYTES:
        p.error("--size=%d is not accepted: from 1 to %d bytes (1 TiB)" % (args.size, MAX_BYTES))
    if not 0 <= args.view_offset <= MAX_BYTES - args.size:
        p.error("--view-offset=%d is not accepted: from 0 to %d bytes (--view-offset + --size at most %d, 1 TiB)"
                % (args.view_offset, MAX_BYTES - args.size, MAX_BYTES))
    return args


def main(argv):
    args = parse_args(argv)
    allocator = args.allocator if args.device == "cuda" else "default"  # the CPU route has no CUDA allocator
    set_allocator(allocator)
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as e:
        print("SKIP: torch is not importable (%s) by %s" % (e, sys.executable), file=sys.stderr)
        return EXIT_NO_TORCH
    from extmem_zerocopy import LibraryNotFound, Zerocopy
    try:
        zc = Zerocopy.load(args.lib)
    except LibraryNotFound as e:
        print("error: %s" % e, file=sys.stderr)
        return EXIT_NO_LIB
    if args.device == "cuda" and not torch.cuda.is_available():
        print("SKIP: --device=cuda but torch %s sees no CUDA device" % torch.__version__, file=sys.stderr)
        return EXIT_NO_DEVICE
    print("torch %s, %s, libextmem %s" % (torch.__version__, sys.executable, zc.where))

    try:
        producer = make_tensor(torch, args.device, args.size, args.view_offset)
    except CannotAllocate as e:
        print("error: %s" % e, file=sys.stderr)
        return EXIT_NO_MEMORY
    child = Child(mp.get_context("spawn"), allocator, args.child_snapshots)
    results = []
    try:
        if args.case in ("alias", "both"):
            results.append(run_case(zc, torch, child, "alias", producer, producer, True, args))
        if args.case in ("copy", "both"):
            try:
                clone = producer.clone()
            except (RuntimeError, MemoryError) as e:
                print("error: %s" % CannotAllocate(producer.numel(), args.device, e), file=sys.stderr)
                return EXIT_NO_MEMORY
            results.append(run_case(zc, torch, child, "copy", producer, clone, False, args))
    except (EOFError, OSError) as e:
        print("error: the child (pid %s) failed: %r" % (child.process.pid, e), file=sys.stderr)
        return EXIT_INCOMPLETE
    finally:
        child.quit()
    right = sum(1 for ok, _ in results if ok)
    print("result: %d of %d verdicts right" % (right, len(results)))
    if not all(complete for _, complete in results):
        return EXIT_INCOMPLETE
    return EXIT_OK if right == len(results) else EXIT_WRONG


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
