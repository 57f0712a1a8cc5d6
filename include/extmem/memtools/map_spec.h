// SPEC: which mappings of a process a tool may look at or write, e.g.
// "perms=rw-s,size=16K,path^=/memfd:". docs/memtools.md has the user's grammar.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/memtools/regex.h"
#include "extmem/memtools/syntax.h"
#include "extmem/os/proc_maps.h"

namespace extmem::memtools {

/// Comparison in a SPEC term or a --when condition.
enum class CompareOp {
  eq,  ///< ==  (written "=" in a SPEC term)
  ne,  ///< !=
  lt,  ///< <
  le,  ///< <=
  gt,  ///< >
  ge,  ///< >=
};

/// "==", "!=", "<", "<=", ">", ">=".
const char* to_string(CompareOp op) noexcept;

/// `lhs OP rhs` on unsigned values.
bool compare(std::uint64_t lhs, CompareOp op, std::uint64_t rhs) noexcept;

/// One term of a SPEC. All terms of a SPEC must hold for a mapping to match.
struct SpecTerm {
  enum class Key {
    perms,        ///< perms=PATTERN: 4 characters as in /proc/PID/maps, '?' for "either"
    size,         ///< size OP N: mapping size in bytes (end - start)
    offset,       ///< offset OP N: the mapping's offset into its file or object, in bytes
    path_exact,   ///< path=TEXT: the whole path ("" is an anonymous mapping)
    path_prefix,  ///< path^=TEXT: the path begins with TEXT
    path_regex,   ///< path~=RE: POSIX extended regex found anywhere in the path
  };
  Key key = Key::perms;
  CompareOp op = CompareOp::eq;  ///< size and offset only
  std::uint64_t number = 0;      ///< size and offset: bytes
  std::string text;              ///< perms pattern, path text (with "\," already turned into ",")
  Regex regex;                   ///< path_regex only

  bool matches(const os::MapEntry& m) const;
};

/// A parsed SPEC: a non-empty conjunction of terms.
class MapSpec {
 public:
  /// Parses "TERM[,TERM...]" where TERM is one of
  ///   perms=rw-s                          (r|-|?)(w|-|?)(x|-|?)(p|s|?)
  ///   size=N size!=N size<N size<=N size>N size>=N    N: NumberStyle::quantity
  ///   offset=N (same operators)
  ///   path=TEXT path^=TEXT path~=REGEX    "\," in TEXT/REGEX is a literal comma
  /// The same key may appear more than once ("size>=1M,size<=2M").
  /// Errors: invalid_argument, step "parse SPEC"; `syntax`, when not null,
  /// points at the offending character and says what is accepted.
  static Result<MapSpec> parse(std::string_view text, SyntaxError* syntax = nullptr);

  /// True when every term holds for `mapping`.
  bool matches(const os::MapEntry& mapping) const;

  const std::vector<SpecTerm>& terms() const noexcept { return terms_; }
  /// The SPEC as given.
  const std::string& text() const noexcept { return text_; }

 private:
  std::vector<SpecTerm> terms_;
  std::string text_;
};

/// What a SPEC accepts, one line (used in error messages and --help).
std::string_view spec_grammar();

}  // namespace extmem::memtools
