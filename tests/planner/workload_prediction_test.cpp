// What the workload planner predicts for a run: the simulator over a whole finite run (fill and
// drain included, as the runtime's aggregate counts them) against hand-computed schedules, and
// the contention table taken from each processor pair's mean co-run slowdown where that predicted
// the held-out co-runs better than the regression.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/contention_model.h"
#include "planner/hetero2pipe.h"
#include "planner/synthetic_profile.h"
#include "planner/workload_profile.h"
#include "network_costs.h"

namespace co_up::planner {
namespace {

SimulationSettings whole_run(int frames) {
  SimulationSettings s;
  s.whole_run = true;
  s.cycles = frames;
  return s;
}

TEST(WholeRunPrediction, CountsFillAndDrain) {
  // One network over two stages, 600 then 400 us, 10 frames all arrived at 0: stage 0 ends frame
  // f at 600 (f + 1), the last frame leaves stage 1 at 6000 + 400 us.
  const NetworkCosts a = flat_costs("a", {{300, 300, 0, 0}, {0, 0, 200, 200}});
  const SimulationResult r = simulate({a}, {{0, 2, 4}}, {0}, Interference(), whole_run(10));
  EXPECT_NEAR(r.throughput_fps, 10 * 1e6 / 6400, 1e-6);
  EXPECT_NEAR(r.busy_fraction[0], 6000.0 / 6400.0, 1e-9);
  EXPECT_NEAR(r.busy_fraction[1], 4000.0 / 6400.0, 1e-9);
  // The steady state ignores the fill and the drain: one frame per 600 us.
  EXPECT_NEAR(simulate({a}, {{0, 2, 4}}, {0}, Interference()).throughput_fps, 1e6 / 600, 1e-6);
}

TEST(WholeRunPrediction, TheLastProcessorToFinishSetsTheAggregate) {
  // Two networks whole on their own processors, 1000 us and 600 us a frame, 8 frames each: the
  // processor with less work idles at the end, so 16 frames take 8000 us.
  const NetworkCosts b = flat_costs("b", {{500, 500}, {500, 500}});
  const NetworkCosts c = flat_costs("c", {{300, 300}, {300, 300}});
  const SimulationResult r = simulate({b, c}, {{0, 2, 2}, {0, 0, 2}}, {0, 1}, Interference(), whole_run(8));
  EXPECT_NEAR(r.throughput_fps, 16 * 1e6 / 8000, 1e-6);
  EXPECT_NEAR(r.busy_fraction[1], 4800.0 / 8000.0, 1e-9);
  // A 50 % mutual slowdown while both run: both run at 2/3 speed until c's 4800 us of work are
  // done (7200 us), then b alone finishes its remaining 8000 - 4800 us: 10400 us.
  Interference half(2, 2);
  half.set(0, 0, 1, 1, 0.5);
  half.set(1, 1, 0, 0, 0.5);
  EXPECT_NEAR(simulate({b, c}, {{0, 2, 2}, {0, 0, 2}}, {0, 1}, half, whole_run(8)).throughput_fps,
              16 * 1e6 / 10400, 1e-6);
}

TEST(WholeRunPrediction, RejectsNoFrames) {
  const NetworkCosts a = flat_costs("a", {{1, 1}, {1, 1}});
  EXPECT_THROW(simulate({a}, {{0, 1, 2}}, {0}, Interference(), whole_run(0)), std::invalid_argument);
  EXPECT_NO_THROW(simulate({a}, {{0, 1, 2}}, {0}, Interference(), whole_run(1)));
}

TEST(PairMeanSlowdowns, AveragePerOrderedProcessorPair) {
  std::vector<CoRunSample> s = {{0, "a", "b", 'B', 'L', {}, {}, 100, 130},
                                {1, "b", "a", 'B', 'L', {}, {}, 200, 220},
                                {0, "b", "a", 'L', 'B', {}, {}, 100, 90}};
  const auto means = pair_mean_slowdowns(s);
  ASSERT_EQ(means.size(), 2u);
  EXPECT_NEAR(means.at({'B', 'L'}), (0.3 + 0.1) / 2, 1e-12);
  EXPECT_NEAR(means.at({'L', 'B'}), -0.1, 1e-12);  // unclamped here
  EXPECT_TRUE(pair_mean_slowdowns({}).empty());
}

WorkloadProfile two_networks() {
  WorkloadProfile wp;
  wp.platform_name = "synthetic";
  wp.processors = "BL";
  for (int i = 0; i < 2; ++i) {
    SyntheticSpec s;
    s.layers = 5;
    s.processors = 2;
    s.seed = static_cast<uint64_t>(3 + i);
    s.graph = i == 0 ? "alexnet" : "squeezenet";
    WorkloadProfileNetwork n;
    n.name = i == 0 ? "a" : "s";
    n.graph = s.graph;
    n.weight_bytes = 4000 * (i + 1);
    n.activation_bytes = 1000;
    n.macs = 90000;
    n.profile = make_synthetic_profile(s);
    wp.networks.push_back(n);
  }
  // B|L: slowdowns 0.20 .. 0.35 (mean 0.275); L|B: -0.10 .. 0.05 (mean -0.025, clamped to 0).
  for (int c = 0; c < 4; ++c) {
    const WorkloadProfileNetwork& v = wp.networks[static_cast<size_t>(c % 2)];
    const WorkloadProfileNetwork& a = wp.networks[static_cast<size_t>((c + 1) % 2)];
    wp.coruns.push_back({c, v.name, a.name, 'B', 'L', features_of(v, 'B'), features_of(a, 'L'), 100, 120.0 + 5 * c});
    wp.coruns.push_back({c, a.name, v.name, 'L', 'B', features_of(a, 'L'), features_of(v, 'B'), 100, 90.0 + 5 * c});
  }
  wp.contention = ContentionModel::fit(wp.coruns);
  return wp;
}

Workload spec_of(const WorkloadProfile& wp) {
  Workload spec;
  for (const WorkloadProfileNetwork& n : wp.networks) {
    WorkloadNetwork s;
    s.name = n.name;
    s.graph = n.graph;
    spec.networks.push_back(s);
  }
  return spec;
}

TEST(ContentionChoice, PairMeanWhereItPredictedTheHeldOutCoRunsBetter) {
  WorkloadProfile wp = two_networks();
  wp.held_out_error = {4, 50.0, 80.0, 40.0};
  wp.held_out_pair_mean = {4, 10.0, 20.0, 8.0};
  std::vector<std::string> notes;
  const WorkloadProblem p = workload_problem(wp, spec_of(wp), notes);
  for (size_t a = 0; a < 2; ++a) {
    for (size_t b = 0; b < 2; ++b) {
      EXPECT_NEAR(p.interference.at(a, 0, b, 1), 0.275, 1e-12);
      EXPECT_EQ(p.interference.at(a, 1, b, 0), 0.0);
    }
  }
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "contention: each processor pair's mean slowdown over its co-runs (held-out error 10.0 points, "
                      "the regression's 50.0)");
}

TEST(ContentionChoice, RegressionWhereItPredictedBetterOrNothingWasHeldOut) {
  for (const HeldOutError pair_mean : {HeldOutError{4, 60.0, 80.0, 40.0}, HeldOutError{}}) {
    WorkloadProfile wp = two_networks();
    wp.held_out_error = {4, 50.0, 80.0, 40.0};
    wp.held_out_pair_mean = pair_mean;
    std::vector<std::string> notes;
    const WorkloadProblem p = workload_problem(wp, spec_of(wp), notes);
    const double expected =
        wp.contention->predict('B', 'L', features_of(wp.networks[0], 'B'), features_of(wp.networks[1], 'L'));
    EXPECT_NEAR(p.interference.at(0, 0, 1, 1), std::max(0.0, expected), 1e-12);
    EXPECT_TRUE(notes.empty());
  }
}

}  // namespace
}  // namespace co_up::planner
