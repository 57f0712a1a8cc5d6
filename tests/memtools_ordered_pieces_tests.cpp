// run_ordered_pieces: every piece done once, delivered in order, and the
// calling thread works too while it waits (with one helper on two CPUs it
// used to sleep, leaving a CPU idle: the page-offset scan ran on one core).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "memtools/ordered_pieces.h"

namespace {

TEST(MemtoolsOrderedPieces, CallerWorksBesideOneHelperAndDeliversInOrder) {
  constexpr std::size_t kPieces = 64;
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> done(kPieces);
  std::atomic<int> by_caller{0};
  std::vector<std::size_t> order;
  auto work = [&](std::size_t i) {
    // Long enough that a piece is always in a helper's hands when the caller looks.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ++done[i];
    if (std::this_thread::get_id() == caller) ++by_caller;
    return i;
  };
  auto deliver = [&](std::size_t i, std::size_t&& r) {
    EXPECT_EQ(i, r);
    order.push_back(i);
    return true;
  };
  EXPECT_TRUE(extmem::memtools::detail::run_ordered_pieces<std::size_t>(kPieces, 1, work, deliver));
  ASSERT_EQ(order.size(), kPieces);
  for (std::size_t i = 0; i < kPieces; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(done[i].load(), 1) << "piece " << i;
  }
  // Half each when both work; the caller sleeping through gave it at most a piece or two.
  EXPECT_GE(by_caller.load(), static_cast<int>(kPieces / 8));
}

TEST(MemtoolsOrderedPieces, StopsWhenDeliverSaysSo) {
  std::vector<std::size_t> order;
  auto work = [](std::size_t i) { return i; };
  auto deliver = [&](std::size_t i, std::size_t&&) {
    order.push_back(i);
    return i < 9;
  };
  EXPECT_FALSE(extmem::memtools::detail::run_ordered_pieces<std::size_t>(100, 3, work, deliver));
  ASSERT_EQ(order.size(), 10u);
  EXPECT_EQ(order.back(), 9u);
}

}  // namespace
