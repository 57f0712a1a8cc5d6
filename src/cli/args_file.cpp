// The args-file reader: shell-like words, no expansion, one line per group of
// options (docs/probe.md, "Launch without a shell").
#include "cli/args_file.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "extmem/os/file.h"

namespace extmem::cli {
namespace {

Error args_refused(const std::string& path, unsigned line, std::string_view what) {
  return Error{"--args-file", ErrorKind::invalid_argument, {}, fmt::format("{}:{}: {}", path, line, what)};
}

}  // namespace

Result<std::vector<ArgsWord>> split_args_text(std::string_view text, const std::string& path) {
  std::vector<ArgsWord> words;
  unsigned line = 1;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '\r') {  // only as part of a CRLF line end
      if (i + 1 < n && text[i + 1] != '\n') return args_refused(path, line, "a carriage return inside a line");
      ++i;
      continue;
    }
    if (c == '#') {  // only at the start of a word: "--only=a#b" keeps its '#'
      while (i < n && text[i] != '\n') ++i;
      continue;
    }
    // One word: runs until unquoted blank or end of line.
    ArgsWord w;
    w.line = line;
    while (i < n) {
      const char d = text[i];
      if (d == '\0') return args_refused(path, line, "a NUL byte (not a text file)");
      if (d == ' ' || d == '\t' || d == '\n') break;
      if (d == '\r') {
        // Tolerated only as part of a CRLF line end: elsewhere it is a byte no option holds.
        if (i + 1 < n && text[i + 1] != '\n') return args_refused(path, line, "a carriage return inside a line");
        ++i;
        continue;
      }
      if (d == '\\') {
        if (i + 1 >= n || text[i + 1] == '\n' || text[i + 1] == '\r')
          return args_refused(path, line, "a '\\' at the end of the line (there are no continuation lines)");
        w.text += text[i + 1];
        i += 2;
        continue;
      }
      if (d == '\'' || d == '"') {
        const char quote = d;
        ++i;
        bool closed = false;
        while (i < n && text[i] != '\n') {
          const char q = text[i];
          if (q == '\0') return args_refused(path, line, "a NUL byte (not a text file)");
          if (q == quote) {
            closed = true;
            ++i;
            break;
          }
          if (quote == '"' && q == '\\' && i + 1 < n && (text[i + 1] == '"' || text[i + 1] == '\\')) {
            w.text += text[i + 1];
            i += 2;
            continue;
          }
          w.text += q;
          ++i;
        }
        if (!closed)
          return args_refused(path, line, fmt::format("the {} quote is not closed on this line", quote == '"' ? "\"" : "'"));
        continue;
      }
      w.text += d;
      ++i;
    }
    words.push_back(std::move(w));
  }
  return words;
}

Result<std::vector<ArgsWord>> read_args_file(const std::string& path) {
  auto text = os::read_input_file(path, kArgsFileMaxBytes);
  if (text) return split_args_text(*text, path);
  const Error& e = text.error();
  if (e.space == CodeSpace::errno_value)  // EISDIR for a directory, EIO for /proc/self/mem
    return os_error("--args-file", static_cast<int>(e.native),
                    fmt::format("cannot read {}: {}", path, std::strerror(static_cast<int>(e.native))));
  return Error{"--args-file", ErrorKind::invalid_argument, {},
               fmt::format("{} is larger than {} bytes: not a file of options", path, kArgsFileMaxBytes)};
}

}  // namespace extmem::cli
