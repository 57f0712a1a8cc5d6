/* extmem zerocopy, C interface: is a claimed zero-copy handoff really shared
 * memory? Mirrors extmem/core/zerocopy.h (read that header for the method);
 * plain C99 types, usable from C and C++.
 *
 * In short: a check writes a sentinel byte through the producer at a fixed,
 * small set of offsets (first and last byte, page boundaries near both ends,
 * the middle, seeded pseudo-random ones), confirms the consumer shows it,
 * writes the original back and confirms the consumer shows that too. Sizes and
 * offsets are in bytes from the start of the views; the cost does not depend
 * on the size.
 *
 * It proves visibility, not mechanism: a read function that copies the
 * producer afresh on every call passes like an alias would.
 *
 * Thread safety: it writes to the producer's memory while it runs; not safe
 * while anyone else writes there. On every return (pass or any failure,
 * including a read function that fails mid-way) the producer holds the bytes
 * it held when the call began; for extmem_zc_check_rw, unless its own write
 * function fails while putting a byte back, which the result then reports
 * (restore_failed).
 */
#ifndef EXTMEM_CORE_ZEROCOPY_C_H
#define EXTMEM_CORE_ZEROCOPY_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Outcome of a check. The values 1..6 correspond one to one to
 * extmem::zerocopy::Errc but its invalid_options, which is INVALID_ARGUMENT
 * here; 0 and the negative values exist only here. */
typedef enum extmem_zc_status {
  EXTMEM_ZC_PASS = 0,                /* every probed offset: sentinel and restore observed */
  EXTMEM_ZC_EMPTY_PRODUCER = 1,      /* producer_len == 0 */
  EXTMEM_ZC_CONSUMER_TOO_SHORT = 2,  /* consumer_len < producer_len (nothing was written) */
  EXTMEM_ZC_SHORT_READ = 3,          /* the read function returned fewer bytes than asked (or more) */
  EXTMEM_ZC_READ_FAILED = 4,         /* the read function returned a negative value */
  EXTMEM_ZC_NOT_OBSERVED = 5,        /* a write was not seen through the consumer: not an alias */
  EXTMEM_ZC_WRITE_FAILED = 6,        /* extmem_zc_check_rw: the producer's write function returned a negative value */
  EXTMEM_ZC_INVALID_ARGUMENT = -1,   /* a NULL pointer with a non-zero length, a NULL function, or options
                                        beyond EXTMEM_ZC_MAX_RANDOM_OFFSETS / EXTMEM_ZC_MAX_BOUNDARY_PAGES
                                        (nothing is read or written; the message names the field) */
  EXTMEM_ZC_INTERNAL_ERROR = -2      /* out of memory or another unexpected C++ exception */
} extmem_zc_status;

/* Stable lower-case name: "pass", "empty_producer", "consumer_too_short",
 * "short_read", "read_failed", "not_observed", "write_failed",
 * "invalid_argument", "internal_error"; "unknown" for other values. Never
 * NULL; static storage. */
const char* extmem_zc_status_name(extmem_zc_status status);

/* The largest extmem_zc_options.random_offsets (a count of offsets) and
 * boundary_pages (pages at each end) a check accepts; beyond either, a check
 * returns EXTMEM_ZC_INVALID_ARGUMENT without reading or writing anything. */
#define EXTMEM_ZC_MAX_RANDOM_OFFSETS ((size_t)1 << 20)
#define EXTMEM_ZC_MAX_BOUNDARY_PAGES ((size_t)1 << 16)

typedef struct extmem_zc_options {
  uint64_t seed;           /* seed of pseudo-random offsets and sentinels */
  size_t random_offsets;   /* pseudo-random offsets probed besides the fixed ones; at most EXTMEM_ZC_MAX_RANDOM_OFFSETS */
  size_t boundary_pages;   /* 4096-byte page boundaries probed at each end; at most EXTMEM_ZC_MAX_BOUNDARY_PAGES */
} extmem_zc_options;

/* Fills *options with the defaults (the same as the C++ Options{}). */
void extmem_zc_options_init(extmem_zc_options* options);

#define EXTMEM_ZC_MESSAGE_MAX 512

/* What a check found; every field is written on every return, zero where it
 * does not apply. */
typedef struct extmem_zc_result {
  extmem_zc_status status;
  size_t offsets_probed;  /* PASS: distinct offsets probed */
  size_t offset;          /* NOT_OBSERVED: first offset not observed; SHORT_READ / READ_FAILED: offset being read */
  uint8_t written;        /* NOT_OBSERVED: last byte written at offset (sentinel, or original if restore_missed) */
  uint8_t seen;           /* NOT_OBSERVED: byte the consumer showed instead */
  uint8_t original;       /* the producer's byte at offset before the check (restored) */
  uint8_t sentinel;       /* NOT_OBSERVED: the sentinel written at offset */
  int restore_missed;     /* NOT_OBSERVED: 1 when the sentinel was seen but the restore was not */
  int read_errno;         /* READ_FAILED: the positive errno the read function returned (-return value) */
  char message[EXTMEM_ZC_MESSAGE_MAX];  /* NUL-terminated human text, truncated to fit; "" on PASS */
} extmem_zc_result;

/* Reads the consumer's current bytes at [offset, offset + len) into out (len
 * bytes, owned by the caller, valid during the call), after any
 * synchronisation the consumer needs. Returns the number of bytes filled, or
 * a negative errno value on failure (reported as READ_FAILED with read_errno
 * set). Called at least twice per probed offset, with small len, so it must
 * be repeatable. `user` is passed through unchanged. */
typedef int64_t (*extmem_zc_read_fn)(void* user, size_t offset, void* out, size_t len);

/* Checks that consumer[0, consumer_len) aliases producer[0, producer_len) in
 * this process. options may be NULL (defaults); result may be NULL. Returns
 * the status, also stored in result->status. */
extmem_zc_status extmem_zc_check(void* producer, size_t producer_len, const void* consumer, size_t consumer_len,
                                 const extmem_zc_options* options, extmem_zc_result* result);

/* Checks that the consumer reached through `read` aliases the producer.
 * options may be NULL (defaults); result may be NULL; read must not be NULL. */
extmem_zc_status extmem_zc_check_fn(void* producer, size_t producer_len, extmem_zc_read_fn read, void* user,
                                    const extmem_zc_options* options, extmem_zc_result* result);

/* ---- A producer this process cannot address (a CUDA tensor, memory behind
 * an interpreter): extmem_zc_check_rw reaches it, like the consumer, through
 * functions. An addition: nothing above changed, so a caller built against
 * the earlier header keeps working with this library. ---- */

/* Writes the len bytes at `in` (owned by the caller, valid during the call)
 * into the producer at [offset, offset + len), offset in bytes from the start
 * of the producer's view, and returns once the producer's own memory holds
 * them (after any device copy and synchronisation the write needs): 0 on
 * success, a negative errno value on failure (reported as WRITE_FAILED with
 * write_errno set). Called twice per probed offset (the sentinel, then the
 * original), with len 1 today. `user` is passed through unchanged. */
typedef int (*extmem_zc_write_fn)(void* user, size_t offset, const void* in, size_t len);

/* Which side's function failed (extmem_zc_rw_result.failed_side). */
typedef enum extmem_zc_side {
  EXTMEM_ZC_SIDE_NONE = 0,      /* no function failed */
  EXTMEM_ZC_SIDE_CONSUMER = 1,  /* the consumer's read function */
  EXTMEM_ZC_SIDE_PRODUCER = 2   /* the producer's read or write function */
} extmem_zc_side;

/* What extmem_zc_check_rw found. A struct of its own, so that
 * extmem_zc_result keeps its size for callers built before it existed. Every
 * field is written on every return, zero where it does not apply. */
typedef struct extmem_zc_rw_result {
  extmem_zc_result base;  /* as for extmem_zc_check_fn; base.read_errno: READ_FAILED from either read function */
  int failed_side;        /* SHORT_READ / READ_FAILED / WRITE_FAILED: an extmem_zc_side value; else 0 */
  int write_errno;        /* WRITE_FAILED: the positive errno the write function returned (-return value) */
  int restore_failed;     /* 1 when writing base.original back at base.offset failed too: the producer may
                             still hold base.sentinel there (the caller must restore it); else 0 */
} extmem_zc_rw_result;

/* Checks that the consumer reached through `consumer_read` aliases the
 * producer reached through `producer_read` (its current bytes, for the
 * original before each write) and `producer_write`; the same method, offsets
 * and sentinels as extmem_zc_check_fn. len: the views' length in bytes.
 * producer_address: the address of the producer's first byte wherever it
 * lives (a device pointer), only to place the page boundaries probed; 0 when
 * unknown (boundaries every 4096 bytes from offset 0). All three functions get
 * `user`. options may be NULL (defaults); result may be NULL. The functions
 * are borrowed for the call; nothing is kept after it returns.
 * Returns the status, also stored in result->base.status:
 *   PASS; EMPTY_PRODUCER (len == 0; nothing read or written);
 *   READ_FAILED / SHORT_READ (either read function; failed_side says whose);
 *   WRITE_FAILED (the producer's write function; failed_side PRODUCER);
 *   NOT_OBSERVED (a copy or a stale snapshot: base.offset, written, seen);
 *   INVALID_ARGUMENT (a NULL function; nothing is called);
 *   INTERNAL_ERROR (out of memory or an unexpected exception).
 * Every byte written is put back through producer_write however the probe of
 * an offset ends (a failing sentinel write is followed by a restore too); a
 * restore that fails is reported as restore_failed = 1. */
extmem_zc_status extmem_zc_check_rw(size_t len, uint64_t producer_address, extmem_zc_read_fn producer_read,
                                    extmem_zc_write_fn producer_write, extmem_zc_read_fn consumer_read, void* user,
                                    const extmem_zc_options* options, extmem_zc_rw_result* result);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* EXTMEM_CORE_ZEROCOPY_C_H */
