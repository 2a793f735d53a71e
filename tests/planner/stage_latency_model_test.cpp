// The Map-and-Conquer latency/energy model (Eq. 8-14) against values worked out by hand.
#include "planner/stage_latency_model.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace co_up::planner {
namespace {

// Two stages, two layers and an exit each; stage 1's layer-1 features go to stage 2 (I[0][0] =
// 1), its layer-2 features do not (I[0][1] = 0).
//   T[0] = 1, 1+4 = 5, 5+0.5 = 5.5
//   T[1][0] = 3
//   T[1][1] = 1 + max(T[1][0] = 3, T[0][0] + u = 1 + 0.5) = 4
//   T[1][2] = 0.25 + max(T[1][1] = 4) = 4.25          (I[0][1] = 0: stage 1's 5 + 0.7 not waited for)
TEST(StageLatencyModel, Eq8TwoStagesMatchesHandComputedValues) {
  StageCosts c;
  c.tau = {{1, 4, 0.5}, {3, 1, 0.25}};
  c.reuse = {{1, 0}, {0, 0}};
  c.transfer = {{{0, 0}, {0.5, 0.7}}, {{0, 0}, {0, 0}}};
  const auto t = cumulative_latency(c);
  EXPECT_DOUBLE_EQ(t[0][0], 1);
  EXPECT_DOUBLE_EQ(t[0][1], 5);
  EXPECT_DOUBLE_EQ(t[0][2], 5.5);
  EXPECT_DOUBLE_EQ(t[1][0], 3);
  EXPECT_DOUBLE_EQ(t[1][1], 4);
  EXPECT_DOUBLE_EQ(t[1][2], 4.25);
  // With the layer-2 features reused, stage 2's exit waits for them: 0.25 + (5 + 0.7) = 5.95.
  c.reuse = {{1, 1}, {0, 0}};
  EXPECT_DOUBLE_EQ(cumulative_latency(c)[1][2], 5.95);
  EXPECT_EQ(stage_latency(c), (std::vector<double>{5.5, 5.95}));
}

// Three stages, u = 0.5 between every pair; I = [[1,1],[1,0],[0,0]].
//   T[0] = 1, 2, 3
//   T[1] = 2, 2 + max(2, 1+.5) = 4, 2 + max(4, 2+.5) = 6
//   T[2] = 1, 1 + max(1, 1+.5, 2+.5) = 3.5, 1 + max(3.5, 2+.5) = 4.5   (stage 2's layer 2: I = 0)
// Power 2, 1, 4 W: E_S = 3*2 = 6, 6*1 = 6, 3*4 = 12 mJ.
// Exits (Eq. 13-14): stop after stage 1: 3 ms, 6 mJ; stage 2: max(3, 6) = 6 ms, 12 mJ; stage 3:
// max(3, 6, 4.5) = 6 ms, 24 mJ.
TEST(StageLatencyModel, Eq8To14ThreeStagesMatchHandComputedValues) {
  StageCosts c;
  c.tau = {{1, 1, 1}, {2, 2, 2}, {1, 1, 1}};
  c.reuse = {{1, 1}, {1, 0}, {0, 0}};
  c.transfer.assign(3, std::vector<std::vector<double>>(3, std::vector<double>{0.5, 0.5}));
  c.power_w = {2, 1, 4};
  const auto t = cumulative_latency(c);
  EXPECT_EQ(t[0], (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(t[1], (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(t[2], (std::vector<double>{1, 3.5, 4.5}));
  EXPECT_EQ(stage_energy(c), (std::vector<double>{6, 6, 12}));
  const auto exits = exit_costs(c);
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_DOUBLE_EQ(exits[0].latency_ms, 3);
  EXPECT_DOUBLE_EQ(exits[0].energy_mj, 6);
  EXPECT_DOUBLE_EQ(exits[1].latency_ms, 6);
  EXPECT_DOUBLE_EQ(exits[1].energy_mj, 12);
  EXPECT_DOUBLE_EQ(exits[2].latency_ms, 6);
  EXPECT_DOUBLE_EQ(exits[2].energy_mj, 24);
}

// The same three stages run as whole sub-graphs: stage sums 3, 6, 3.
//   T_S[0] = 3
//   T_S[1] = 6 + (T_S[0] + u of layers 1 and 2 = 3 + 1) = 10
//   T_S[2] = 3 + max(T_S[0] + 1, T_S[1] + 0.5) = 13.5   (stage 1 shares only its layer 1)
TEST(StageLatencyModel, WholeStagesWaitForEveryStageTheyRead) {
  StageCosts c;
  c.tau = {{1, 1, 1}, {2, 2, 2}, {1, 1, 1}};
  c.reuse = {{1, 1}, {1, 0}, {0, 0}};
  c.transfer.assign(3, std::vector<std::vector<double>>(3, std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(whole_stage_latency(c), (std::vector<double>{3, 10, 13.5}));
  const auto exits = exit_costs(c, true);
  EXPECT_DOUBLE_EQ(exits[1].latency_ms, 10);
  EXPECT_DOUBLE_EQ(exits[2].latency_ms, 13.5);
}

TEST(StageLatencyModel, Eq10PowerIsLinearInTheScalingFactor) {
  EXPECT_DOUBLE_EQ(stage_power_w(0.5, 0.25, 4), 1.5);
}

TEST(StageLatencyModel, InconsistentShapesAreInputErrors) {
  StageCosts c;
  c.tau = {{1, 1}, {1}};
  c.reuse = {{0}, {0}};
  EXPECT_THROW(cumulative_latency(c), InputError);
  c.tau = {{1, 1}, {1, 1}};
  c.reuse = {{0}};
  EXPECT_THROW(cumulative_latency(c), InputError);
}

}  // namespace
}  // namespace co_up::planner
