// The time series of `extmem watch --out=FILE`: one row per process per
// sample, as TSV (default), CSV or JSON lines.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"
#include "extmem/watch/sampler.h"

namespace extmem::watch {

/// Layout of the series file.
enum class SeriesFormat {
  tsv,    ///< header line, then tab-separated rows; an unknown value is an empty field
  csv,    ///< the same columns, comma-separated, RFC 4180 quoting where a field needs it
  jsonl,  ///< one JSON object per row, no header; an unknown value is null
};

/// "tsv", "csv", "jsonl". Errors (invalid_argument, step "--format") name what is accepted.
Result<SeriesFormat> parse_series_format(std::string_view text);
const char* to_string(SeriesFormat format) noexcept;

/// Optional columns.
struct SeriesColumns {
  bool pss = false;      ///< pss_kib after threads
  bool classes = false;  ///< classes last: "anon=12;file=30;memfd:NAME=4" (TSV/CSV), an object (JSONL)
};

/// The column names in order: t pid ppid comm rss_kib hwm_kib anon_kib
/// file_kib shmem_kib swap_kib mappings fds threads [pss_kib] [classes].
std::vector<std::string> series_columns(SeriesColumns columns);

/// The header line (with its newline) for TSV/CSV; "" for JSONL.
std::string series_header(SeriesFormat format, SeriesColumns columns);

/// Appends one line per row to `out`. Times are seconds with 3 decimals;
/// sizes KiB. A comm or class name's control characters become '?' in
/// TSV/CSV; in a class list ';', '=' and '%' inside a name are written %3B,
/// %3D, %25. JSON text is valid UTF-8 (invalid bytes replaced by U+FFFD).
void append_rows(std::string& out, SeriesFormat format, SeriesColumns columns,
                 std::span<const ProcessSample> rows);

/// Writes the series to a file, whole lines only, and pushes buffered lines
/// to the file at least every `flush_every`, so a watch killed with SIGKILL
/// leaves every row older than that in the file. Owns its fd (borrows fd 1 for "-").
class SeriesWriter {
 public:
  SeriesWriter() = default;

  /// Creates or truncates `path` ("-": standard output) and writes the header
  /// at once. Errors: os_error("open PATH", errno), or the write error.
  static Result<SeriesWriter> open(const std::string& path, SeriesFormat format, SeriesColumns columns,
                                   std::chrono::milliseconds flush_every = std::chrono::milliseconds(500));

  /// Buffers the rows and writes out what is buffered when `flush_every` has
  /// passed since the last write. Errors: os_error("write PATH", errno); the
  /// buffer is dropped then (the run goes on without a series).
  Status write(std::span<const ProcessSample> rows);
  /// Writes out everything buffered. Errors as write().
  Status flush();

 private:
  os::UniqueFd owned_;
  int fd_ = -1;
  std::string path_;
  SeriesFormat format_ = SeriesFormat::tsv;
  SeriesColumns columns_;
  std::chrono::milliseconds flush_every_{500};
  std::chrono::steady_clock::time_point last_flush_{};
  std::string pending_;
};

}  // namespace extmem::watch
