#include "probe/job_codec.h"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "probe/gl_driver.h"
#include "probe/json_kind.h"
#include "probe/routes.h"

namespace extmem::probe {
namespace {

using nlohmann::json;

Error job_error(std::string_view field, std::string detail) {
  return Error{field.empty() ? std::string("job") : fmt::format("job.{}", field), ErrorKind::protocol, {},
               std::move(detail)};
}

bool printable_word(const std::string& s) {
  for (char c : s)
    if (c <= ' ' || c > '~') return false;
  return true;
}

// Writes each field into a JSON object.
struct Writer {
  json& out;
  void operator()(const char* name, const std::string& v, auto) { out[name] = v; }
  void operator()(const char* name, bool v) { out[name] = v; }
  void operator()(const char* name, Role v) { out[name] = to_string(v); }
  void operator()(const char* name, os::FdTransport v) { out[name] = os::to_string(v); }
  void operator()(const char* name, double v, RealRange) { out[name] = v; }
  template <class Int>
  void operator()(const char* name, Int v, WholeRange) {
    out[name] = v;
  }
};

// Reads each field from a JSON object; the first refusal is kept and the rest skipped.
struct Reader {
  const json& in;
  std::optional<Error> error;
  std::set<std::string, std::less<>> seen;

  const json* field(const char* name) {
    if (error) return nullptr;
    seen.insert(name);
    auto it = in.find(name);
    if (it == in.end()) {
      error = job_error(name, "missing");
      return nullptr;
    }
    return &*it;
  }
  void refuse(const char* name, std::string detail) { error = job_error(name, std::move(detail)); }

  void operator()(const char* name, std::string& v, TextLimit limit) {
    const json* j = field(name);
    if (j == nullptr) return;
    if (!j->is_string()) return refuse(name, fmt::format("found {}: a string is accepted", json_kind(*j)));
    const auto& s = j->get_ref<const std::string&>();
    if (s.empty() || s.size() > limit.max_bytes || !printable_word(s))
      return refuse(name, fmt::format("a string of {} bytes is not accepted: 1 to {} printable ASCII characters, no spaces",
                                      s.size(), limit.max_bytes));
    v = s;
  }
  void operator()(const char* name, std::string& v, GlDriverName) {
    const json* j = field(name);
    if (j == nullptr) return;
    if (!j->is_string() || !gl_driver_name_ok(j->get_ref<const std::string&>()))
      return refuse(name, std::string("not accepted: ") + kGlDriverAccepts);
    v = j->get<std::string>();
  }
  void operator()(const char* name, bool& v) {
    const json* j = field(name);
    if (j == nullptr) return;
    if (!j->is_boolean()) return refuse(name, fmt::format("found {}: true or false is accepted", json_kind(*j)));
    v = j->get<bool>();
  }
  void operator()(const char* name, Role& v) {
    const json* j = field(name);
    if (j == nullptr) return;
    const std::string* s = j->is_string() ? &j->get_ref<const std::string&>() : nullptr;
    if (s != nullptr && *s == "server") v = Role::server;
    else if (s != nullptr && *s == "client") v = Role::client;
    else refuse(name, "not accepted: \"server\" or \"client\"");
  }
  void operator()(const char* name, os::FdTransport& v) {
    const json* j = field(name);
    if (j == nullptr) return;
    const std::string* s = j->is_string() ? &j->get_ref<const std::string&>() : nullptr;
    if (s != nullptr && *s == "scm") v = os::FdTransport::scm;
    else if (s != nullptr && *s == "pidfd") v = os::FdTransport::pidfd;
    else refuse(name, "not accepted: \"scm\" or \"pidfd\"");
  }
  void operator()(const char* name, double& v, RealRange r) {
    const json* j = field(name);
    if (j == nullptr) return;
    const double d = j->is_number() ? j->get<double>() : NAN;
    if (!(d >= r.min && d <= r.max))  // also refuses NaN
      return refuse(name, fmt::format("found {}: a number from {:g} to {:g} is accepted", j->is_number() ? "a number out of range" : json_kind(*j), r.min, r.max));
    v = d;
  }
  template <class Int>
  void operator()(const char* name, Int& v, WholeRange r) {
    const json* j = field(name);
    if (j == nullptr) return;
    const std::string accepted =
        r.step == 1 ? fmt::format("a whole number from {} to {}", r.min, r.max)
                    : fmt::format("a multiple of {} from {} to {}", r.step, r.min, r.max);
    std::int64_t n = 0;
    if (j->is_number_unsigned()) {
      const std::uint64_t u = j->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(r.max)) return refuse(name, fmt::format("{} is not accepted: {}", u, accepted));
      n = static_cast<std::int64_t>(u);
    } else if (j->is_number_integer()) {
      n = j->get<std::int64_t>();
    } else {
      return refuse(name, fmt::format("found {}: {}", json_kind(*j), accepted));
    }
    if (n < r.min || n > r.max || n % r.step != 0) return refuse(name, fmt::format("{} is not accepted: {}", n, accepted));
    v = static_cast<Int>(n);
  }
};

}  // namespace

std::string encode_job(const HalfParams& p) {
  json out = json::object();
  visit_fields(p, Writer{out});
  return out.dump();
}

Result<HalfParams> decode_job(std::string_view payload) {
  if (payload.size() > kMaxJobBytes)
    return job_error({}, fmt::format("{} bytes is not accepted: at most {}", payload.size(), kMaxJobBytes));
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return job_error({}, "not JSON: a JSON object is accepted");
  if (!j.is_object()) return job_error({}, fmt::format("found {}: a JSON object is accepted", json_kind(j)));
  HalfParams p;
  Reader reader{j, std::nullopt, {}};
  visit_fields(p, reader);
  if (reader.error) return std::move(*reader.error);
  for (const auto& [key, value] : j.items())
    if (reader.seen.count(key) == 0)
      return job_error({}, fmt::format("unknown field \"{:.64}\": the fields are {}", key, fmt::join(reader.seen, ", ")));
  if (find_route(p.row) == nullptr)
    return job_error("row", fmt::format("\"{}\" is not a row of this build", p.row));
  return p;
}

}  // namespace extmem::probe
