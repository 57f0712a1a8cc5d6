#include "probe/routes/gles/ladder.h"

#include <algorithm>

#include <fmt/format.h>

namespace extmem::probe {

std::string Rung::label() const {
  return fmt::format("dedicated={} import={}({}) buffer={}({})", dedicated ? "on" : "off", import_from, import_size,
                     buffer_from, buffer_size);
}

std::string LadderResult::accepted_text() const {
  return "accepted=" + (accepted ? accepted->label() : std::string("none"));
}

std::string LadderResult::ladder_text() const {
  if (rejected.empty()) return {};
  std::string s = "ladder:";
  for (std::size_t i = 0; i < rejected.size(); ++i)
    s += fmt::format("{} {}: {} -> {}", i == 0 ? "" : ";", rejected[i].first.label(), rejected[i].second.step,
                     rejected[i].second.gl_error);
  return s;
}

std::vector<Rung> ladder_rungs(std::uint64_t requested, std::uint64_t reqs_size, std::uint64_t fd_size) {
  std::vector<Rung> rungs;
  for (bool dedicated : {false, true}) {
    for (auto [import_from, import_size] : {std::pair{"reqs", reqs_size}, std::pair{"fd", fd_size}}) {
      if (import_size == 0) continue;
      for (auto [buffer_from, buffer_size] : {std::pair{"requested", requested}, std::pair{"import", import_size}}) {
        // A rung is the triple of values handed to GL; its labels only say where
        // they came from. When two rungs pass the same triple (the import size
        // equals the requested size, or the fd's size equals the requirements'
        // size) the driver sees the same call, so it is made once, under the
        // first label.
        const std::uint64_t imp = import_size, buf = buffer_size;  // clang 14 lambdas cannot capture bindings
        const bool repeat = std::any_of(rungs.begin(), rungs.end(), [&](const Rung& r) {
          return r.dedicated == dedicated && r.import_size == imp && r.buffer_size == buf;
        });
        if (!repeat) rungs.push_back(Rung{dedicated, import_size, buffer_size, import_from, buffer_from});
      }
    }
  }
  return rungs;
}

LadderResult walk_ladder(const std::vector<Rung>& rungs, const std::function<RungOutcome(const Rung&)>& try_rung) {
  LadderResult result;
  for (const Rung& rung : rungs) {
    RungOutcome outcome = try_rung(rung);
    if (outcome.accepted) {
      result.accepted = rung;
      break;
    }
    result.rejected.emplace_back(rung, std::move(outcome));
  }
  return result;
}

}  // namespace extmem::probe
