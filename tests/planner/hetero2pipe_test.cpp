// Hetero2Pipe's planning steps: the horizontal DP against brute force, the simulator against
// hand-computed pipelines, contention windows, work stealing and the registered planners.
#include "planner/hetero2pipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "planner/workload_planner.h"
#include "network_costs.h"

namespace co_up::planner {
namespace {

TEST(HorizontalPartition, EqualsBruteForceOnRandomProfiles) {
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t layers = 1 + seed % 10;
    const size_t stages = 1 + seed % 4;
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + std::to_string(layers) + " layers, " +
                 std::to_string(stages) + " stages");
    const NetworkCosts c = random_costs(rng, "n", layers, stages, seed % 2 == 0);
    const HorizontalPartition dp = horizontal_partition(c);
    const HorizontalPartition brute = horizontal_brute_force(c);
    EXPECT_NEAR(dp.bottleneck_us, brute.bottleneck_us, 1e-9 * brute.bottleneck_us);
    // The cuts returned are a partition whose slowest stage is the bottleneck reported.
    ASSERT_EQ(dp.cuts.size(), stages + 1);
    EXPECT_EQ(dp.cuts.front(), 0u);
    EXPECT_EQ(dp.cuts.back(), layers);
    EXPECT_TRUE(std::is_sorted(dp.cuts.begin(), dp.cuts.end()));
    double worst = 0;
    for (size_t k = 0; k < stages; ++k) worst = std::max(worst, stage_us(c, dp.cuts, k));
    EXPECT_NEAR(worst, dp.bottleneck_us, 1e-9 * worst);
  }
}

TEST(HorizontalPartition, BalancesAKnownChainAndChargesTransfers) {
  // Two equal processors, layers 4,4,4,4: two layers each (8 us); a 13 us send from the first
  // makes one stage (16 us) cheaper than any cut (17 us at best), so nothing is cut.
  NetworkCosts c = flat_costs("n", {{4, 4, 4, 4}, {4, 4, 4, 4}});
  EXPECT_EQ(horizontal_partition(c).cuts, (StageCuts{0, 2, 4}));
  EXPECT_DOUBLE_EQ(horizontal_partition(c).bottleneck_us, 8.0);
  c.send_us[0] = {13, 13, 13};
  EXPECT_DOUBLE_EQ(horizontal_partition(c).bottleneck_us, 16.0);
  const std::string order = order_of(horizontal_partition(c).cuts, "BL");
  EXPECT_TRUE(order == "BBBB" || order == "LLLL") << order;
}

TEST(Simulate, MatchesHandComputedPipelines) {
  // One network over two stages 600 + 400 us: the slower stage sets the rate.
  const NetworkCosts a = flat_costs("a", {{300, 300, 0, 0}, {0, 0, 200, 200}});
  const Interference none;
  const SimulationResult one = simulate({a}, {{0, 2, 4}}, {0}, none);
  EXPECT_NEAR(one.throughput_fps, 1e6 / 600, 1e-6);
  EXPECT_NEAR(one.busy_fraction[0], 1.0, 1e-9);
  EXPECT_NEAR(one.busy_fraction[1], 400.0 / 600.0, 1e-9);
  // Two networks, each whole on its own processor (1000 us): 2000 frames/s together.
  const NetworkCosts b = flat_costs("b", {{500, 500}, {500, 500}});
  const NetworkCosts c = flat_costs("c", {{500, 500}, {500, 500}});
  const SimulationResult two = simulate({b, c}, {{0, 2, 2}, {0, 0, 2}}, {0, 1}, none);
  EXPECT_NEAR(two.throughput_fps, 2000.0, 1e-6);
  // Each slows the other by 50 % while both run: 1500 us each, 1333 frames/s together.
  Interference half(2, 2);
  half.set(0, 0, 1, 1, 0.5);
  half.set(1, 1, 0, 0, 0.5);
  EXPECT_NEAR(simulate({b, c}, {{0, 2, 2}, {0, 0, 2}}, {0, 1}, half).throughput_fps, 2000.0 / 1.5, 1e-6);
  // The same processor for both: one at a time, no co-running, 1000 frames/s.
  EXPECT_NEAR(simulate({b, c}, {{0, 2, 2}, {0, 2, 2}}, {0, 1}, half).throughput_fps, 1000.0, 1e-6);
}

TEST(Simulate, RejectsMismatchedInputs) {
  const NetworkCosts a = flat_costs("a", {{1, 1}, {1, 1}});
  EXPECT_THROW(simulate({a}, {{0, 1}}, {0}, Interference()), std::invalid_argument);     // wrong cut count
  EXPECT_THROW(simulate({a}, {{0, 2, 1}}, {0}, Interference()), std::invalid_argument);  // decreasing
  EXPECT_THROW(simulate({a}, {{0, 1, 2}}, {1}, Interference()), std::invalid_argument);  // unknown network
}

TEST(ContentionWindow, SeparatesHighRequestsWithTheLowOnes) {
  // K = 2: H H L L L L has windows HH (and the wrap L H is fine); one L moved between the Hs
  // removes the conflict, and the result is a permutation of the input.
  const std::vector<bool> high = {true, true, false, false, false, false};
  const std::vector<size_t> seq = {0, 1, 2, 3, 4, 5};
  EXPECT_EQ(contention_conflicts(seq, high, 2), 1);
  const std::vector<size_t> out = mitigate_contention(seq, high, 2);
  EXPECT_EQ(contention_conflicts(out, high, 2), 0);
  std::vector<size_t> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, seq);
  // K = 3 needs K - d = 2 lows between two adjacent highs (Property 3).
  const std::vector<bool> high3 = {true, true, false, false, false, false, false};
  const std::vector<size_t> out3 = mitigate_contention({0, 1, 2, 3, 4, 5, 6}, high3, 3);
  EXPECT_EQ(contention_conflicts(out3, high3, 3), 0);
}

TEST(ContentionWindow, NeverAddsConflictsOnRandomSequences) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = 3 + seed % 8, stages = 2 + seed % 3;
    std::vector<bool> high(n);
    for (size_t i = 0; i < n; ++i) high[i] = rng() % 3 == 0;
    std::vector<size_t> seq(n);
    for (size_t i = 0; i < n; ++i) seq[i] = i;
    std::shuffle(seq.begin(), seq.end(), rng);
    const std::vector<size_t> out = mitigate_contention(seq, high, stages);
    EXPECT_LE(contention_conflicts(out, high, stages), contention_conflicts(seq, high, stages)) << "seed " << seed;
    std::vector<size_t> a = out, b = seq;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "seed " << seed;
  }
}

WorkloadProblem random_problem(uint32_t seed, size_t networks, size_t stages) {
  std::mt19937 rng(seed);
  WorkloadProblem p;
  p.letters = std::string("BLGN").substr(0, stages);
  for (size_t i = 0; i < networks; ++i) {
    p.networks.push_back(random_costs(rng, "net" + std::to_string(i), 4 + static_cast<uint32_t>(rng() % 6), stages, true));
  }
  p.interference = Interference(networks, stages);
  std::uniform_real_distribution<double> s(0.0, 0.6);
  for (size_t a = 0; a < networks; ++a)
    for (size_t ka = 0; ka < stages; ++ka)
      for (size_t b = 0; b < networks; ++b)
        for (size_t kb = 0; kb < stages; ++kb)
          if (ka != kb) p.interference.set(a, ka, b, kb, s(rng));
  return p;
}

TEST(WorkStealing, NeverPredictsWorseThanItsStart) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    const WorkloadProblem p = random_problem(seed, 3 + seed % 3, 2 + seed % 2);
    std::vector<StageCuts> cuts;
    for (const NetworkCosts& c : p.networks) cuts.push_back(horizontal_partition(c).cuts);
    std::vector<size_t> seq(p.networks.size());
    for (size_t i = 0; i < seq.size(); ++i) seq[i] = i;
    const double before = simulate(p.networks, cuts, seq, p.interference).throughput_fps;
    const std::vector<StageCuts> after = align_by_work_stealing(p.networks, cuts, seq, p.interference);
    EXPECT_GE(simulate(p.networks, after, seq, p.interference).throughput_fps, before * (1 - 1e-12)) << "seed " << seed;
  }
}

TEST(WorkloadPlanners, Hetero2PipeIsAtLeastItsHorizontalStepAndEveryPlanIsComplete) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    const WorkloadProblem p = random_problem(seed, 4, 3);
    const WorkloadPlan h = create_workload_planner("hetero2pipe-h")->plan(p);
    const WorkloadPlan full = create_workload_planner("hetero2pipe")->plan(p);
    EXPECT_GE(full.predicted.throughput_fps, h.predicted.throughput_fps * (1 - 1e-9)) << "seed " << seed;
    // Its vertical step also starts from the Band-style placement, so it never predicts less.
    const WorkloadPlan band = create_workload_planner("band-greedy")->plan(p);
    EXPECT_GE(full.predicted.throughput_fps, band.predicted.throughput_fps * (1 - 1e-9)) << "seed " << seed;
    for (const WorkloadPlannerRegistration& r : workload_planner_registry()) {
      const WorkloadPlan plan = r.create()->plan(p);
      ASSERT_EQ(plan.orders.size(), p.networks.size()) << r.name;
      for (size_t i = 0; i < p.networks.size(); ++i) {
        EXPECT_EQ(plan.orders[i].size(), p.networks[i].layers()) << r.name;
        EXPECT_EQ(plan.orders[i].find_first_not_of(p.letters), std::string::npos) << r.name;
      }
      EXPECT_GT(plan.predicted.throughput_fps, 0) << r.name;
    }
  }
}

// Processors of one backend (B and L both CPU): the balanced plan (replicas) competes, and may be
// kept over pipelines predicted up to kPipelineWaiting faster, but never over a plan of whole
// networks or a baseline predicted faster: hetero2pipe predicts at least every baseline. Pipelines
// are kept only when predicted more than kPipelineWaiting faster than the balanced plan, also
// where a baseline is predicted a little faster than it (that baseline is then the plan).
TEST(WorkloadPlanners, Hetero2PipeWithReplicasNeverPredictsLessThanABaseline) {
  int balanced_kept = 0, pipelines_kept = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    WorkloadProblem p = random_problem(seed, 3 + seed % 3, 2);
    p.backends = {"cpu", "cpu"};
    const WorkloadPlan full = create_workload_planner("hetero2pipe")->plan(p);
    for (const char* baseline : {"alone-best", "band-greedy"}) {
      EXPECT_GE(full.predicted.throughput_fps,
                create_workload_planner(baseline)->plan(p).predicted.throughput_fps * (1 - 1e-9))
          << baseline << ", seed " << seed << ": " << full.note;
    }
    const bool replicated = std::any_of(full.replica_stages.begin(), full.replica_stages.end(),
                                        [](const std::vector<size_t>& r) { return !r.empty(); });
    balanced_kept += replicated ? 1 : 0;
    const bool pipelined = std::any_of(full.orders.begin(), full.orders.end(), [](const std::string& o) {
      return o.find_first_not_of(o.front()) != std::string::npos;
    });
    if (!pipelined) continue;
    ++pipelines_kept;
    const double balanced = create_workload_planner("balanced")->plan(p).predicted.throughput_fps;
    EXPECT_LT(balanced, full.predicted.throughput_fps * (1 - 0.08)) << "seed " << seed << ": " << full.note;
  }
  EXPECT_GT(balanced_kept, 0) << "the balanced plan never competed: the test does not test it";
  EXPECT_GT(pipelines_kept, 0) << "no pipelines kept: the test does not test that rule";
}

TEST(WorkloadPlanners, UnknownNameListsTheKnownOnes) {
  try {
    create_workload_planner("nope");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no workload planner 'nope' (known: alone-best, band-greedy, balanced, hetero2pipe-h, hetero2pipe)");
  }
}

}  // namespace
}  // namespace co_up::planner
