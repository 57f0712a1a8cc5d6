// POSIX extended regular expressions (regcomp/regexec, as `grep -E`), owned and
// shareable, with limits that keep compile time and memory bounded on any input.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "extmem/core/error.h"
#include "extmem/memtools/syntax.h"

namespace extmem::memtools {

/// A compiled POSIX extended regular expression. Copies share the compiled
/// form (immutable after compile, so sharing is safe across threads).
class Regex {
 public:
  /// Longest pattern accepted, in bytes.
  static constexpr std::size_t kMaxPattern = 256;
  /// Largest estimated compiled size, in pattern elements. regcomp copies the
  /// operand of "+" and of "{m,n}", so nested repetitions multiply the size
  /// ("((a+)+)+..." doubles per level); past this bound a pattern is refused.
  static constexpr std::uint64_t kMaxCompiled = 4096;
  /// Most repetitions applied on top of each other ("(ab+)*" is 2): glibc's
  /// regcomp takes time exponential in this nesting.
  static constexpr unsigned kMaxNesting = 2;

  /// Compiles `pattern` (REG_EXTENDED | REG_NOSUB). Refused: empty or longer
  /// than kMaxPattern, NUL bytes, back-references (\1..\9, exponential to
  /// match), repetitions nested deeper than kMaxNesting or whose estimated
  /// compiled size exceeds kMaxCompiled,
  /// and anything regcomp rejects (its message as the
  /// problem). Errors: invalid_argument, step "parse <subject>"; `syntax`,
  /// when not null, gets the column within `pattern` (0 when regcomp cannot
  /// say where).
  static Result<Regex> compile(std::string_view pattern, std::string_view subject = "regex",
                               SyntaxError* syntax = nullptr);

  /// True when the pattern matches anywhere in `text` (anchor with ^ and $).
  /// `text` must not contain NUL bytes (a NUL ends it early).
  bool search(std::string_view text) const;

  /// The pattern as given.
  const std::string& pattern() const noexcept { return pattern_; }

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;
  std::string pattern_;
};

}  // namespace extmem::memtools
