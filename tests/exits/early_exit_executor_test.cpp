// Early exits in the executor: a frame that stops at an exit costs later sub-graphs no work, its
// later exits return the stopping exit's output, and frames stay numbered, in order, none lost or
// repeated, in pipeline and switch mode, on three processors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/exit_policy.h"
#include "tests/core/test_support.h"
#include "tests/exits/exit_network.h"
#include "tests/exits/exit_run.h"

namespace co_up {
namespace {

using test::exit_network;
using test::kConfidentScale;
using test::kUnsureScale;
using test::scaled_input;

using test::ExitRun;
using test::InputSets;
using test::equal_bits;
using test::run_with_exits;
using test::three_processors;

ExitRun run(const graph::Graph& g, const std::string& order, Mode mode, uint64_t frames,
           const InputSets& inputs, const std::string& policy) {
  return run_with_exits(g, three_processors(), {order, mode, frames, policy, 1}, inputs);
}

// Sub-graphs that ran (kSubGraph events) or received anything (transfer events), from the profile.
std::set<uint32_t> subgraphs_with_events(const profiler::RunProfile& p) {
  std::set<uint32_t> seen;
  for (const profiler::Event& e : p.events) seen.insert(e.subgraph);
  return seen;
}

TEST(EarlyExitExecutorTest, ThresholdsThatNeverStopEarlyGiveTheStaticOutputsBitForBit) {
  const graph::Graph dynamic = exit_network(true);
  const graph::Graph fixed = exit_network(false);
  InputSets inputs;
  for (uint64_t i = 0; i < 4; ++i) inputs.push_back(scaled_input(fixed, 50 + i, 1.0f));
  const ExitRun reference = run(fixed, "BBB", Mode::kSwitch, 4, inputs, "none");
  ASSERT_TRUE(reference.result.profile.exits.empty());
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    const ExitRun got = run(dynamic, "BLD", mode, 12, inputs, "softmax-max>=1");
    ASSERT_EQ(got.result.profile.frames_completed, 12u);
    ASSERT_EQ(got.result.profile.frame_exit, std::vector<uint32_t>(12, 2u)) << "a frame stopped early";
    for (uint64_t f = 0; f < 12; ++f) {
      for (size_t o = 0; o < 3; ++o) {
        EXPECT_TRUE(equal_bits(reference.outputs.at(f % 4)[o], got.outputs.at(f)[o]))
            << "frame " << f << " output " << o;
      }
    }
    EXPECT_EQ(got.result.profile.subgraph_frames_skipped, (std::vector<uint64_t>{0, 0, 0}));
  }
}

TEST(EarlyExitExecutorTest, StoppingAtTheFirstExitRunsNoLaterSubGraph) {
  // Stages that read the stage before, and stages that all read the input (only the exit
  // decision keeps a later stage from starting the frame).
  for (bool independent : {false, true}) {
    SCOPED_TRACE(independent ? "independent stages" : "chained stages");
    const graph::Graph g = exit_network(true, 11, {"exit0", "exit1", "exit2"}, independent);
    const InputSets inputs = {scaled_input(g, 7, 1.0f), scaled_input(g, 8, 1.0f)};
    for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
      const ExitRun got = run(g, "BLD", mode, 40, inputs, "softmax-max>=0");
      const profiler::RunProfile& p = got.result.profile;
      ASSERT_EQ(p.frames_completed, 40u);
      EXPECT_FALSE(p.interrupted);
      EXPECT_EQ(p.frame_exit, std::vector<uint32_t>(40, 0u));
      // Level 1 records every sub-graph run and every transfer: only sub-graph 0 has any.
      EXPECT_EQ(subgraphs_with_events(p), std::set<uint32_t>{0});
      EXPECT_EQ(p.subgraph_frames_skipped, (std::vector<uint64_t>{0, 40, 40}));
      ASSERT_EQ(p.exits.size(), 3u);
      EXPECT_EQ(p.exits[0].name, "exit0");
      EXPECT_EQ(p.exits[2].subgraph, 2u);
      // Every exit of a stopped frame returns exit 0's output.
      for (uint64_t f = 0; f < 40; ++f) {
        const auto& o = got.outputs.at(f);
        ASSERT_EQ(o.size(), 3u);
        EXPECT_TRUE(equal_bits(o[0], o[1]) && equal_bits(o[0], o[2])) << "frame " << f;
      }
      EXPECT_EQ(got.deliveries, 40 * 3);
      EXPECT_TRUE(equal_bits(got.result.last_outputs[2], got.outputs.at(39)[0]));
    }
  }
}

// 1,000 frames, every other one confident enough for exit 0, the others running to the final exit.
TEST(EarlyExitExecutorTest, ThousandMixedFramesFinishInOrderOnceEachInBothModes) {
  const graph::Graph g = exit_network();
  const graph::Graph fixed = exit_network(false);
  const InputSets inputs = {scaled_input(g, 21, kConfidentScale), scaled_input(g, 22, kUnsureScale),
                            scaled_input(g, 23, kConfidentScale), scaled_input(g, 24, kUnsureScale),
                            scaled_input(g, 25, kUnsureScale)};
  const std::vector<uint32_t> expected_exit = {0, 2, 0, 2, 2};
  const ExitRun reference = run(fixed, "BBB", Mode::kSwitch, 5, inputs, "none");
  const uint64_t frames = 1000;
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, "BLD", mode, frames, inputs, "softmax-max>=0.9");
    const profiler::RunProfile& p = got.result.profile;
    ASSERT_EQ(p.frames_completed, frames);
    ASSERT_EQ(p.frame_exit.size(), frames);
    ASSERT_EQ(p.frame_end_ns.size(), frames);
    EXPECT_TRUE(std::is_sorted(p.frame_end_ns.begin(), p.frame_end_ns.end())) << "completed out of order";
    if (mode == Mode::kSwitch) {
      for (uint64_t f = 1; f < frames; ++f) {
        ASSERT_GE(p.frame_start_ns[f], p.frame_end_ns[f - 1]) << "frame " << f << " overlapped";
      }
    }
    if (mode == Mode::kOverlap) {  // two frames in flight at most
      for (uint64_t f = 2; f < frames; ++f) {
        ASSERT_GE(p.frame_start_ns[f], p.frame_end_ns[f - 2]) << "frame " << f << " entered with " << f - 2 << " in flight";
      }
    }
    // Exit 0's sub-graph sees every frame, in order, once.
    ASSERT_EQ(got.exit0_arrival.size(), frames);
    for (uint64_t f = 0; f < frames; ++f) ASSERT_EQ(got.exit0_arrival[f], f);
    EXPECT_EQ(got.deliveries, static_cast<int>(frames * 3));
    uint64_t early = 0;
    for (uint64_t f = 0; f < frames; ++f) {
      const uint32_t exit = expected_exit[f % 5];
      ASSERT_EQ(p.frame_exit[f], exit) << "frame " << f;
      early += exit == 0 ? 1 : 0;
      // The frame's result (the final output) is its exit's output for its own input.
      const auto& o = got.outputs.at(f);
      ASSERT_TRUE(equal_bits(o[2], reference.outputs.at(f % 5)[exit])) << "frame " << f;
    }
    EXPECT_EQ(early, 400u);
    EXPECT_EQ(p.subgraph_frames_skipped, (std::vector<uint64_t>{0, early, early}));
    uint64_t runs_of_last = 0;
    for (const profiler::Event& e : p.events) {
      runs_of_last += e.kind == profiler::EventKind::kSubGraph && e.subgraph == 2 ? 1 : 0;
    }
    EXPECT_EQ(runs_of_last, frames - early);
  }
}

TEST(EarlyExitExecutorTest, NonContiguousMappingsWithExitsDoNotDeadlock) {
  const graph::Graph g = exit_network();
  const InputSets inputs = {scaled_input(g, 31, kConfidentScale), scaled_input(g, 32, kUnsureScale)};
  for (const char* order : {"BLB", "LBL", "BDL"}) {
    for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
      const ExitRun got = run(g, order, mode, 60, inputs, "softmax-max>=0.9");
      EXPECT_EQ(got.result.profile.frames_completed, 60u) << order;
      EXPECT_EQ(got.deliveries, 60 * 3) << order;
    }
  }
}

TEST(EarlyExitExecutorTest, PolicyThatDoesNotFitTheNetworkIsAnInputError) {
  const graph::Graph g = exit_network();
  const graph::Graph fixed = exit_network(false);
  auto make = [&](const graph::Graph& graph, const std::string& policy) {
    ExecutorOptions options;
    options.exit_policy = ExitPolicy::parse(policy);
    Executor executor(graph, Partition::create(graph, "BBB"), three_processors(), testing::build_plugins(), options);
  };
  EXPECT_NO_THROW(make(g, "entropy<=0.2,0.3"));
  try {
    make(g, "softmax-max>=0.1,0.2,0.3");
    FAIL() << "three thresholds for three exits accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--exit='softmax-max>=0.1,0.2,0.3' gives 3 thresholds but graph 'exitnet' has 3 "
                 "exits: give one threshold, or one per exit before the final (2)");
  }
  try {
    make(fixed, "softmax-max>=0.5");
    FAIL() << "a policy for a network without exits accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs a network with exits, but graph 'exitnet' has none"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace co_up
