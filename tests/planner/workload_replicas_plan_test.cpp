// Planning with replicas (run-time balancing): the simulator runs a replicated network's
// requests whole on whichever of its stages frees first; the balanced planner replicates only
// on stages of the same backend; hetero2pipe keeps the replicated plan unless its pipelines are
// predicted clearly faster.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/hetero2pipe.h"
#include "planner/workload_planner.h"
#include "tests/planner/network_costs.h"

namespace co_up::planner {
namespace {

// Two stages of equal speed; every layer 100 us; hand-offs cost `handoff_us` on each side.
NetworkCosts costs(const std::string& name, uint32_t layers, double handoff_us) {
  NetworkCosts c = flat_costs(name, std::vector<std::vector<double>>(2, std::vector<double>(layers, 100.0)));
  for (auto& v : c.send_us) std::fill(v.begin(), v.end(), handoff_us);
  for (auto& v : c.receive_us) std::fill(v.begin(), v.end(), handoff_us);
  return c;
}

WorkloadProblem problem(double handoff_us, std::vector<std::string> backends) {
  WorkloadProblem p;
  p.letters = "BL";
  // Whole-network costs 1000, 600, 600 us: no split into two whole-network sets is even.
  p.networks = {costs("a", 10, handoff_us), costs("b", 6, handoff_us), costs("c", 6, handoff_us)};
  p.simulation.whole_run = true;
  p.simulation.cycles = 30;
  p.backends = std::move(backends);
  return p;
}

TEST(WorkloadReplicasPlan, ASimulatedReplicaRunsRequestsOnTheStageThatFreesFirst) {
  const std::vector<NetworkCosts> nets = {costs("a", 10, 0), costs("b", 10, 0)};
  const std::vector<StageCuts> on_b = {single_stage_cuts(10, 2, 0), single_stage_cuts(10, 2, 0)};
  SimulationSettings s;
  s.whole_run = true;
  s.cycles = 20;  // 20 requests each of 1000 us
  const SimulationResult alone = simulate(nets, on_b, {0, 1}, Interference(), s);
  EXPECT_NEAR(alone.throughput_fps, 1000.0, 1e-6);  // 40 requests one after another on B
  const SimulationResult replicated = simulate(nets, on_b, {0, 1}, Interference(), s, {{1}, {1}});
  EXPECT_NEAR(replicated.throughput_fps, 2000.0, 1e-6);  // both stages all the time
  ASSERT_EQ(replicated.busy_fraction.size(), 2u);
  EXPECT_NEAR(replicated.busy_fraction[0], 1.0, 1e-9);
  EXPECT_NEAR(replicated.busy_fraction[1], 1.0, 1e-9);
  // Contention slows the co-running requests as for any slices.
  Interference slow(2, 2);
  for (size_t x = 0; x < 2; ++x)
    for (size_t y = 0; y < 2; ++y) {
      slow.set(x, 0, y, 1, 0.25);
      slow.set(x, 1, y, 0, 0.25);
    }
  EXPECT_NEAR(simulate(nets, on_b, {0, 1}, slow, s, {{1}, {1}}).throughput_fps, 1600.0, 1e-6);
  // A replicated network must be whole on one stage.
  const std::vector<StageCuts> split = {StageCuts{0, 5, 10}, single_stage_cuts(10, 2, 0)};
  EXPECT_THROW(simulate(nets, split, {0, 1}, Interference(), s, {{1}, {}}), std::invalid_argument);
}

TEST(WorkloadReplicasPlan, BalancedReplicatesOnlyOnStagesOfTheSameBackend) {
  const WorkloadPlan same = create_workload_planner("balanced")->plan(problem(0, {"cpu-xnnpack", "cpu-xnnpack"}));
  ASSERT_EQ(same.replicas.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(same.replicas[i].size(), 1u) << i;
    const char home = same.orders[i][0];
    EXPECT_EQ(same.orders[i], std::string(same.orders[i].size(), home));
    EXPECT_EQ(same.replicas[i][0], std::string(same.orders[i].size(), home == 'B' ? 'L' : 'B'));
  }
  // 30 requests of each network (1000, 600, 600 us) on two stages that never wait: 90 requests in
  // 33 ms, give or take the last request.
  EXPECT_NEAR(same.predicted.throughput_fps, 90 * 1e6 / 33000.0, 90 * 1e6 / 33000.0 - 90 * 1e6 / 34000.0);

  for (const std::vector<std::string>& backends :
       {std::vector<std::string>{"cpu-xnnpack", "opencl"}, std::vector<std::string>{}}) {
    const WorkloadPlan other = create_workload_planner("balanced")->plan(problem(0, backends));
    for (const auto& r : other.replicas) EXPECT_TRUE(r.empty());
  }
}

TEST(WorkloadReplicasPlan, Hetero2PipeKeepsReplicasUnlessPipelinesArePredictedClearlyFaster) {
  // Expensive hand-offs (300 us per cut, 3 layers' worth): whole networks with replicas win.
  const WorkloadPlan costly = create_workload_planner("hetero2pipe")->plan(problem(300, {"cpu", "cpu"}));
  bool replicated = false;
  for (const auto& r : costly.replicas) replicated = replicated || !r.empty();
  EXPECT_TRUE(replicated) << costly.note;
  const WorkloadPlan pipelines = create_workload_planner("hetero2pipe-h")->plan(problem(300, {"cpu", "cpu"}));
  EXPECT_GT(costly.predicted.throughput_fps, pipelines.predicted.throughput_fps);
  // No hand-off cost at all on equal stages: the pipelines are predicted no faster than whole
  // networks that never wait (within what pipelines lose to waiting): replicas.
  const WorkloadPlan free = create_workload_planner("hetero2pipe")->plan(problem(0, {"cpu", "cpu"}));
  bool free_replicated = false;
  for (const auto& r : free.replicas) free_replicated = free_replicated || !r.empty();
  EXPECT_TRUE(free_replicated) << free.note;
  // Layers that each stage runs 4x faster than the other: the pipelines are predicted far faster
  // than any whole-network plan and are kept.
  WorkloadProblem affine = problem(0, {"cpu", "cpu"});
  for (NetworkCosts& c : affine.networks) {
    const uint32_t n = c.layers();
    for (uint32_t l = 0; l < n; ++l) {
      c.layer_us[0][l] = l < n / 2 ? 50.0 : 200.0;
      c.layer_us[1][l] = l < n / 2 ? 200.0 : 50.0;
    }
  }
  const WorkloadPlan split = create_workload_planner("hetero2pipe")->plan(affine);
  for (const auto& r : split.replicas) EXPECT_TRUE(r.empty()) << split.note;
  // Without a shared backend there is nothing to replicate: the pipelines' plan, as before.
  const WorkloadPlan different = create_workload_planner("hetero2pipe")->plan(problem(300, {"cpu", "gpu"}));
  for (const auto& r : different.replicas) EXPECT_TRUE(r.empty()) << different.note;
}

}  // namespace
}  // namespace co_up::planner
