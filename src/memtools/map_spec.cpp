#include "extmem/memtools/map_spec.h"

#include <fmt/format.h>

#include "memtools/scan.h"

namespace extmem::memtools {
namespace {

constexpr std::string_view kGrammar =
    "TERM[,TERM...], every term must hold; TERM is perms=rw-s (r|-|?, w|-|?, x|-|?, p|s|?), "
    "size=N size!=N size<N size<=N size>N size>=N, offset (same operators), "
    "path=EXACT path^=PREFIX path~=REGEX (POSIX extended); N decimal or 0x-hex with K/M/G; "
    "write \\, for a comma inside a path";

bool is_key_char(char c) { return c >= 'a' && c <= 'z'; }

// Reads the operator at `pos`; returns its length (0 when none is recognised).
std::size_t scan_operator(std::string_view text, std::size_t pos, std::string& op) {
  static constexpr std::string_view kOps[] = {"==", "!=", "<=", ">=", "^=", "~=", "=", "<", ">"};
  for (std::string_view candidate : kOps) {
    if (text.substr(pos, candidate.size()) == candidate) {
      op = std::string(candidate);
      return candidate.size();
    }
  }
  return 0;
}

std::optional<CompareOp> numeric_op(std::string_view op) {
  if (op == "=" || op == "==") return CompareOp::eq;
  if (op == "!=") return CompareOp::ne;
  if (op == "<") return CompareOp::lt;
  if (op == "<=") return CompareOp::le;
  if (op == ">") return CompareOp::gt;
  if (op == ">=") return CompareOp::ge;
  return std::nullopt;
}

}  // namespace

const char* to_string(CompareOp op) noexcept {
  switch (op) {
    case CompareOp::eq: return "==";
    case CompareOp::ne: return "!=";
    case CompareOp::lt: return "<";
    case CompareOp::le: return "<=";
    case CompareOp::gt: return ">";
    case CompareOp::ge: return ">=";
  }
  return "?";
}

bool compare(std::uint64_t lhs, CompareOp op, std::uint64_t rhs) noexcept {
  switch (op) {
    case CompareOp::eq: return lhs == rhs;
    case CompareOp::ne: return lhs != rhs;
    case CompareOp::lt: return lhs < rhs;
    case CompareOp::le: return lhs <= rhs;
    case CompareOp::gt: return lhs > rhs;
    case CompareOp::ge: return lhs >= rhs;
  }
  return false;
}

std::string_view spec_grammar() { return kGrammar; }

bool SpecTerm::matches(const os::MapEntry& m) const {
  switch (key) {
    case Key::perms:
      if (m.perms.size() != text.size()) return false;
      for (std::size_t i = 0; i < text.size(); ++i)
        if (text[i] != '?' && text[i] != m.perms[i]) return false;
      return true;
    case Key::size: return compare(m.size(), op, number);
    case Key::offset: return compare(m.offset, op, number);
    case Key::path_exact: return m.path == text;
    case Key::path_prefix: return m.path.compare(0, text.size(), text) == 0;
    case Key::path_regex: return regex.search(m.path);
  }
  return false;
}

bool MapSpec::matches(const os::MapEntry& mapping) const {
  for (const SpecTerm& t : terms_)
    if (!t.matches(mapping)) return false;
  return !terms_.empty();
}

namespace {

// Where a SPEC is wrong, why, and what is accepted there.
struct SpecProblem {
  std::size_t column;
  std::string problem;
  std::string accepted = std::string(kGrammar);
};

// A path term's value at `pos` (moved to the comma or the end) into `term`:
// path= exact, path^= a prefix, path~= a regex.
std::optional<SpecProblem> parse_path_value(std::string_view text, std::size_t& pos, const std::string& op,
                                            SpecTerm& term) {
  // The value runs to the next comma not written as "\,"; keep where each
  // character came from so a regex error can point into the input.
  std::vector<std::size_t> origin;
  while (pos < text.size() && text[pos] != ',') {
    if (text[pos] == '\\' && pos + 1 < text.size() && text[pos + 1] == ',') ++pos;
    term.text += text[pos];
    origin.push_back(pos);
    ++pos;
  }
  if (op == "^=") {
    term.key = SpecTerm::Key::path_prefix;
  } else if (op == "~=") {
    term.key = SpecTerm::Key::path_regex;
    SyntaxError inner;
    auto re = Regex::compile(term.text, "SPEC", &inner);
    if (!re) {
      const std::size_t column = inner.column < origin.size() ? origin[inner.column] : pos;
      return SpecProblem{column, "path~= " + inner.problem, "after path~=, " + inner.accepted};
    }
    term.regex = std::move(*re);
  }
  return std::nullopt;
}

// A perms term's value, [value_begin, value_end): four characters, each from its column's set.
std::optional<SpecProblem> parse_perms_value(std::string_view text, std::size_t value_begin, std::size_t value_end,
                                             SpecTerm& term) {
  static constexpr std::string_view kAllowed[4] = {"r-?", "w-?", "x-?", "ps?"};
  for (std::size_t i = 0; i < 4; ++i) {
    const std::size_t at = value_begin + i;
    if (at >= value_end)
      return SpecProblem{at, fmt::format("perms takes exactly 4 characters, found {}", value_end - value_begin)};
    if (kAllowed[i].find(text[at]) == std::string_view::npos)
      return SpecProblem{at, fmt::format("perms character {} takes one of {}, found {}", i + 1,
                                         fmt::join(kAllowed[i], " "), detail::quote_char(text, at))};
  }
  if (value_end > value_begin + 4)
    return SpecProblem{value_begin + 4,
                       fmt::format("perms takes exactly 4 characters, found {}", value_end - value_begin)};
  term.text = std::string(text.substr(value_begin, 4));
  return std::nullopt;
}

}  // namespace

Result<MapSpec> MapSpec::parse(std::string_view text, SyntaxError* syntax) {
  auto fail = [&](std::size_t column, std::string problem, std::string_view accepted = kGrammar) {
    return detail::syntax_failure(syntax, "SPEC", text, column, std::move(problem), accepted);
  };
  if (text.empty()) return fail(0, "empty SPEC");
  MapSpec spec;
  spec.text_ = std::string(text);
  std::size_t pos = 0;
  while (true) {
    const std::size_t key_begin = pos;
    while (pos < text.size() && is_key_char(text[pos])) ++pos;
    const std::string_view key = text.substr(key_begin, pos - key_begin);
    if (key.empty()) {
      if (pos >= text.size() || text[pos] == ',') return fail(pos, "empty term");
      return fail(pos, fmt::format("expected a key (perms, size, offset, path), found {}",
                                   detail::quote_char(text, pos)));
    }
    SpecTerm term;
    if (key == "perms") term.key = SpecTerm::Key::perms;
    else if (key == "size") term.key = SpecTerm::Key::size;
    else if (key == "offset") term.key = SpecTerm::Key::offset;
    else if (key == "path") term.key = SpecTerm::Key::path_exact;
    else return fail(key_begin, fmt::format("unknown key \"{}\"", key));

    std::string op;
    const std::size_t op_begin = pos;
    pos += scan_operator(text, pos, op);
    const bool is_path = term.key == SpecTerm::Key::path_exact;
    const bool is_number = term.key == SpecTerm::Key::size || term.key == SpecTerm::Key::offset;
    if (op.empty() || (term.key == SpecTerm::Key::perms && op != "=") ||
        (is_number && !numeric_op(op)) || (is_path && op != "=" && op != "^=" && op != "~=")) {
      const char* takes = term.key == SpecTerm::Key::perms ? "=" : is_path ? "=, ^= or ~=" : "=, !=, <, <=, > or >=";
      return fail(op_begin, fmt::format("{} takes {}, found {}", key, takes, detail::quote_char(text, op_begin)));
    }
    const std::size_t value_begin = pos;

    if (is_path) {
      if (auto bad = parse_path_value(text, pos, op, term)) return fail(bad->column, bad->problem, bad->accepted);
    } else {
      const std::size_t comma = text.find(',', pos);
      const std::size_t value_end = comma == std::string_view::npos ? text.size() : comma;
      if (term.key == SpecTerm::Key::perms) {
        if (auto bad = parse_perms_value(text, value_begin, value_end, term)) return fail(bad->column, bad->problem);
      } else {
        detail::ScanFailure failure;
        auto n = detail::scan_number(text, value_begin, value_end, NumberStyle::quantity, failure);
        if (!n) return fail(failure.column, failure.problem);
        term.number = *n;
        term.op = *numeric_op(op);
      }
      pos = value_end;
    }
    spec.terms_.push_back(std::move(term));
    if (pos >= text.size()) break;
    ++pos;  // the comma
    if (pos >= text.size()) return fail(pos, "empty term after the last ','");
  }
  return spec;
}

}  // namespace extmem::memtools
