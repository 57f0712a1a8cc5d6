#include "extmem/memtools/regex.h"

#include <regex.h>

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {

struct Regex::Compiled {
  regex_t re{};
  bool live = false;  // regcomp succeeded; only then may regfree run
  Compiled() = default;
  Compiled(const Compiled&) = delete;
  Compiled& operator=(const Compiled&) = delete;
  ~Compiled() {
    if (live) ::regfree(&re);
  }
};

namespace {

constexpr std::string_view kRegexAccepted =
    "a POSIX extended regular expression (as grep -E) of at most 256 bytes, without back-references, "
    "with repetitions nested at most 2 deep and not multiplying it beyond 4096 elements";

// Index just past the bracket expression opening at `pos` ('['), or npos when
// it is not closed (regcomp then reports it).
std::size_t skip_bracket(std::string_view p, std::size_t pos) {
  ++pos;
  if (pos < p.size() && p[pos] == '^') ++pos;
  if (pos < p.size() && p[pos] == ']') ++pos;  // a leading ']' is a literal member
  while (pos < p.size()) {
    if (p[pos] == '[' && pos + 1 < p.size() && (p[pos + 1] == ':' || p[pos + 1] == '.' || p[pos + 1] == '=')) {
      const char close[3] = {p[pos + 1], ']', '\0'};
      const std::size_t end = p.find(close, pos + 2);
      if (end == std::string_view::npos) return std::string_view::npos;
      pos = end + 2;
    } else if (p[pos] == ']') {
      return pos + 1;
    } else {
      ++pos;
    }
  }
  return std::string_view::npos;
}

// If `p[pos]` opens an interval "{m}", "{m,}" or "{m,n}", returns how many
// copies of the repeated element regcomp makes (n, or m + 1 for "{m,}") and
// sets `end` past the '}'; otherwise returns 0.
std::uint64_t interval_copies(std::string_view p, std::size_t pos, std::size_t& end) {
  std::size_t i = pos + 1;
  std::uint64_t bounds[2] = {0, 0};
  int which = 0;
  bool digits[2] = {false, false};
  for (; i < p.size() && p[i] != '}'; ++i) {
    if (p[i] == ',' && which == 0) {
      which = 1;
    } else if (p[i] >= '0' && p[i] <= '9') {
      bounds[which] = std::min<std::uint64_t>(bounds[which] * 10 + static_cast<unsigned>(p[i] - '0'), 1u << 20);
      digits[which] = true;
    } else {
      return 0;
    }
  }
  if (i >= p.size() || !digits[0]) return 0;
  end = i + 1;
  if (which == 0) return std::max<std::uint64_t>(bounds[0], 1);
  return std::max<std::uint64_t>(digits[1] ? bounds[1] : bounds[0] + 1, 1);
}

// Checks what regcomp would accept but we do not (see Regex::compile). glibc
// compiles "x+" as "xx*" and "x{m,n}" as n copies of x, so nested repetitions
// multiply: the size of the compiled pattern is estimated the same way (an
// element counts 1, a group its contents + 1, "x+" 2x + 1, "x{m,n}" n*x + 1)
// and refused above kMaxCompiled. Repetitions of repetitions also make its
// epsilon-closure computation exponential ("a?+?+?+?+?+?+?+?+" takes seconds),
// so nesting is capped at kMaxNesting. Returns the failure, or nullopt when
// the pattern may go to regcomp.
std::optional<detail::ScanFailure> check_limits(std::string_view p) {
  if (p.empty()) return detail::ScanFailure{0, "empty regex"};
  if (p.size() > Regex::kMaxPattern)
    return detail::ScanFailure{Regex::kMaxPattern, fmt::format("regex longer than {} bytes", Regex::kMaxPattern)};
  struct Level {
    std::uint64_t alternatives = 0;  // sizes of the finished alternatives of this group
    std::uint64_t sequence = 0;      // size of the alternative being read
    std::uint64_t last = 0;          // size of its last element (what a repetition applies to)
    unsigned last_depth = 0;         // repetitions nested in that last element
    unsigned depth = 0;              // the most repetitions nested in any element of this group
  };
  std::vector<Level> levels(1);
  auto element = [&levels](std::uint64_t size, unsigned depth) {
    Level& l = levels.back();
    l.sequence += size;
    l.last = size;
    l.last_depth = depth;
    l.depth = std::max(l.depth, depth);
  };
  for (std::size_t pos = 0; pos < p.size();) {
    const char c = p[pos];
    std::size_t next = pos + 1;
    if (c == '\0') return detail::ScanFailure{pos, "NUL byte in regex"};
    if (c == '\\') {
      if (pos + 1 < p.size() && p[pos + 1] >= '1' && p[pos + 1] <= '9')
        return detail::ScanFailure{pos, "back-references are not accepted"};
      if (pos + 1 < p.size() && p[pos + 1] == '\0') return detail::ScanFailure{pos + 1, "NUL byte in regex"};
      next = pos + 2;
      element(1, 0);
    } else if (c == '[') {
      const std::size_t end = skip_bracket(p, pos);
      if (end == std::string_view::npos) break;  // unterminated: regcomp says so
      for (std::size_t i = pos; i < end; ++i)
        if (p[i] == '\0') return detail::ScanFailure{i, "NUL byte in regex"};
      next = end;
      element(1, 0);
    } else if (c == '(') {
      levels.emplace_back();
    } else if (c == ')' && levels.size() > 1) {
      const Level group = levels.back();
      levels.pop_back();
      element(group.alternatives + group.sequence + 1, group.depth);
    } else if (c == '|') {
      Level& l = levels.back();
      l.alternatives += l.sequence + 1;
      l.sequence = 0;
      l.last = 0;
    } else if (c == '*' || c == '?' || c == '+' || c == '{') {
      std::uint64_t copies = c == '+' ? 2 : 1;
      if (c == '{') {
        std::size_t end = 0;
        copies = interval_copies(p, pos, end);
        if (copies == 0) {
          element(1, 0);  // not an interval: a literal brace (or a regcomp error)
          pos = next;
          continue;
        }
        next = end;
      }
      Level& l = levels.back();
      if (l.last_depth + 1 > Regex::kMaxNesting)
        return detail::ScanFailure{pos, fmt::format("more than {} nested repetitions (such as ((a+)*)?)",
                                                    Regex::kMaxNesting)};
      const std::uint64_t grown = l.last * copies + 1;
      l.sequence = l.sequence - l.last + grown;
      l.last = grown;
      l.last_depth += 1;
      l.depth = std::max(l.depth, l.last_depth);
    } else {
      element(1, 0);
    }
    for (const Level& l : levels)
      if (l.alternatives + l.sequence > Regex::kMaxCompiled)
        return detail::ScanFailure{pos, fmt::format("repetitions make the regex larger than {} elements",
                                                    Regex::kMaxCompiled)};
    pos = next;
  }
  return std::nullopt;
}

}  // namespace

Result<Regex> Regex::compile(std::string_view pattern, std::string_view subject, SyntaxError* syntax) {
  if (auto failure = check_limits(pattern))
    return detail::syntax_failure(syntax, subject, pattern, failure->column, failure->problem, kRegexAccepted);
  auto compiled = std::make_shared<Compiled>();
  const std::string text(pattern);
  const int rc = ::regcomp(&compiled->re, text.c_str(), REG_EXTENDED | REG_NOSUB);
  compiled->live = rc == 0;
  if (rc != 0) {
    char message[256];
    ::regerror(rc, &compiled->re, message, sizeof message);
    return detail::syntax_failure(syntax, subject, pattern, 0, fmt::format("regcomp: {}", message), kRegexAccepted);
  }
  Regex out;
  out.compiled_ = std::move(compiled);
  out.pattern_ = text;
  return out;
}

bool Regex::search(std::string_view text) const {
  if (!compiled_) return false;
  const std::string copy(text);
  return ::regexec(&compiled_->re, copy.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace extmem::memtools
