// co_up plan --tune (cli/measured_tuning.h): every mapping the measured search runs is one the
// runtime runs to the single-processor result bit for bit, the front it keeps is non-dominated
// over what it measured, a limit of 0 leaves the model's plans as they were, and the command end
// to end. No timing is asserted: what is measured only decides which mappings are kept.
// The end-to-end test plans a small network with parallel regions (the RegNetY fixture), not
// GoogLeNet: `co_up plan` takes the same hybrid para/pipe search on it, and each of its five
// plannings then takes a twentieth of the time (under AddressSanitizer most of the test's time).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
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
#include "planner/synthetic_profile.h"
#include "tests/cli/googlenet_ops.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/test_support.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using ::testing::ContainsRegex;
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
  // Start points only: any front of real mappings serves, and a small branch-and-bound budget keeps
  // the planning (most of each test's time under the sanitizers) short.
  std::vector<planner::Candidate> front = planner::plan_hybrid(model, planner::Objective::kPareto, 64, [] {
                                            planner::HybridPlanOptions o;
                                            o.node_budget = 5'000;
                                            return o;
                                          }()).ranked;
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
  settings.confirm = 0;  // the confirmation re-runs mappings measured here (ConfirmationPicks... tests it)
  const cli::TuneResult r = cli::tune_mappings(f.model, f.front, {}, settings, f.runner, nullptr);
  EXPECT_EQ(r.stopped, "the candidate limit is reached");
  EXPECT_EQ(r.confirmation_runs, 0u);
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
    EXPECT_EQ(t.search.fps.size(), t.search.ms.size());
    EXPECT_GE(t.search.fps.size(), 1u) << t.move;
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
    for (size_t j = 0; j < r.measured.size(); ++j) dominated |= dominates(r.measured[j].search.median, r.measured[i].search.median);
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

// A scripted host (the tuner's logic is under test, not the runtime): the reference runs at
// 100 fps, 10 ms; the k-th other mapping it first sees is truly `gains[k]` times better in both
// (the last one default); the host's speed drifts, run n at 1 / (1 + n * drift) of the first's, and `luck(k, run)` scales mapping k's numbers on its run-th run. Every run is logged.
struct ScriptedHost {
  planner::Mapping reference;
  std::vector<double> gains;
  double drift = 0;
  std::function<double(size_t, size_t)> luck = [](size_t, size_t) { return 1.0; };
  std::map<std::string, size_t> seen;
  std::map<std::string, size_t> runs_of;
  std::vector<std::string> log;

  cli::Measurement operator()(const planner::Mapping& m) {
    const std::string key = m.order + "/" + mode_name(m.mode);
    const double speed = 1.0 / (1.0 + drift * static_cast<double>(log.size()));
    log.push_back(key);
    double gain = 1;
    if (!(m == reference)) {
      const size_t k = seen.emplace(key, seen.size()).first->second;
      gain = (k < gains.size() ? gains[k] : gains.back()) * luck(k, runs_of[key]++);
    }
    return {100.0 * gain * speed, 10.0 / (gain * speed)};
  }
};

// The model's first three front points, measured one per batch (with the reference), and nothing
// else: the mappings measured are fixed; what is under test is which one is picked.
cli::TuneSettings three_batches(const Fixture& f) {
  cli::TuneSettings settings;
  settings.seconds = 1e6;  // the candidate limit stops the search
  settings.max_candidates = 3;
  settings.starts = 3;
  settings.batch = 0;  // a batch: one mapping (and the reference)
  settings.reps = 3;
  settings.reference = planner::best_single_processor(f.cost, planner::Mode::kSwitch).mapping;
  return settings;
}

TEST(MeasuredTuning, InBatchRatiosPickTheTrulyBestOnADriftingHost) {
  const Fixture f;
  ASSERT_GE(f.front.size(), 3u);
  // The mapping measured last is truly the best (1.7x), but the host slows down run by run, so by
  // its batch its absolute numbers are below those of the first (1.5x), measured on a faster host.
  const auto drifting = [&] {
    ScriptedHost host;
    host.reference = *three_batches(f).reference;
    host.gains = {1.5, 1.6, 1.7};
    host.drift = 0.05;
    return host;
  };
  cli::TuneSettings settings = three_batches(f);
  settings.confirm = 0;  // the search's pick alone: ratios against the reference in the same batch

  cli::TuneGoal relative;
  relative.target_fps_gain = 1.8;
  relative.target_latency_gain = 1.3;
  ScriptedHost host = drifting();
  const cli::TuneResult r = cli::tune_mappings(f.model, f.front, relative, settings, std::ref(host), nullptr);
  ASSERT_EQ(r.measured.size(), 3u);
  ASSERT_TRUE(r.has_pick());
  EXPECT_EQ(r.pick, 2u) << r.measured[r.pick].search.gains.fps;  // the last measured, truly 1.7x
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(r.measured[k].search.gains.fps, host.gains[k], 0.05 * host.gains[k]) << k;
    EXPECT_NEAR(r.measured[k].search.gains.latency, host.gains[k], 0.05 * host.gains[k]) << k;
  }
  EXPECT_EQ(r.reference.fps.size(), 3u * 3u);  // in every batch, every round
  // The same mappings in the same order of measurement, the reference in every batch: per seed.
  EXPECT_EQ(host.log.size(), 3u * 3u * 2u);
  ScriptedHost again = drifting();
  cli::tune_mappings(f.model, f.front, relative, settings, std::ref(again), nullptr);
  EXPECT_EQ(again.log, host.log);

  // Scored on absolute numbers against the reference measured once before (the target in fps and
  // ms, no reference in the batches): the first measured wins.
  cli::TuneGoal absolute;
  absolute.target_fps = 1.8 * 100;
  absolute.target_ms = 10 / 1.3;
  cli::TuneSettings no_reference = settings;
  no_reference.reference.reset();
  ScriptedHost old = drifting();
  const cli::TuneResult a = cli::tune_mappings(f.model, f.front, absolute, no_reference, std::ref(old), nullptr);
  ASSERT_TRUE(a.has_pick());
  EXPECT_EQ(a.measured[a.pick].candidate.mapping, r.measured[0].candidate.mapping);  // truly 1.5x
}

TEST(MeasuredTuning, ConfirmationPicksOnItsOwnRunsNotOnALuckySearchMedian) {
  const Fixture f;
  ASSERT_GE(f.front.size(), 3u);
  // Truly 1.7x, 1.6x, 1.5x in the order measured; the last was lucky on its three search runs
  // (20 % faster), so the search ranks it first.
  ScriptedHost host;
  host.reference = *three_batches(f).reference;
  host.gains = {1.7, 1.6, 1.5};
  host.luck = [](size_t k, size_t run) { return k == 2 && run < 3 ? 1.2 : 1.0; };
  cli::TuneSettings settings = three_batches(f);
  settings.confirm = 3;
  settings.confirm_reps = 4;
  cli::TuneGoal goal;
  goal.target_fps_gain = 1.8;
  goal.target_latency_gain = 1.3;
  const cli::TuneResult r = cli::tune_mappings(f.model, f.front, goal, settings, std::ref(host), nullptr);
  ASSERT_EQ(r.measured.size(), 3u);
  EXPECT_EQ(r.front.front(), 2u);  // the search's best: the lucky one
  EXPECT_NEAR(r.measured[2].search.gains.fps, 1.8, 1e-9);
  ASSERT_EQ(r.confirmed.size(), 3u);
  ASSERT_TRUE(r.has_pick());
  EXPECT_EQ(r.pick, 0u);  // truly the best
  EXPECT_EQ(r.confirmed, (std::vector<size_t>{0, 1, 2}));
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r.measured[k].confirmation.fps.size(), 4u);
    EXPECT_NEAR(r.measured[k].confirmation.gains.fps, host.gains[k], 1e-9) << k;
  }
  // Every confirmation run beside one of the reference: 3 mappings x 4 runs x 2.
  EXPECT_EQ(r.confirmation_runs, 3u * 4u * 2u);
  EXPECT_EQ(r.runs, 3u * 3u * 2u + r.confirmation_runs);
  EXPECT_EQ(host.log.size(), r.runs);

  // Without the confirmation, the lucky one is picked.
  settings.confirm = 0;
  ScriptedHost unconfirmed = host;
  unconfirmed.seen.clear();
  unconfirmed.runs_of.clear();
  unconfirmed.log.clear();
  const cli::TuneResult u = cli::tune_mappings(f.model, f.front, goal, settings, std::ref(unconfirmed), nullptr);
  ASSERT_TRUE(u.has_pick());
  EXPECT_EQ(u.pick, 2u);
}

TEST(MeasuredTuning, RelativeTargetNeedsAReference) {
  const Fixture f;
  cli::TuneGoal goal;
  goal.target_fps_gain = 1.8;
  cli::TuneSettings settings;
  settings.seconds = 1e6;
  EXPECT_THROW(cli::tune_mappings(f.model, f.front, goal, settings, f.runner, nullptr), std::invalid_argument);
}

std::string regnet_model() { return (std::filesystem::path(CO_UP_ONNX_FIXTURES) / "regnet_y_tiny.onnx").string(); }

// A synthetic B/L profile of the RegNetY fixture with one unit per convolution (25 units, three
// parallel regions), so that `co_up plan` builds the network and finds its regions.
planner::LayerProfile regnet_ops_profile() {
  NetworkSpec spec;
  spec.model = regnet_model();
  spec.units = "ops";
  const graph::Graph g = build_network(spec);
  EXPECT_FALSE(graph::find_unit_regions(graph::unit_dag(g)).empty()) << "the hybrid search needs regions";
  planner::SyntheticSpec synthetic;
  synthetic.layers = g.layer_count();
  synthetic.processors = 2;
  synthetic.shared_hosts = false;
  synthetic.handoff_us = 30;
  synthetic.graph = "";
  planner::LayerProfile p = planner::make_synthetic_profile(synthetic);
  p.network.model = spec.model;
  p.network.units = spec.units;
  return p;
}

TEST(MeasuredTuning, PlanTunePrintsTheMeasuredFrontAfterTheModelsUnchanged) {
  const test::ScratchDir scratch;
  const std::filesystem::path profile = scratch / "regnet_ops.json";
  planner::write_layer_profile(profile, regnet_ops_profile());
  const std::vector<std::string> plan = {"plan", "--profile=" + profile.string(), "--objective=pareto", "--top=20", "--n=2"};
  const CommandResult model_only = run_program(CO_UP_BINARY, plan, scratch.path());
  ASSERT_EQ(model_only.exit_code, 0) << model_only;
  EXPECT_THAT(model_only.out, HasSubstr("parallel regions: hybrid para/pipe search"));

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
  // Runs of at least kTuneFramesPerRun frames whatever --n says (fewer measure outliers).
  EXPECT_THAT(r.out, HasSubstr("measuring neighbours of the plans above (" + std::to_string(cli::kTuneFramesPerRun) +
                               " frames per run after 2 warm-up"));
  EXPECT_THAT(r.out, HasSubstr("tuned (measured on this machine, now: 6 mappings"));
  EXPECT_THAT(r.out, HasSubstr("stopped: the candidate limit is reached"));
  EXPECT_THAT(r.out, HasSubstr("measured Pareto front"));
  EXPECT_THAT(r.out, HasSubstr("these are measurements of this machine at this time"));
  EXPECT_THAT(r.out, HasSubstr("(predicted "));
  EXPECT_THAT(r.out, HasSubstr("co_up --model=" + regnet_model() + " --units=ops --order="));
  EXPECT_THAT(r.out, HasSubstr("reference, measured in every batch: "));
  EXPECT_THAT(r.out, HasSubstr("x throughput, latency / "));
  EXPECT_THAT(r.out, HasSubstr(" of the front, spread over it, 5 more runs each, every run beside a run of the reference"));

  std::vector<std::string> target = plan;
  target.insert(target.end(), {"--tune=600", "--tune-candidates=4", "--tune-target=1.8x,1.3x"});
  const CommandResult t = run_program(CO_UP_BINARY, target, scratch.path());
  ASSERT_EQ(t.exit_code, 0) << t;
  EXPECT_EQ(t.out.substr(0, model_only.out.size()), model_only.out);  // the whole front only for the starts
  EXPECT_THAT(t.out, HasSubstr("tune: the target's start points from the model's whole front ("));
  EXPECT_THAT(t.out, HasSubstr("tuned (measured on this machine, now: 4 mappings"));
  EXPECT_THAT(t.out, HasSubstr("confirmation: 3 of the best measured for the target, 5 more runs each"));
  EXPECT_THAT(t.out, HasSubstr("     confirmed "));
  EXPECT_THAT(t.out, HasSubstr("  <- picked\n"));
  EXPECT_THAT(t.out, ContainsRegex("the pick (meets|misses) the target on its confirmation runs"));
}

}  // namespace
}  // namespace co_up
