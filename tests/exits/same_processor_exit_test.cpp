// Early exits within one processor: a multi-exit network whose stages all map to one letter
// (`BBB`) runs each stage as a sub-graph of its own on that processor's one thread, so a frame
// that stops at an exit runs no later stage's layer there either, and frames still complete in
// order, once each, with the static network's outputs when no exit stops early.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/exit_policy.h"
#include "tests/core/test_support.h"
#include "tests/exits/exit_network.h"
#include "tests/exits/exit_run.h"

namespace co_up {
namespace {

using test::ExitRun;
using test::InputSets;
using test::equal_bits;
using test::one_processor;
using test::run_with_exits;
using profiler::EventKind;

// All three stages on B: each a sub-graph of its own on B's one thread. Layer events recorded.
ExitRun run(const graph::Graph& g, Mode mode, uint64_t frames, const InputSets& inputs,
            const std::string& policy) {
  return run_with_exits(g, one_processor(), {"BBB", mode, frames, policy, 2}, inputs);
}

// The frames whose layers of layer unit `unit` ran (from the layer events), each counted once;
// `twice` counts a (frame, layer) recorded again.
std::vector<std::set<uint64_t>> layer_frames(const profiler::RunProfile& p, size_t units, int* twice) {
  std::vector<std::set<uint64_t>> frames(units);
  std::set<std::pair<uint64_t, uint32_t>> seen;
  for (const profiler::Event& e : p.events) {
    if (e.kind != EventKind::kLayer) continue;
    frames.at(e.layer).insert(e.frame);
    if (!seen.insert({e.frame, e.layer}).second) ++*twice;
  }
  return frames;
}

TEST(SameProcessorExitTest, EachStageOfAMultiExitNetworkIsASubGraphOnItsLetter) {
  const graph::Graph g = test::exit_network(true);
  ASSERT_EQ(g.layer_count(), 3u);
  const Partition exits = Partition::create(g, "BBB");
  ASSERT_EQ(exits.subgraphs().size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(exits.subgraphs()[i].processor, 'B');
    EXPECT_EQ(exits.subgraphs()[i].first_layer, i);
    EXPECT_EQ(exits.subgraphs()[i].last_layer, i);
  }
  // Letters still cut where they change; the final exit ends no sub-graph early.
  EXPECT_EQ(Partition::create(g, "BLL").subgraphs().size(), 3u);
  // Without exits nothing changes: one sub-graph per run of a letter.
  EXPECT_EQ(Partition::create(test::exit_network(false), "BBB").subgraphs().size(), 1u);
}

TEST(SameProcessorExitTest, StoppingAtStageOneRunsNoLaterLayerOnTheProcessor) {
  const graph::Graph g = test::exit_network(true);
  const InputSets inputs = {test::scaled_input(g, 7, 1.0f), test::scaled_input(g, 8, 1.0f)};
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, mode, 50, inputs, "softmax-max>=0");
    const profiler::RunProfile& p = got.result.profile;
    ASSERT_EQ(p.frames_completed, 50u);
    EXPECT_EQ(p.frame_exit, std::vector<uint32_t>(50, 0u));
    int twice = 0;
    const auto ran = layer_frames(p, 3, &twice);
    EXPECT_EQ(ran[0].size(), 50u);
    EXPECT_TRUE(ran[1].empty()) << ran[1].size() << " frames ran stage 2's layers";
    EXPECT_TRUE(ran[2].empty()) << ran[2].size() << " frames ran stage 3's layers";
    EXPECT_EQ(twice, 0);
    for (const profiler::Event& e : p.events) {
      EXPECT_EQ(e.subgraph, 0u) << "an event on sub-graph " << e.subgraph << " for frame " << e.frame;
    }
    EXPECT_EQ(got.deliveries, 50 * 3);
    EXPECT_EQ(got.repeated, 0);
  }
}

TEST(SameProcessorExitTest, ThousandMixedFramesFinishInOrderOnceEachRunningOnlyTheirStages) {
  const graph::Graph g = test::exit_network(true);
  const graph::Graph fixed = test::exit_network(false);
  const InputSets distinct = test::confident_middling_unsure(g);
  const ExitRun reference = run(fixed, Mode::kSwitch, 3, distinct, "none");
  const std::string policy = test::mixed_exit_policy(reference);
  ASSERT_FALSE(policy.empty());

  const std::vector<size_t> pattern = {0, 1, 2, 1, 0, 2, 1};
  InputSets inputs;
  for (size_t i : pattern) inputs.push_back(distinct[i]);
  const uint64_t frames = 1000;
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, mode, frames, inputs, policy);
    const profiler::RunProfile& p = got.result.profile;
    ASSERT_EQ(p.frames_completed, frames);
    EXPECT_FALSE(p.interrupted);
    ASSERT_EQ(p.frame_exit.size(), frames);
    ASSERT_EQ(p.frame_end_ns.size(), frames);
    EXPECT_TRUE(std::is_sorted(p.frame_end_ns.begin(), p.frame_end_ns.end())) << "completed out of order";
    EXPECT_EQ(got.repeated, 0);
    EXPECT_EQ(got.deliveries, static_cast<int>(frames * 3));
    std::vector<uint64_t> reaching(3, 0);
    for (uint64_t f = 0; f < frames; ++f) {
      const size_t input = pattern[f % pattern.size()];
      const auto exit = static_cast<uint32_t>(input);
      ASSERT_EQ(p.frame_exit[f], exit) << "frame " << f;
      for (uint32_t i = 0; i <= exit; ++i) ++reaching[i];
      const auto& o = got.outputs.at(f);
      for (size_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(equal_bits(o[k], reference.outputs.at(input)[std::min<size_t>(k, exit)]))
            << "frame " << f << " output " << k;
      }
    }
    // Stage i's layers ran for exactly the frames that reach stage i, once each.
    int twice = 0;
    const auto ran = layer_frames(p, 3, &twice);
    EXPECT_EQ(twice, 0);
    for (uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(ran[i].size(), reaching[i]) << "stage " << i + 1;
      for (uint64_t f : ran[i]) ASSERT_GE(p.frame_exit[f], i) << "stage " << i + 1 << " ran frame " << f;
    }
  }
}

TEST(SameProcessorExitTest, ThresholdsThatNeverStopGiveTheStaticOutputsBitForBit) {
  const graph::Graph g = test::exit_network(true);
  const graph::Graph fixed = test::exit_network(false);
  InputSets inputs;
  for (uint64_t i = 0; i < 3; ++i) inputs.push_back(test::scaled_input(fixed, 60 + i, 1.0f));
  inputs.push_back(test::scaled_input(fixed, 63, test::kConfidentScale));
  const ExitRun reference = run(fixed, Mode::kSwitch, 4, inputs, "none");
  ASSERT_EQ(reference.result.profile.subgraphs.size(), 1u);
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, mode, 20, inputs, "softmax-max>=off,off");
    ASSERT_EQ(got.result.profile.frames_completed, 20u);
    ASSERT_EQ(got.result.profile.frame_exit, std::vector<uint32_t>(20, 2u));
    EXPECT_EQ(got.result.profile.subgraphs.size(), 3u);
    for (uint64_t f = 0; f < 20; ++f) {
      for (size_t o = 0; o < 3; ++o) {
        EXPECT_TRUE(equal_bits(reference.outputs.at(f % 4)[o], got.outputs.at(f)[o]))
            << "frame " << f << " output " << o;
      }
    }
  }
}

}  // namespace
}  // namespace co_up
