#include "extmem/watch/series.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "watch/json_fields.h"
#include "watch/printable.h"

namespace extmem::watch {
namespace {

using nlohmann::json;

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

std::string escaped_class(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == ';' || c == '=' || c == '%' || is_control(c)) out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

std::string csv_field(std::string field) {
  if (field.find_first_of(",\"") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string opt(const std::optional<std::uint64_t>& v) { return v ? fmt::format("{}", *v) : std::string(); }

}  // namespace

Result<SeriesFormat> parse_series_format(std::string_view text) {
  if (text == "tsv") return SeriesFormat::tsv;
  if (text == "csv") return SeriesFormat::csv;
  if (text == "jsonl") return SeriesFormat::jsonl;
  return Error{"--format", ErrorKind::invalid_argument, {},
               fmt::format("\"{}\" is not accepted: tsv, csv or jsonl", text.substr(0, 64))};
}

const char* to_string(SeriesFormat format) noexcept {
  switch (format) {
    case SeriesFormat::tsv: return "tsv";
    case SeriesFormat::csv: return "csv";
    case SeriesFormat::jsonl: return "jsonl";
  }
  return "?";
}

std::vector<std::string> series_columns(SeriesColumns columns) {
  std::vector<std::string> names = {"t",         "pid",      "ppid",     "comm", "rss_kib", "hwm_kib", "anon_kib",
                                    "file_kib", "shmem_kib", "swap_kib", "mappings", "fds", "threads"};
  if (columns.pss) names.push_back("pss_kib");
  if (columns.classes) names.push_back("classes");
  return names;
}

std::string series_header(SeriesFormat format, SeriesColumns columns) {
  if (format == SeriesFormat::jsonl) return {};
  return fmt::format("{}\n", fmt::join(series_columns(columns), format == SeriesFormat::tsv ? "\t" : ","));
}

void append_rows(std::string& out, SeriesFormat format, SeriesColumns columns, std::span<const ProcessSample> rows) {
  for (const ProcessSample& s : rows) {
    if (format == SeriesFormat::jsonl) {
      json j = {{"t", std::round(s.t * 1000) / 1000},
                {"pid", s.pid},
                {"ppid", s.ppid},
                {"comm", s.comm},
                {"rss_kib", opt_json(s.rss_kib)},
                {"hwm_kib", opt_json(s.hwm_kib)},
                {"anon_kib", opt_json(s.anon_kib)},
                {"file_kib", opt_json(s.file_kib)},
                {"shmem_kib", opt_json(s.shmem_kib)},
                {"swap_kib", opt_json(s.swap_kib)},
                {"mappings", opt_json(s.mappings)},
                {"fds", opt_json(s.fds)},
                {"threads", opt_json(s.threads)}};
      if (columns.pss) j["pss_kib"] = opt_json(s.pss_kib);
      if (columns.classes) {
        if (s.classes_taken) {
          json c = json::object();
          for (const auto& [name, n] : s.classes) c[name] = n;
          j["classes"] = std::move(c);
        } else {
          j["classes"] = nullptr;
        }
      }
      out += j.dump(-1, ' ', false, json::error_handler_t::replace);
      out += '\n';
      continue;
    }
    std::vector<std::string> f = {fmt::format("{:.3f}", s.t), fmt::format("{}", s.pid), fmt::format("{}", s.ppid),
                                  printable(s.comm),          opt(s.rss_kib),           opt(s.hwm_kib),
                                  opt(s.anon_kib),            opt(s.file_kib),          opt(s.shmem_kib),
                                  opt(s.swap_kib),            opt(s.mappings),          opt(s.fds),
                                  opt(s.threads)};
    if (columns.pss) f.push_back(opt(s.pss_kib));
    if (columns.classes) {
      std::string c;
      if (s.classes_taken)
        for (const auto& [name, n] : s.classes) c += fmt::format("{}{}={}", c.empty() ? "" : ";", escaped_class(name), n);
      f.push_back(std::move(c));
    }
    if (format == SeriesFormat::csv)
      for (std::string& field : f) field = csv_field(std::move(field));
    out += fmt::format("{}\n", fmt::join(f, format == SeriesFormat::tsv ? "\t" : ","));
  }
}

Result<SeriesWriter> SeriesWriter::open(const std::string& path, SeriesFormat format, SeriesColumns columns,
                                        std::chrono::milliseconds flush_every) {
  SeriesWriter w;
  w.path_ = path;
  w.format_ = format;
  w.columns_ = columns;
  w.flush_every_ = flush_every;
  if (path == "-") {
    w.fd_ = STDOUT_FILENO;
  } else {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return os_error("open " + path, errno);
    w.owned_.reset(fd);
    w.fd_ = fd;
  }
  w.pending_ = series_header(format, columns);
  if (Status r = w.flush(); !r) return std::move(r).error();
  return w;
}

Status SeriesWriter::write(std::span<const ProcessSample> rows) {
  append_rows(pending_, format_, columns_, rows);
  if (std::chrono::steady_clock::now() - last_flush_ >= flush_every_) return flush();
  return {};
}

Status SeriesWriter::flush() {
  last_flush_ = std::chrono::steady_clock::now();
  std::size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      pending_.clear();
      return os_error("write " + path_, err);
    }
    done += static_cast<std::size_t>(n);
  }
  pending_.clear();
  return {};
}

}  // namespace extmem::watch
