// The activation arena's plan (backends/common/arena_plan.h): tensors alive at the same step
// never share a byte, tensors that are not do, offsets are aligned, bad lifetimes are refused.
#include "arena_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace co_up::backends {
namespace {

// Every pair alive at a common step occupies disjoint bytes; every placed tensor is aligned and
// inside the arena.
void expect_valid(const std::vector<TensorLifetime>& tensors, const ArenaPlan& plan, int64_t alignment) {
  ASSERT_EQ(plan.offsets.size(), tensors.size());
  for (size_t a = 0; a < tensors.size(); ++a) {
    if (tensors[a].bytes == 0) {
      EXPECT_EQ(plan.offsets[a], -1) << "tensor " << a;
      continue;
    }
    EXPECT_EQ(plan.offsets[a] % alignment, 0) << "tensor " << a;
    EXPECT_LE(plan.offsets[a] + tensors[a].bytes, plan.bytes) << "tensor " << a;
    for (size_t b = a + 1; b < tensors.size(); ++b) {
      if (tensors[b].bytes == 0) continue;
      const bool together = tensors[a].first_step <= tensors[b].last_step &&
                            tensors[b].first_step <= tensors[a].last_step;
      const bool overlap = plan.offsets[a] < plan.offsets[b] + tensors[b].bytes &&
                           plan.offsets[b] < plan.offsets[a] + tensors[a].bytes;
      EXPECT_FALSE(together && overlap) << "tensors " << a << " and " << b << " are alive together and share memory";
    }
  }
}

TEST(ArenaPlan, AChainOfLayersPingPongsBetweenTwoBuffers) {
  // x0 -> step 0 -> x1 -> step 1 -> x2 ... : each step reads one tensor and writes the next.
  std::vector<TensorLifetime> chain;
  for (uint32_t t = 0; t < 8; ++t) chain.push_back({1000, t == 0 ? 0 : t - 1, t});
  const ArenaPlan plan = plan_arena(chain, 64);
  expect_valid(chain, plan, 64);
  EXPECT_EQ(plan.bytes, 1024 + 1000);  // two buffers, the second aligned
}

TEST(ArenaPlan, AShortcutKeepsItsMemoryUntilItsLastReader) {
  // ResNet's block: x (steps 0-3) feeds conv a (writes y at 0), conv b (y -> z at 1), conv c
  // (z -> w at 2), and the Add at 3 reads w and x.
  const std::vector<TensorLifetime> block = {{4096, 0, 3}, {4096, 0, 1}, {4096, 1, 2}, {4096, 2, 3}, {4096, 3, 3}};
  const ArenaPlan plan = plan_arena(block, 64);
  expect_valid(block, plan, 64);
  EXPECT_EQ(plan.bytes, 3 * 4096);  // x plus two of y, z, w, out at any step
  EXPECT_EQ(plan.offsets[1], plan.offsets[3]);  // y is dead when w is written
}

TEST(ArenaPlan, RandomLifetimesNeverShareLiveMemoryAndBeatOneBufferEach) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<TensorLifetime> tensors(1 + rng() % 40);
    int64_t separate = 0;
    for (auto& t : tensors) {
      t.first_step = rng() % 30;
      t.last_step = t.first_step + rng() % 6;
      t.bytes = rng() % 5 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 100000);
      separate += (t.bytes + 127) / 128 * 128;
    }
    const ArenaPlan plan = plan_arena(tensors, 128);
    expect_valid(tensors, plan, 128);
    EXPECT_LE(plan.bytes, separate);
    if (HasFailure()) return;
  }
}

TEST(ArenaPlan, BadLifetimesAndAlignmentsAreRefusedWithAReason) {
  try {
    plan_arena({{64, 5, 2}});
    FAIL() << "a lifetime ending before it starts was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 0 is last used at step 2, before it is written at step 5"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_arena({{64, 0, 1}}, 48), std::invalid_argument);
  EXPECT_THROW(plan_arena({{64, 0, 1}}, 0), std::invalid_argument);
  EXPECT_EQ(plan_arena({}).bytes, 0);
}

}  // namespace
}  // namespace co_up::backends
