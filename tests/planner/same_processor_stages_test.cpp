// The runtime stage model when stages share a processor: each stage of a multi-exit network is a
// sub-graph of its own (cut after its exit), so a frame stopping at exit k pays for no later
// stage on that processor, and the next stage on the same processor costs its dispatch plus a
// per-letter step (commit, the thread's next pick, the copy of the features it reads), fitted
// like the other costs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/stage_overheads.h"
#include "tests/planner/three_stage_costs.h"
#include "planner/stage_plan_search.h"

namespace co_up::planner {
namespace {

using test::three_stages;

StageOverheads known() {
  StageOverheads o;
  o.run_ms = {{'B', 0.1}, {'L', 0.2}, {'G', 0.3}};
  o.boundary_ms = {{'B', 1.0}, {'L', 2.0}, {'G', 4.0}};
  o.next_stage_ms = {{'B', 0.03}, {'L', 0.05}, {'G', 0.07}};
  return o;
}

TEST(SameProcessorStages, AFrameStoppingInsideARunOfOneLetterPaysOnlyItsStages) {
  const std::vector<double> t = runtime_exit_latency(three_stages(), "BBL", known());
  ASSERT_EQ(t.size(), 3u);
  EXPECT_NEAR(t[0], 0.011 + 0.1, 1e-12);                        // stage 1 only
  EXPECT_NEAR(t[1], t[0] + 0.03 + 0.1 + 0.022, 1e-12);          // next stage on B: no transfer
  EXPECT_NEAR(t[2], t[1] + 2.0 + 0.2 + 0.044 + 0.007, 1e-12);   // boundary to L, stage 1 -> L
  const std::vector<double> one = runtime_exit_latency(three_stages(), "GGG", known());
  EXPECT_NEAR(one[0], 0.011 + 0.3, 1e-12);
  EXPECT_NEAR(one[1], one[0] + 0.07 + 0.3 + 0.022, 1e-12);
  EXPECT_NEAR(one[2], one[1] + 0.07 + 0.3 + 0.044, 1e-12);
}

std::vector<OverheadSample> samples_of(const std::vector<std::string>& orders, const StageOverheads& truth) {
  std::vector<OverheadSample> out;
  for (const std::string& order : orders) {
    const std::vector<double> measured = runtime_exit_latency(three_stages(), order, truth);
    const std::vector<double> compute = runtime_exit_latency(three_stages(), order, StageOverheads{});
    for (size_t k = 0; k < 3; ++k) out.push_back({order, k, measured[k], compute[k], 1.0});
  }
  return out;
}

TEST(SameProcessorStages, TheFitWithOneSingleLetterOrderPredictsMixedOnes) {
  const StageOverheads fit = fit_stage_overheads(samples_of({"BLG", "LGB", "GBL", "BBB"}, known()));
  EXPECT_NEAR(fit.next_stage('B'), 0.03, 1e-9);
  EXPECT_FALSE(fit.next_stage_ms.contains('L'));  // never seen twice in a row
  for (const std::string held_out : {"BBL", "GBB", "BBB"}) {
    const std::vector<double> want = runtime_exit_latency(three_stages(), held_out, known());
    const std::vector<double> got = runtime_exit_latency(three_stages(), held_out, fit);
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(got[k], want[k], 1e-9) << held_out << " exit " << k;
  }
}

// Two stages on A (fast) and B; exit 0 is confident for two of three frames. Hand-offs between
// processors are expensive, the next stage on A is cheap: the runtime model's front must hold
// A-only plans, and never repeat B, whose next-stage cost nobody fitted.
StageSearchInput two_stage_input() {
  StageSearchInput in;
  in.reuse = {{1, 1}, {0, 0}};
  in.scores.frames = 3;
  in.scores.exits = 2;
  in.scores.classes = 2;
  in.scores.logits = {2, 0, 0, 1, 0, 0, 1, 0, 0, 3, 0, 1};
  in.scores.labels = {0, 0, 1};
  for (char letter : {'A', 'B'}) {
    ProcessorOption o;
    o.letter = letter;
    o.level = 0;
    o.power_w = letter == 'A' ? 2.0 : 1.0;
    const double speed = letter == 'A' ? 2.0 : 1.0;
    o.tau_ms = {{1 / speed, 2 / speed, 0.1 / speed}, {2 / speed, 4 / speed, 0.1 / speed}};
    in.options.push_back(o);
  }
  in.generations = 15;
  in.population = 8;
  return in;
}

bool repeats(const std::string& order, char letter) {
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i] == letter && order[i - 1] == letter) return true;
  }
  return false;
}

TEST(SameProcessorStages, TheRuntimeSearchPutsConsecutiveStagesOnAProcessorWithAFittedStep) {
  StageSearchInput in = two_stage_input();
  StageOverheads o;
  o.boundary_ms = {{'A', 5.0}, {'B', 5.0}};
  o.next_stage_ms = {{'A', 0.01}};
  in.runtime = o;
  const StageSearchResult r = search_stage_mappings(in);
  bool a_only = false;
  for (const StageCandidate& c : r.front) {
    EXPECT_FALSE(repeats(c.order, 'B')) << c.order;
    a_only = a_only || c.order == "AA";
  }
  EXPECT_TRUE(a_only) << "no plan with both stages on A in the front";
  // Without a next-stage cost (or without the runtime model) orders stay permutations.
  in.runtime = StageOverheads{};
  for (const StageCandidate& c : search_stage_mappings(in).front) EXPECT_NE(c.order[0], c.order[1]) << c.order;
  in.runtime.reset();
  for (const StageCandidate& c : search_stage_mappings(in).front) EXPECT_NE(c.order[0], c.order[1]) << c.order;
}

}  // namespace
}  // namespace co_up::planner
