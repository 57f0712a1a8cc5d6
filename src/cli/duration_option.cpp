#include "cli/duration_option.h"

namespace extmem::cli {

CLI::Validator duration_check(DurationRange range) {
  return CLI::Validator(
      [range](std::string& v) -> std::string {
        auto d = parse_duration(v, range);
        return d ? std::string() : d.error().detail;
      },
      "DURATION");
}

CLI::Option* add_duration_option(CLI::App& cmd, const std::string& name, std::chrono::nanoseconds& out,
                                 const std::string& help, DurationRange range) {
  // The check runs before the callback, so the value parsed here is always accepted.
  CLI::Option* o = cmd.add_option_function<std::string>(
      name, [&out, range](const std::string& v) { out = *parse_duration(v, range); },
      help + " (" + describe_duration(range) + ")");
  o->check(duration_check(range));
  return o;
}

}  // namespace extmem::cli
