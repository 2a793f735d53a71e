// The runtime model of multi-exit stages (planner/stage_overheads.h): hand-computed latencies per
// exit, and the fit of run and boundary costs from per-exit samples, including orders it did not
// see.
#include "planner/stage_overheads.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace co_up::planner {
namespace {

// Three stages of one layer and an exit; stage 2 reads stage 1's layer (I[0][0] = 1).
StageCosts three_stages() {
  StageCosts c;
  c.tau = {{0.010, 0.001}, {0.020, 0.002}, {0.040, 0.004}};
  c.reuse = {{1}, {0}, {0}};
  c.transfer.assign(3, std::vector<std::vector<double>>(3, std::vector<double>(1, 0.0)));
  c.transfer[0][1][0] = 0.005;  // stage 1 -> stage 2
  c.transfer[0][2][0] = 0.007;  // stage 1 -> stage 3
  return c;
}

StageOverheads known() {
  StageOverheads o;
  o.run_ms = {{'B', 0.1}, {'L', 0.2}, {'G', 0.3}};
  o.boundary_ms = {{'B', 1.0}, {'L', 2.0}, {'G', 4.0}};
  return o;
}

TEST(StageOverheads, LatencyPerExitIsComputeRunsAndTheBoundariesCrossed) {
  const std::vector<double> t = runtime_exit_latency(three_stages(), "BLG", known());
  ASSERT_EQ(t.size(), 3u);
  // A frame pays the boundary to L (2) only when it goes on to stage 2, to G (4) only to stage 3.
  EXPECT_NEAR(t[0], 0.011 + 0.1, 1e-12);
  EXPECT_NEAR(t[1], 0.011 + 0.1 + 2.0 + 0.022 + 0.005 + 0.2, 1e-12);
  EXPECT_NEAR(t[2], 0.011 + 0.1 + 2.0 + 0.022 + 0.005 + 0.2 + 4.0 + 0.044 + 0.007 + 0.3, 1e-12);
}

TEST(StageOverheads, ConsecutiveStagesOnOneLetterAreSubGraphsOfTheirOwn) {
  const std::vector<double> t = runtime_exit_latency(three_stages(), "BBL", known());
  // A run on B per stage (no next-stage cost given here; nothing moves between them); one
  // boundary (to L); stage 3 reads stage 1's features from B. Exit 0 pays for stage 1 only.
  EXPECT_NEAR(t[0], 0.011 + 0.1, 1e-12);
  EXPECT_NEAR(t[1], 0.011 + 0.022 + 0.1 + 0.1, 1e-12);
  EXPECT_NEAR(t[2], 0.011 + 0.022 + 0.1 + 0.1 + 0.044 + 0.007 + 0.2 + 2.0, 1e-12);
  const std::vector<double> one = runtime_exit_latency(three_stages(), "GGG", known());
  EXPECT_NEAR(one[2], 0.011 + 0.022 + 0.044 + 3 * 0.3, 1e-12);
}

TEST(StageOverheads, AnOrderOfTheWrongLengthIsAnError) {
  EXPECT_THROW(runtime_exit_latency(three_stages(), "BL", known()), InputError);
}

std::vector<OverheadSample> samples_of(const std::vector<std::string>& orders, const StageOverheads& truth) {
  const StageCosts costs = three_stages();
  std::vector<OverheadSample> out;
  for (const std::string& order : orders) {
    const std::vector<double> measured = runtime_exit_latency(costs, order, truth);
    const std::vector<double> compute = runtime_exit_latency(costs, order, StageOverheads{});
    for (size_t k = 0; k < 3; ++k) out.push_back({order, k, measured[k], compute[k], 10.0 + static_cast<double>(k)});
  }
  return out;
}

TEST(StageOverheads, TheFitOnTheRotationsPredictsTheOtherOrders) {
  const StageOverheads fit = fit_stage_overheads(samples_of({"BLG", "LGB", "GBL"}, known()));
  for (char p : std::string("BLG")) {
    EXPECT_NEAR(fit.run(p), known().run(p), 1e-9) << p;
    EXPECT_NEAR(fit.boundary(p), known().boundary(p), 1e-9) << p;
  }
  for (const std::string held_out : {"BGL", "GLB", "LBG"}) {
    const std::vector<double> want = runtime_exit_latency(three_stages(), held_out, known());
    const std::vector<double> got = runtime_exit_latency(three_stages(), held_out, fit);
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(got[k], want[k], 1e-9) << held_out << " exit " << k;
  }
}

TEST(StageOverheads, NegativeSolutionsAreFixedAtZero) {
  StageOverheads truth = known();
  truth.boundary_ms['G'] = -0.5;  // measured below compute: the fit must not return a negative cost
  const StageOverheads fit = fit_stage_overheads(samples_of({"BLG", "LGB", "GBL"}, truth));
  EXPECT_EQ(fit.boundary('G'), 0.0);
  for (const auto& [p, ms] : fit.boundary_ms) EXPECT_GE(ms, 0.0) << p;
  for (const auto& [p, ms] : fit.run_ms) EXPECT_GE(ms, 0.0) << p;
}

TEST(StageOverheads, LettersTheSamplesDoNotSeparateAreLeftOut) {
  // One order: the boundary to L is only ever paid with the run on L, the one to G with G's.
  const StageOverheads fit = fit_stage_overheads(samples_of({"BLG"}, known()));
  EXPECT_FALSE(fit.boundary_ms.contains('L'));
  EXPECT_FALSE(fit.boundary_ms.contains('G'));
  EXPECT_FALSE(fit.boundary_ms.contains('B'));  // never after a boundary
}

TEST(StageOverheads, BadSamplesAreErrors) {
  EXPECT_THROW(fit_stage_overheads({{"", 0, 1.0, 0.5, 1.0}}), InputError);
  EXPECT_THROW(fit_stage_overheads({{"BLG", 0, 1.0, 0.5, 0.0}}), InputError);
}

}  // namespace
}  // namespace co_up::planner
