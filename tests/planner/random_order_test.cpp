// planner/random_order.h: the orders it draws, and a clear std::invalid_argument (not a division
// by zero or an endless loop) when no such order exists.
#include "planner/random_order.h"

#include <gtest/gtest.h>

#include <future>
#include <stdexcept>

namespace co_up::planner {
namespace {

// The call under a time limit: an endless loop fails the test instead of hanging it.
std::string draw(uint32_t layers, std::string letters) {
  auto result = std::async(std::launch::async, [layers, letters] {
    std::mt19937_64 rng(3);
    return random_order(layers, letters, rng);
  });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "random_order(" << layers << ", \"" << letters << "\") does not return";
    std::quick_exit(1);  // the worker never finishes: nothing to join
  }
  return result.get();
}

TEST(RandomOrder, DrawsContiguousRunsOfTheGivenLetters) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200; ++i) {
    const std::string order = random_order(12, "BLG", rng);
    ASSERT_EQ(order.size(), 12u);
    size_t runs = 1;
    for (size_t k = 1; k < order.size(); ++k) runs += order[k] != order[k - 1] ? 1 : 0;
    EXPECT_GE(runs, 3u) << order;
    EXPECT_LE(runs, 6u) << order;
    EXPECT_EQ(order.find_first_not_of("BLG"), std::string::npos) << order;
  }
  EXPECT_EQ(draw(2, "BL").size(), 2u);
}

TEST(RandomOrder, RejectsFewerThanTwoLayersOrLetters) {
  const auto message = [](uint32_t layers, const std::string& letters) -> std::string {
    try {
      draw(layers, letters);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no exception)";
  };
  EXPECT_EQ(message(1, "BL"), "random_order: needs at least 2 layers to cut, got 1");
  EXPECT_EQ(message(0, "BL"), "random_order: needs at least 2 layers to cut, got 0");
  EXPECT_EQ(message(8, "B"), "random_order: needs at least two distinct processor letters, got 'B'");
  EXPECT_EQ(message(8, "BB"), "random_order: needs at least two distinct processor letters, got 'BB'");
  EXPECT_EQ(message(8, ""), "random_order: needs at least two distinct processor letters, got ''");
}

// The orders `co_up profile` measures: random_order's runs, then each region's branches either
// left alone or each given one letter; the same seed draws the same orders.
TEST(RandomBranchOrder, GivesEachBranchOfARegionOneLetterOrLeavesIt) {
  // Units 0..9; a region forking at 1 with branches {2, 3} and {4, 5, 6}, joining at 7.
  const std::vector<graph::DagRegion> regions = {{1, 7, {{2, 3}, {4, 5, 6}}}};
  std::mt19937_64 rng(5), again(5);
  int overridden = 0;
  for (int i = 0; i < 200; ++i) {
    std::mt19937_64 before = rng;
    const std::string order = random_branch_order(10, "BL", regions, rng);
    ASSERT_EQ(order, random_branch_order(10, "BL", regions, again));
    const std::string base = random_order(10, "BL", before);  // the runs it starts from
    ASSERT_EQ(order.size(), 10u);
    EXPECT_EQ(order.find_first_not_of("BL"), std::string::npos) << order;
    for (uint32_t u : {0u, 1u, 7u, 8u, 9u}) EXPECT_EQ(order[u], base[u]) << order << " from " << base;
    if (order.substr(2, 5) == base.substr(2, 5)) continue;
    ++overridden;
    EXPECT_EQ(order[2], order[3]) << order;
    EXPECT_EQ(order[4], order[5]) << order;
    EXPECT_EQ(order[5], order[6]) << order;
  }
  EXPECT_GT(overridden, 20);
}

}  // namespace
}  // namespace co_up::planner
