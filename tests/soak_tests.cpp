// --soak: the stale-word counter on real shared mappings, and the verdict it feeds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <optional>

#include "extmem/core/pattern.h"
#include "extmem/core/verdict.h"
#include "extmem/os/fd.h"
#include "probe/worker/child_context.h"
#include "probe/worker/soak.h"

namespace {

using namespace extmem;
using namespace extmem::probe;

// Two MAP_SHARED views of one memfd: "ours" and "the other side's".
struct SharedPair {
  os::UniqueFd fd;
  os::Mapping ours, theirs;
  SharedPair() {
    auto f = os::create_memfd("soak-test", kMinSize);
    fd = std::move(*f);
    ours = std::move(*os::Mapping::map(fd.get(), kMinSize, MAP_SHARED));
    theirs = std::move(*os::Mapping::map(fd.get(), kMinSize, MAP_SHARED));
  }
};

ChildContext make_context(std::pair<os::Channel, os::Channel>& peer, std::pair<os::Channel, os::Channel>& parent) {
  HalfParams p{"T3-memfd-cross-process", Role::server, 0, Layout{kMinSize, false}, 0.3};
  return ChildContext(p, std::move(peer.first), std::move(parent.first));
}

// Counting stale words counts 32-bit words, not bytes.
TEST(Soak, CountsWordsNotBytes) {
  std::vector<std::byte> region(64);
  pattern::fill(region, 7);
  EXPECT_EQ(pattern::count_stale_words(region, 7), 0u);
  region[0] ^= std::byte{1};
  region[1] ^= std::byte{1};  // same word
  region[9] ^= std::byte{1};  // another word
  EXPECT_EQ(pattern::count_stale_words(region, 7), 2u);
}

// An OK row whose soak found stale words is PARTIAL, with the counts in why.
TEST(Soak, StaleWordsTurnOkIntoPartial) {
  Leg leg{"mmap", true, true, true, true, {}, {}, {}};
  RouteFacts facts;
  facts.soak = SoakCount{3, 4096, 4};
  Verdict v = decide(facts, {leg});
  EXPECT_EQ(v.status, RowStatus::partial);
  EXPECT_EQ(v.why, "stale=3/4096 words in 4 rounds");
  facts.soak = SoakCount{0, 4096, 4};
  EXPECT_EQ(decide(facts, {leg}).status, RowStatus::ok);
}

// A coherent shared mapping soaks with no stale word (negative control for the next test).
TEST(Soak, CoherentMappingHasNoStaleWords) {
  SharedPair m;
  auto peer = *os::Channel::pair();
  auto parent = *os::Channel::pair();
  ChildContext ctx = make_context(peer, parent);
  std::optional<Error> error;
  SoakCount c = run_soak(ctx, SoakPlan{0.3, m.ours.bytes(), Region::C, Region::B, Region::E, nullptr},
                         local_side(m.theirs.bytes(), ctx.layout()), &error);
  EXPECT_FALSE(error);
  EXPECT_GT(c.rounds, 10u);
  EXPECT_EQ(c.words, c.rounds * 2 * (kRegionSize / 4));
  EXPECT_EQ(c.stale, 0u);
}

// Another process that corrupts the other side's view now and then is caught:
// stale > 0, and the row is PARTIAL. (A process, not a thread: the writer is
// another process in real use, and a thread here raced with the soak's plain
// reads: undefined behaviour, and a ThreadSanitizer report.)
TEST(Soak, IntermittentCorruptionIsCounted) {
  SharedPair m;
  auto peer = *os::Channel::pair();
  auto parent = *os::Channel::pair();
  ChildContext ctx = make_context(peer, parent);
  const Layout layout = ctx.layout();
  const pid_t corrupter = ::fork();
  ASSERT_GE(corrupter, 0);
  if (corrupter == 0) {
    auto* word = reinterpret_cast<volatile std::uint32_t*>(m.theirs.data() + layout.offset(Region::C) + 256);
    for (;;) {  // until SIGKILL
      *word = *word ^ 0x5a5a5a5a;
      ::usleep(200);
    }
  }
  std::optional<Error> error;
  SoakCount c = run_soak(ctx, SoakPlan{0.3, m.ours.bytes(), Region::C, Region::B, Region::E, nullptr},
                         local_side(m.theirs.bytes(), layout), &error);
  ::kill(corrupter, SIGKILL);
  ::waitpid(corrupter, nullptr, 0);
  EXPECT_GT(c.stale, 0u);
  EXPECT_LT(c.stale, c.words);
  RouteFacts facts;
  facts.soak = c;
  EXPECT_EQ(decide(facts, {Leg{"mmap", true, true, true, true, {}, {}, {}}}).status, RowStatus::partial);
}

}  // namespace
