"""extmem's alias-or-copy check from Python, through ctypes over libextmem.so.0.

Binds extmem_zc_check_rw of the C interface (include/extmem/core/zerocopy_c.h,
docs/zerocopy.md): the producer and the consumer are both reached through
Python functions, so either may be memory Python cannot address (a CUDA
tensor, a view in another process). Standard library only.

    zc = Zerocopy.load("build/libextmem.so.0")   # or $EXTMEM_LIB, or the loader's search
    verdict = zc.check_rw(length, producer_read, producer_write, consumer_read)
    verdict.alias       # True only when every probed offset showed the sentinel and the restore
"""

import ctypes
import ctypes.util
import errno
import os

#: Environment variable naming the library file (a path), used when no path is given.
ENV_VAR = "EXTMEM_LIB"
#: The soname the loader is asked for when neither a path nor ENV_VAR is given.
SONAME = "libextmem.so.0"

# extmem_zc_status values (zerocopy_c.h).
PASS = 0
EMPTY_PRODUCER = 1
CONSUMER_TOO_SHORT = 2
SHORT_READ = 3
READ_FAILED = 4
NOT_OBSERVED = 5
WRITE_FAILED = 6
INVALID_ARGUMENT = -1
INTERNAL_ERROR = -2

SIDES = {0: "none", 1: "consumer", 2: "producer"}

#: The largest random_offsets / boundary_pages the library accepts (zerocopy_c.h,
#: EXTMEM_ZC_MAX_RANDOM_OFFSETS / EXTMEM_ZC_MAX_BOUNDARY_PAGES); beyond them check_rw raises ValueError.
MAX_RANDOM_OFFSETS = 1 << 20
MAX_BOUNDARY_PAGES = 1 << 16
_SIZE_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1
_U64_MAX = (1 << 64) - 1


def _whole(name, value, low, high):
    """value as an int in [low, high], or ValueError naming `name` and the accepted range (ctypes would wrap it)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("%s=%r is not accepted: a whole number from %d to %d" % (name, value, low, high))
    if not low <= value <= high:
        raise ValueError("%s=%d is not accepted: a whole number from %d to %d" % (name, value, low, high))
    return value


class LibraryNotFound(RuntimeError):
    """libextmem.so.0 could not be loaded; the message lists every place tried and why."""


class _Options(ctypes.Structure):
    _fields_ = [("seed", ctypes.c_uint64), ("random_offsets", ctypes.c_size_t), ("boundary_pages", ctypes.c_size_t)]


class _Result(ctypes.Structure):
    _fields_ = [
        ("status", ctypes.c_int),
        ("offsets_probed", ctypes.c_size_t),
        ("offset", ctypes.c_size_t),
        ("written", ctypes.c_uint8),
        ("seen", ctypes.c_uint8),
        ("original", ctypes.c_uint8),
        ("sentinel", ctypes.c_uint8),
        ("restore_missed", ctypes.c_int),
        ("read_errno", ctypes.c_int),
        ("message", ctypes.c_char * 512),
    ]


class _RwResult(ctypes.Structure):
    _fields_ = [("base", _Result), ("failed_side", ctypes.c_int), ("write_errno", ctypes.c_int),
                ("restore_failed", ctypes.c_int)]


# int64_t read(void* user, size_t offset, void* out, size_t len)
_READ_FN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)
# int write(void* user, size_t offset, const void* in, size_t len)
_WRITE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)


class Verdict:
    """What one check found (the fields of extmem_zc_rw_result, as Python values).

    status / status_name: the C status and its stable name ("pass", "not_observed", ...).
    offsets_probed: PASS: how many distinct offsets (bytes from the start of the view) were probed.
    offsets_written: every offset the producer's write function was called for, in order (each
        probed offset once, or twice with the restore, deduplicated): the offsets actually probed.
    offset, written, seen, original, sentinel, restore_missed: the evidence of a failure (zerocopy_c.h).
    failed_side: "none", "consumer" or "producer"; read_errno / write_errno: positive errno values.
    restore_failed: the original byte could not be written back (the producer may hold the sentinel).
    callback_error: the Python exception a callback raised (repr), which became its errno; None if none.
    """

    def __init__(self, result, offsets_written, callback_error, status_name):
        base = result.base
        self.status = base.status
        self.status_name = status_name
        self.offsets_probed = base.offsets_probed
        self.offsets_written = offsets_written
        self.offset = base.offset
        self.written = base.written
        self.seen = base.seen
        self.original = base.original
        self.sentinel = base.sentinel
        self.restore_missed = bool(base.restore_missed)
        self.read_errno = base.read_errno
        self.write_errno = result.write_errno
        self.failed_side = SIDES.get(result.failed_side, str(result.failed_side))
        self.restore_failed = bool(result.restore_failed)
        self.message = base.message.decode("utf-8", "replace")
        self.callback_error = callback_error

    @property
    def alias(self):
        """True when the consumer showed every write: visibility, not mechanism (docs/zerocopy.md)."""
        return self.status == PASS

    @property
    def copy(self):
        """True when a write through the producer was not seen: a copy or a stale snapshot."""
        return self.status == NOT_OBSERVED


def _candidates(path):
    if path:
        return [("--lib", path)]
    if os.environ.get(ENV_VAR):
        return [("$" + ENV_VAR, os.environ[ENV_VAR])]
    found = ctypes.util.find_library("extmem")
    out = [("the loader's search (LD_LIBRARY_PATH, ld.so.cache)", SONAME)]
    if found and found != SONAME:
        out.append(("ctypes.util.find_library", found))
    return out


class Zerocopy:
    """The loaded C library. Keep it for the process's lifetime; it holds no other resource."""

    def __init__(self, lib, where):
        self._lib = lib
        #: The file or name the library was loaded from.
        self.where = where
        lib.extmem_zc_status_name.restype = ctypes.c_char_p
        lib.extmem_zc_status_name.argtypes = [ctypes.c_int]
        lib.extmem_zc_options_init.restype = None
        lib.extmem_zc_options_init.argtypes = [ctypes.POINTER(_Options)]
        lib.extmem_zc_check_rw.restype = ctypes.c_int
        lib.extmem_zc_check_rw.argtypes = [ctypes.c_size_t, ctypes.c_uint64, _READ_FN, _WRITE_FN, _READ_FN,
                                           ctypes.c_void_p, ctypes.POINTER(_Options), ctypes.POINTER(_RwResult)]

    @classmethod
    def load(cls, path=None):
        """Loads the library: `path` if given, else $EXTMEM_LIB, else SONAME through the loader.

        Raises LibraryNotFound naming each place tried, and why it failed, when none loads or the
        file loaded lacks extmem_zc_check_rw (a libextmem older than the function).
        """
        tried = []
        for how, name in _candidates(path):
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                tried.append("%s: %s" % (how, e))
                continue
            if not hasattr(lib, "extmem_zc_check_rw"):
                tried.append("%s: %s has no extmem_zc_check_rw (built before it existed?)" % (how, name))
                continue
            return cls(lib, name)
        hint = ("Build it (cmake --build build --target extmem_c) and pass --lib=build/" + SONAME + " or set " +
                ENV_VAR)
        if any("undefined symbol: __asan" in t or "undefined symbol: __ubsan" in t for t in tried):
            # An instrumented build: an uninstrumented interpreter must load the sanitizer runtime first.
            hint = ("This libextmem is sanitizer-instrumented: run Python with LD_PRELOAD=$(clang++ "
                    "-print-file-name=libclang_rt.asan-x86_64.so) (gcc: libasan.so and libubsan.so) and "
                    "ASAN_OPTIONS=detect_leaks=0")
        raise LibraryNotFound("libextmem.so.0 could not be loaded; tried " + "; ".join(tried) + ". " + hint)

    def status_name(self, status):
        """The C library's stable name of a status value ("unknown" for others)."""
        return self._lib.extmem_zc_status_name(status).decode()

    def check_rw(self, length, producer_read, producer_write, consumer_read, producer_address=0, seed=None,
                 random_offsets=None, boundary_pages=None):
        """Checks that the consumer aliases the producer; returns a Verdict. Both are reached through functions:

        producer_read(offset, n) -> bytes: the producer's current n bytes at offset (bytes from the start of the
            view, 0 <= offset < length); producer_write(offset, data): writes `data` there and returns once the
            producer's own memory holds it; consumer_read(offset, n) -> bytes: the consumer's current bytes there,
            after whatever synchronisation it needs. They are called from this thread, during the call only.
        A function that raises fails the check (its errno, or EIO; READ_FAILED or WRITE_FAILED), and the exception
        is kept in Verdict.callback_error; the producer's bytes are put back however the check ends.
        producer_address: the producer's first byte's address where it lives (data_ptr()), only to place the page
        boundaries probed; 0 when unknown. seed, random_offsets, boundary_pages: see docs/zerocopy.md (None: default).
        Accepted ranges, checked before anything is called (ValueError naming the argument and its range, never a
        silent wrap to the C type): length 0..SIZE_MAX bytes (0 gives EMPTY_PRODUCER); producer_address and seed
        0..2**64-1; random_offsets 0..MAX_RANDOM_OFFSETS; boundary_pages 0..MAX_BOUNDARY_PAGES.
        """
        _whole("length", length, 0, _SIZE_MAX)
        _whole("producer_address", producer_address, 0, _U64_MAX)
        if seed is not None:
            _whole("seed", seed, 0, _U64_MAX)
        if random_offsets is not None:
            _whole("random_offsets", random_offsets, 0, MAX_RANDOM_OFFSETS)
        if boundary_pages is not None:
            _whole("boundary_pages", boundary_pages, 0, MAX_BOUNDARY_PAGES)
        errors = []
        written = []

        def fail(e):
            errors.append(repr(e))
            code = getattr(e, "errno", None)
            return -(code if isinstance(code, int) and code > 0 else errno.EIO)

        def reader(fn):
            def read(_user, offset, out, n):
                try:
                    data = bytes(fn(offset, n))
                except BaseException as e:  # a callback must not unwind through C
                    return fail(e)
                ctypes.memmove(out, data, min(len(data), n))
                return len(data)  # a wrong count is reported by the library as SHORT_READ
            return _READ_FN(read)

        def write(_user, offset, data, n):
            try:
                if not written or written[-1] != offset:
                    written.append(offset)
                producer_write(offset, ctypes.string_at(data, n))
                return 0
            except BaseException as e:
                return fail(e)

        options = _Options()
        self._lib.extmem_zc_options_init(ctypes.byref(options))
        if seed is not None:
            options.seed = seed
        if random_offsets is not None:
            options.random_offsets = random_offsets
        if boundary_pages is not None:
            options.boundary_pages = boundary_pages
        result = _RwResult()
        # The ctypes function objects live in these locals for the whole call.
        read_producer, write_producer, read_consumer = reader(producer_read), _WRITE_FN(write), reader(consumer_read)
        status = self._lib.extmem_zc_check_rw(length, producer_address, read_producer, write_producer, read_consumer,
                                              None, ctypes.byref(options), ctypes.byref(result))
        return Verdict(result, written, "; ".join(errors) or None, self.status_name(status))
