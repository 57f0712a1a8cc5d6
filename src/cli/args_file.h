// Options of `extmem probe` read from a file, for launches without a shell (an
// Android app's exec hook, a device farm): --args-file=F, and marker mode's
// `<marker>.args`. The grammar is in docs/probe.md, "Launch without a shell".
// The command's, as the rest of its option grammar: the words of a file are
// options of the command line, read by probe_command.cpp line by line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"

namespace extmem::cli {

/// The largest args file read, in bytes: a file of options is a few hundred
/// bytes, so anything larger is the wrong file.
inline constexpr std::size_t kArgsFileMaxBytes = 64 * 1024;

/// One word of an args file and the line it is on (1-based), so a refusal can
/// say "F:LINE".
struct ArgsWord {
  std::string text;
  unsigned line = 0;
};

/// Splits the text of an args file into words, the way a shell would split one
/// line, without expansions: words are separated by spaces or tabs; `'…'` keeps
/// everything inside literally; `"…"` too, except that `\"` and `\\` stand for
/// `"` and `\`; outside quotes `\` makes the next character literal; a `#` that
/// begins a word starts a comment to the end of the line. Lines end at `\n` (a
/// `\r` before it is dropped) and every word lies on one line: a quote left
/// open or a `\` at the end of a line is refused, so an option and its value
/// are always on the line that names them. An empty file gives no words.
///
/// `path` is only used in error texts. Errors: ErrorKind::invalid_argument,
/// step "--args-file", detail "PATH:LINE: what is wrong" (an unclosed quote, a
/// trailing `\`, a NUL byte).
Result<std::vector<ArgsWord>> split_args_text(std::string_view text, const std::string& path);

/// Reads `path` (at most kArgsFileMaxBytes) and splits it with
/// split_args_text(). Errors: ErrorKind::os, step "--args-file", code the
/// errno ("ENOENT (2)", "EISDIR (21)", "EACCES (13)", "EIO (5)"), detail
/// "cannot read PATH: <strerror text>"; ErrorKind::invalid_argument for a file
/// that is too large or does not split.
Result<std::vector<ArgsWord>> read_args_file(const std::string& path);

}  // namespace extmem::cli
