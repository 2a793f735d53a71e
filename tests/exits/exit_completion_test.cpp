// A frame that stops at an exit completes right there: the executor delivers its result at the
// exit, hands it to no later sub-graph (no receiver carries it, no transfer counts it), and the
// later sub-graphs never run, receive or record anything for it; frames still complete in order,
// each output once, in pipeline and switch mode. On a three-stage network whose first stage's
// features feed both later stages (as Map-and-Conquer's stage 1 does), so that a frame stopping at
// the middle exit may already have been sent on towards the last stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <cstdio>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/exit_policy.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "tests/core/test_support.h"
#include "tests/exits/exit_network.h"
#include "tests/exits/exit_run.h"

namespace co_up {
namespace {

using test::ExitRun;
using test::InputSets;
using test::equal_bits;
using test::run_with_exits;
using test::three_processors;
using profiler::EventKind;

// stage1: f1 = relu(conv(x)), exit0 = head(f1); stage2: f2 = relu(conv(f1)), exit1 = head(f2);
// stage3: f3 = relu(conv(concat(f1, f2))), exit2 = head(f3). No biases: scaling the input scales
// every logit (test::exit_network's trick for confident and unsure inputs).
graph::Graph shared_feature_network(bool with_exits) {
  graph::SeededWeights weights(17);
  graph::GraphBuilder b("sharednet", weights);
  const graph::TensorId x = b.input("data", {1, 3, 12, 12});
  auto conv = [&](graph::TensorId in, const std::string& name) {
    graph::ConvParams p = graph::ConvParams::square(6, 3, 1, 1);
    p.bias = false;
    return b.relu(b.conv(in, name, p), name + "_relu");
  };
  auto head = [&](graph::TensorId features, const std::string& name) {
    graph::TensorId h = b.global_avg_pool(features, name + "_pool");
    h = b.flatten(h, name + "_flatten");
    h = b.fully_connected(h, name + "_fc", test::kExitClasses, /*bias=*/false);
    return b.softmax(h, name);
  };
  b.begin_layer("stage1");
  const graph::TensorId f1 = conv(x, "conv1");
  const graph::TensorId e0 = head(f1, "exit0");
  b.begin_layer("stage2");
  const graph::TensorId f2 = conv(f1, "conv2");
  const graph::TensorId e1 = head(f2, "exit1");
  b.begin_layer("stage3");
  const graph::TensorId f3 = conv(b.concat({f1, f2}, "reuse"), "conv3");
  const graph::TensorId e2 = head(f3, "exit2");
  for (graph::TensorId e : {e0, e1, e2}) b.output(e);
  graph::Graph g = b.finish();
  graph::optimize_for_inference(g);
  if (with_exits) g.mark_outputs_as_exits();
  return g;
}

ExitRun run(const graph::Graph& g, const std::string& order, Mode mode, uint64_t frames,
           const InputSets& inputs, const std::string& policy) {
  return run_with_exits(g, three_processors(), {order, mode, frames, policy, 1}, inputs);
}

uint64_t transfers_into(const profiler::RunProfile& p, uint32_t source, uint32_t destination) {
  for (const profiler::ReceiverInfo& r : p.receivers) {
    if (r.source == source && r.destination == destination) return r.transfers;
  }
  ADD_FAILURE() << "no receiver " << source << " -> " << destination;
  return 0;
}

TEST(ExitCompletionTest, AFrameStoppedAtStageOneIsHandedToNoLaterSubGraph) {
  const graph::Graph g = shared_feature_network(true);
  const InputSets inputs = {test::scaled_input(g, 7, 1.0f), test::scaled_input(g, 8, 1.0f)};
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, "BLD", mode, 50, inputs, "softmax-max>=0");
    const profiler::RunProfile& p = got.result.profile;
    ASSERT_EQ(p.frames_completed, 50u);
    EXPECT_EQ(p.frame_exit, std::vector<uint32_t>(50, 0u));
    // From the events: sub-graph 0 ran every frame once and sent nothing (no transfer towards
    // another sub-graph); sub-graphs 1 and 2 ran, received and sent nothing.
    uint64_t runs_of_first = 0;
    for (const profiler::Event& e : p.events) {
      EXPECT_EQ(e.subgraph, 0u) << "an event on sub-graph " << e.subgraph << " for frame " << e.frame;
      if (e.kind == EventKind::kSubGraph) ++runs_of_first;
      if (e.kind == EventKind::kTransfer) {
        EXPECT_EQ(e.peer, 0u) << "frame " << e.frame << " handed to sub-graph " << e.peer;
      }
    }
    EXPECT_EQ(runs_of_first, 50u);
    // No receiver of a later sub-graph ever carried a frame (not even a "finished" marker).
    ASSERT_EQ(p.receivers.size(), 3u);
    for (const profiler::ReceiverInfo& r : p.receivers) {
      EXPECT_EQ(r.transfers, 0u) << r.source << " -> " << r.destination;
    }
    EXPECT_EQ(p.subgraph_frames_skipped, (std::vector<uint64_t>{0, 50, 50}));
    EXPECT_EQ(got.deliveries, 50 * 3);
    EXPECT_EQ(got.repeated, 0);
  }
}

TEST(ExitCompletionTest, ThousandFramesWithEveryExitFinishInOrderOnceEach) {
  const graph::Graph g = shared_feature_network(true);
  const graph::Graph fixed = shared_feature_network(false);
  // Confident (stops at exit 0), middling and unsure inputs; thresholds from the static network's
  // own scores so that the middling one stops at exit 1 and the unsure one runs to the end.
  const InputSets distinct = test::confident_middling_unsure(g);
  const ExitRun reference = run(fixed, "BBB", Mode::kSwitch, 3, distinct, "none");
  const std::string policy = test::mixed_exit_policy(reference);
  ASSERT_FALSE(policy.empty());

  // Frame f reads pattern[f % 7]; its exit is the input's.
  const std::vector<size_t> pattern = {0, 1, 2, 1, 0, 2, 1};
  InputSets inputs;
  for (size_t i : pattern) inputs.push_back(distinct[i]);
  const uint64_t frames = 1000;
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, "BLD", mode, frames, inputs, policy);
    const profiler::RunProfile& p = got.result.profile;
    ASSERT_EQ(p.frames_completed, frames);
    EXPECT_FALSE(p.interrupted);
    ASSERT_EQ(p.frame_exit.size(), frames);
    ASSERT_EQ(p.frame_end_ns.size(), frames);
    EXPECT_TRUE(std::is_sorted(p.frame_end_ns.begin(), p.frame_end_ns.end())) << "completed out of order";
    EXPECT_EQ(got.repeated, 0);
    EXPECT_EQ(got.deliveries, static_cast<int>(frames * 3));
    std::vector<uint64_t> reaching(3, 0);  // frames that reach stage i
    for (uint64_t f = 0; f < frames; ++f) {
      const size_t input = pattern[f % pattern.size()];
      const uint32_t exit = static_cast<uint32_t>(input);
      ASSERT_EQ(p.frame_exit[f], exit) << "frame " << f;
      for (uint32_t i = 0; i <= exit; ++i) ++reaching[i];
      const auto& o = got.outputs.at(f);
      for (size_t k = 0; k < 3; ++k) {
        // Exit k's output is the frame's own up to its exit, the stopping exit's after it.
        ASSERT_TRUE(equal_bits(o[k], reference.outputs.at(input)[std::min<size_t>(k, exit)]))
            << "frame " << f << " output " << k;
      }
    }
    ASSERT_GT(reaching[2], 0u);
    ASSERT_GT(reaching[1], reaching[2]);
    ASSERT_GT(reaching[0], reaching[1]);
    // Each sub-graph ran exactly the frames that reach it, and received only those.
    std::vector<std::set<uint64_t>> ran(3), received(3);
    for (const profiler::Event& e : p.events) {
      if (e.kind == EventKind::kSubGraph) {
        EXPECT_TRUE(ran[e.subgraph].insert(e.frame).second) << "sub-graph " << e.subgraph << " ran frame " << e.frame << " twice";
      }
      if (e.kind == EventKind::kTransfer && e.peer == e.subgraph) received[e.subgraph].insert(e.frame);
    }
    for (uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(ran[i].size(), reaching[i]) << "sub-graph " << i;
      for (uint64_t f : ran[i]) ASSERT_GE(p.frame_exit[f], i) << "sub-graph " << i << " ran frame " << f;
      for (uint64_t f : received[i]) ASSERT_GE(p.frame_exit[f], i) << "sub-graph " << i << " received frame " << f;
    }
    // Hand-offs: stage 1 -> 2 and stage 2 -> 3 carry exactly the frames that go on. Stage 1's
    // features for stage 3 may leave before exit 1 decides (then they are dropped unread), never
    // for a frame that stopped at exit 0.
    EXPECT_EQ(transfers_into(p, 0, 1), reaching[1]);
    EXPECT_EQ(transfers_into(p, 1, 2), reaching[2]);
    const uint64_t to_last = transfers_into(p, 0, 2);
    EXPECT_GE(to_last, reaching[2]);
    EXPECT_LE(to_last, reaching[1]);
    EXPECT_EQ(p.subgraph_frames_skipped,
              (std::vector<uint64_t>{0, frames - reaching[1], frames - reaching[2]}));
  }
}

TEST(ExitCompletionTest, ThresholdsThatNeverStopGiveTheStaticOutputs) {
  const graph::Graph g = shared_feature_network(true);
  const graph::Graph fixed = shared_feature_network(false);
  InputSets inputs;
  for (uint64_t i = 0; i < 3; ++i) inputs.push_back(test::scaled_input(fixed, 60 + i, 1.0f));
  inputs.push_back(test::scaled_input(fixed, 63, test::kConfidentScale));
  const ExitRun reference = run(fixed, "BBB", Mode::kSwitch, 4, inputs, "none");
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    SCOPED_TRACE(mode_name(mode));
    const ExitRun got = run(g, "BLD", mode, 20, inputs, "softmax-max>=off,off");
    ASSERT_EQ(got.result.profile.frames_completed, 20u);
    ASSERT_EQ(got.result.profile.frame_exit, std::vector<uint32_t>(20, 2u));
    for (uint64_t f = 0; f < 20; ++f) {
      for (size_t o = 0; o < 3; ++o) {
        EXPECT_TRUE(equal_bits(reference.outputs.at(f % 4)[o], got.outputs.at(f)[o]))
            << "frame " << f << " output " << o;
      }
    }
    EXPECT_EQ(transfers_into(got.result.profile, 0, 2), 20u);
  }
}

// A stream that admits frames a few at a time from another thread and closes after the last:
// frames that stop early wake no later processor, yet the run neither stalls nor ends early.
class TrickleStream final : public FrameStream {
 public:
  TrickleStream(const InputSets& inputs, uint64_t frames) : inputs_(inputs), frames_(frames) {}
  uint64_t admitted() const override { return admitted_.load(std::memory_order_acquire); }
  bool closed() const override { return closed_.load(std::memory_order_acquire); }
  const float* input(uint64_t frame, uint32_t input) override {
    return inputs_[frame % inputs_.size()][input].data();
  }
  void output(uint64_t frame, uint32_t output, std::span<const float>) override {
    std::lock_guard lock(mutex_);
    outputs_.insert({frame, output});
  }
  void frames_completed(uint64_t completed) override {
    {
      std::lock_guard lock(mutex_);
      completed_sequence_.push_back(completed);
    }
    done_.notify_all();
  }
  // Admits frames in steps of `step`, waiting for each step to complete, then closes.
  void feed(Executor& executor, uint64_t step) {
    for (uint64_t next = 0; next < frames_;) {
      next = std::min(frames_, next + step);
      admitted_.store(next, std::memory_order_release);
      executor.notify_stream();
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return !completed_sequence_.empty() && completed_sequence_.back() >= next; });
    }
    closed_.store(true, std::memory_order_release);
    executor.notify_stream();
  }
  std::set<std::pair<uint64_t, uint32_t>> outputs_;
  std::vector<uint64_t> completed_sequence_;

 private:
  const InputSets& inputs_;
  uint64_t frames_;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<bool> closed_{false};
  std::mutex mutex_;
  std::condition_variable done_;
};

TEST(ExitCompletionTest, AStreamOfMostlyEarlyExitsCompletesEveryFrameInOrder) {
  const graph::Graph g = shared_feature_network(true);
  // Mostly confident inputs (exit 0), now and then an unsure one (runs to exit 2).
  InputSets inputs(7, test::scaled_input(g, 41, test::kConfidentScale));
  inputs[3] = test::scaled_input(g, 42, test::kUnsureScale);
  for (Mode mode : {Mode::kPipeline, Mode::kSwitch, Mode::kOverlap}) {
    for (uint64_t step : {1u, 5u}) {
      SCOPED_TRACE(std::string(mode_name(mode)) + ", admitted " + std::to_string(step) + " at a time");
      ExecutorOptions options;
      options.mode = mode;
      options.exit_policy = ExitPolicy::parse("softmax-max>=0.9");
      Executor executor(g, Partition::create(g, "BLD"), three_processors(), testing::build_plugins(), options);
      const uint64_t frames = 300;
      TrickleStream stream(inputs, frames);
      std::thread producer([&] { stream.feed(executor, step); });
      const RunResult result = executor.run_stream(stream);
      producer.join();
      EXPECT_EQ(result.profile.frames_completed, frames);
      EXPECT_EQ(stream.outputs_.size(), frames * 3);
      EXPECT_TRUE(std::is_sorted(stream.completed_sequence_.begin(), stream.completed_sequence_.end()));
      ASSERT_FALSE(stream.completed_sequence_.empty());
      EXPECT_EQ(stream.completed_sequence_.back(), frames);
      uint64_t early = 0;
      for (uint32_t e : result.profile.frame_exit) early += e == 0 ? 1 : 0;
      EXPECT_EQ(early, frames - frames / 7 - (frames % 7 > 3 ? 1 : 0));
    }
  }
}

}  // namespace
}  // namespace co_up
