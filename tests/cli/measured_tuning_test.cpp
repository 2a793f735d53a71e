// co_up plan --tune (cli/measured_tuning.h): every mapping the measured search runs is one the
// runtime runs to the single-processor result bit for bit, the front it keeps is non-dominated
// over what it measured, a limit of 0 leaves the model's plans as they were, and the command end
// to end. No timing is asserted: what is measured only decides which mappings are kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "cli/measured_tuning.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/parallel_regions.h"
#include "planner/hybrid_plan.h"
#include "planner/layer_profile.h"
#include "tests/cli/googlenet_ops.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/test_support.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using test::CommandResult;
using test::run_program;

// Every output value of `frames` frames of `order` in `mode`, frame by frame.
std::vector<std::vector<float>> outputs_of(const graph::Graph& g, const planner::Mapping& m, uint64_t frames) {
  ExecutorOptions options;
  options.mode = m.mode;
  Executor executor(g, Partition::create(g, m.order), testing::host_platform(), testing::build_plugins(), options);
  std::vector<std::vector<float>> out(frames);
  std::mutex mutex;
  RunRequest request;
  request.frames = frames;
  request.input_sets = {seeded_inputs(g, 5), seeded_inputs(g, 6)};
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
    std::lock_guard lock(mutex);
    out.at(frame).assign(values.begin(), values.end());
  };
  const RunResult r = executor.run(request);
  EXPECT_EQ(r.profile.frames_completed, frames);
  return out;
}

struct Fixture {
  graph::Graph graph = test::googlenet_ops();
  planner::LayerProfile profile = test::googlenet_ops_profile();
  planner::CostModel cost{profile};
  planner::DagCostModel model{cost, graph::unit_dag(graph), [] {
                                planner::DagCostOptions o;
                                o.pipeline_frames = 2;
                                return o;
                              }()};
  std::vector<planner::Candidate> front = planner::plan_hybrid(model, planner::Objective::kPareto, 64).ranked;
  cli::MappingRunner runner = [this](const planner::Mapping& m) {
    cli::VerifySettings settings;
    settings.frames = 2;
    settings.warmup_frames = 0;
    return cli::measure_mapping(graph, testing::host_platform(), testing::build_plugins(), m.order, m.mode, settings);
  };
};

bool dominates(const cli::Measurement& a, const cli::Measurement& b) {
  return a.throughput_fps >= b.throughput_fps && a.latency_ms <= b.latency_ms &&
         (a.throughput_fps > b.throughput_fps || a.latency_ms < b.latency_ms);
}

TEST(MeasuredTuning, EveryCandidateRunsToTheSingleProcessorBitsAndTheFrontIsNonDominated) {
  const Fixture f;
  ASSERT_FALSE(f.front.empty());
  cli::TuneSettings settings;
  settings.seconds = 1e6;  // the candidate limit stops it
  settings.max_candidates = f.front.size() + 8;
  settings.reps = 1;
  settings.seed = 3;
  const cli::TuneResult r = cli::tune_mappings(f.model, f.front, {}, settings, f.runner, nullptr);
  EXPECT_EQ(r.stopped, "the candidate limit is reached");
  ASSERT_EQ(r.measured.size(), f.front.size() + 8);
  size_t tuned = 0;
  for (const cli::TunedMapping& t : r.measured) tuned += t.move != "model" ? 1 : 0;
  EXPECT_EQ(tuned, 8u);

  const uint64_t frames = 2;
  const std::vector<std::vector<float>> reference =
      outputs_of(f.graph, {std::string(f.graph.layer_count(), 'B'), planner::Mode::kSwitch, {}}, frames);
  std::set<std::string> distinct;
  for (const cli::TunedMapping& t : r.measured) {
    const planner::Mapping& m = t.candidate.mapping;
    EXPECT_TRUE(distinct.insert(m.order + mode_name(m.mode)).second) << "measured twice: " << m.order;
    EXPECT_TRUE(f.cost.runs(m.order)) << m.order;
    EXPECT_EQ(t.fps.size(), t.ms.size());
    EXPECT_GE(t.fps.size(), 1u) << t.move;
    const std::vector<std::vector<float>> got = outputs_of(f.graph, m, frames);
    for (uint64_t k = 0; k < frames; ++k) {
      ASSERT_EQ(got[k].size(), reference[k].size()) << t.move;
      EXPECT_EQ(std::memcmp(got[k].data(), reference[k].data(), got[k].size() * sizeof(float)), 0)
          << t.move << " (" << m.order << ", " << mode_name(m.mode) << "): frame " << k
          << " differs from the single-processor run";
    }
  }
  // The front: nothing measured dominates a point on it; everything off it is dominated.
  ASSERT_FALSE(r.front.empty());
  const std::set<size_t> on_front(r.front.begin(), r.front.end());
  for (size_t i = 0; i < r.measured.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < r.measured.size(); ++j) dominated |= dominates(r.measured[j].measured, r.measured[i].measured);
    EXPECT_EQ(dominated, on_front.count(i) == 0) << r.measured[i].move;
  }
}

TEST(MeasuredTuning, NeighboursAreValidDistinctAndDeterministic) {
  const Fixture f;
  const planner::Mapping& start = f.front.front().mapping;
  const std::vector<cli::Neighbour> n = cli::neighbour_mappings(f.model, start);
  ASSERT_FALSE(n.empty());
  std::set<std::string> distinct;
  bool mode_move = false, unit_move = false, branch_move = false;
  for (const cli::Neighbour& x : n) {
    EXPECT_TRUE(f.cost.runs(x.mapping.order));
    EXPECT_FALSE(x.mapping == start);
    EXPECT_TRUE(distinct.insert(x.mapping.order + mode_name(x.mapping.mode)).second) << x.move;
    mode_move |= x.move.rfind("mode ", 0) == 0;
    unit_move |= x.move.rfind("unit ", 0) == 0;
    branch_move |= x.move.rfind("region ", 0) == 0;
  }
  EXPECT_TRUE(mode_move && unit_move && branch_move);
  const std::vector<cli::Neighbour> again = cli::neighbour_mappings(f.model, start);
  ASSERT_EQ(again.size(), n.size());
  for (size_t i = 0; i < n.size(); ++i) EXPECT_EQ(again[i].mapping, n[i].mapping);
}

TEST(MeasuredTuning, NoBudgetMeasuresNothing) {
  const Fixture f;
  size_t runs = 0;
  const cli::MappingRunner counting = [&](const planner::Mapping& m) {
    ++runs;
    return f.runner(m);
  };
  cli::TuneSettings limit;
  limit.seconds = 1e6;
  limit.max_candidates = 0;
  EXPECT_TRUE(cli::tune_mappings(f.model, f.front, {}, limit, counting, nullptr).measured.empty());
  cli::TuneSettings no_time;
  no_time.seconds = 0;
  EXPECT_TRUE(cli::tune_mappings(f.model, f.front, {}, no_time, counting, nullptr).front.empty());
  EXPECT_EQ(runs, 0u);
}

TEST(MeasuredTuning, PlanTunePrintsTheMeasuredFrontAfterTheModelsUnchanged) {
  const test::ScratchDir scratch;
  const std::filesystem::path profile = scratch / "googlenet_ops.json";
  planner::write_layer_profile(profile, test::googlenet_ops_profile());
  const std::vector<std::string> plan = {"plan", "--profile=" + profile.string(), "--objective=pareto", "--top=20", "--n=2"};
  const CommandResult model_only = run_program(CO_UP_BINARY, plan, scratch.path());
  ASSERT_EQ(model_only.exit_code, 0) << model_only;

  std::vector<std::string> none = plan;
  none.insert(none.end(), {"--tune=600", "--tune-candidates=0"});
  const CommandResult r0 = run_program(CO_UP_BINARY, none, scratch.path());
  ASSERT_EQ(r0.exit_code, 0) << r0;
  EXPECT_EQ(r0.out.substr(0, model_only.out.size()), model_only.out);  // the model's front unchanged
  EXPECT_THAT(r0.out, HasSubstr("nothing measured: the model's plans above stand"));

  std::vector<std::string> some = plan;
  some.insert(some.end(), {"--tune=600", "--tune-candidates=6", "--seed=2"});
  const CommandResult r = run_program(CO_UP_BINARY, some, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out.substr(0, model_only.out.size()), model_only.out);
  EXPECT_THAT(r.out, HasSubstr("tuned (measured on this machine, now: 6 mappings"));
  EXPECT_THAT(r.out, HasSubstr("stopped: the candidate limit is reached"));
  EXPECT_THAT(r.out, HasSubstr("measured Pareto front"));
  EXPECT_THAT(r.out, HasSubstr("these are measurements of this machine at this time"));
  EXPECT_THAT(r.out, HasSubstr("(predicted "));
  EXPECT_THAT(r.out, HasSubstr("co_up --graph=googlenet --units=ops --image-size=64 --order="));
}

}  // namespace
}  // namespace co_up
