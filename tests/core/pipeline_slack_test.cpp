// Pipeline slack: by default a producer stage may finish a whole frame ahead of its consumer, so
// that a frame which is slow on one stage does not stall the other (with two receive buffers the
// consumer holds one slot while it runs and the producer fills the other: the stages run in lock
// step, and every frame period is the slower of the two frames in flight).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

// Stage 0: one 1x1 convolution (microseconds); stage 1: three 3x3 convolutions, 64 channels
// (milliseconds): the consumer is the slow stage by three orders of magnitude.
graph::Graph slow_consumer_graph() {
  graph::SeededWeights weights(5);
  graph::GraphBuilder b("slow_consumer", weights);
  graph::TensorId x = b.input("data", {1, 8, 16, 16});
  b.begin_layer("fast");
  x = b.conv(x, "conv_fast", graph::ConvParams::square(8, 1, 1, 0));
  b.begin_layer("slow");
  for (int i = 0; i < 3; ++i) {
    x = b.relu(b.conv(x, "conv_slow" + std::to_string(i), graph::ConvParams::square(64, 3, 1, 1)),
               "relu_slow" + std::to_string(i));
  }
  b.output(b.softmax(b.flatten(x, "flat"), "prob"));
  graph::Graph g = b.finish();
  graph::optimize_for_inference(g);
  return g;
}

struct StageRun {
  RunResult result;
  std::map<uint64_t, std::vector<float>> outputs;
};

StageRun run(const graph::Graph& g, const std::string& order, ExecutorOptions options, uint64_t frames) {
  options.profile_level = 1;
  Executor executor(g, Partition::create(g, order), host_platform(), build_plugins(), options);
  StageRun out;
  RunRequest request;
  request.frames = frames;
  request.input_sets = {seeded_inputs(g, 11), seeded_inputs(g, 12), seeded_inputs(g, 13)};
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
    out.outputs[frame].assign(values.begin(), values.end());  // one stage delivers: no lock needed
  };
  out.result = executor.run(request);
  return out;
}

// {frame: [begin, end]} of one sub-graph's runs.
std::map<uint64_t, std::pair<int64_t, int64_t>> runs_of(const RunResult& r, uint32_t subgraph) {
  std::map<uint64_t, std::pair<int64_t, int64_t>> runs;
  for (const profiler::Event& e : r.profile.events) {
    if (e.kind == profiler::EventKind::kSubGraph && e.subgraph == subgraph) {
      runs[e.frame] = {e.begin_ns, e.end_ns};
    }
  }
  return runs;
}

TEST(PipelineSlackTest, DefaultBuffersLetTheProducerRunAFrameAhead) {
  EXPECT_EQ(ExecutorOptions{}.receiver_buffers, 3u);
  const graph::Graph g = slow_consumer_graph();
  const uint64_t frames = 12;
  const StageRun got = run(g, "BL", ExecutorOptions{}, frames);
  ASSERT_EQ(got.result.profile.frames_completed, frames);
  ASSERT_EQ(got.result.profile.receivers.size(), 1u);
  EXPECT_EQ(got.result.profile.receivers[0].capacity, 3u);
  EXPECT_EQ(got.result.profile.receivers[0].max_occupancy, 3u)
      << "the fast producer never had a finished frame waiting while it ran the next";
  // The producer starts frame f + 2 while the consumer still runs frame f: one finished frame
  // waits between them. With two buffers this cannot happen (lock step).
  const auto producer = runs_of(got.result, 0);
  const auto consumer = runs_of(got.result, 1);
  int ahead = 0;
  for (uint64_t f = 0; f + 2 < frames; ++f) {
    if (producer.at(f + 2).first < consumer.at(f).second) ++ahead;
  }
  EXPECT_GT(ahead, 0) << "the producer never ran a frame ahead of its consumer";
}

TEST(PipelineSlackTest, SlackDoesNotChangeAnyBit) {
  const graph::Graph g = slow_consumer_graph();
  ExecutorOptions lock_step;
  lock_step.receiver_buffers = 2;
  ExecutorOptions switch_mode;
  switch_mode.mode = ExecutionMode::kSwitch;
  const StageRun reference = run(g, "BB", switch_mode, 6);
  const StageRun two = run(g, "BL", lock_step, 6);
  const StageRun slack = run(g, "BL", ExecutorOptions{}, 6);
  ASSERT_EQ(reference.outputs.size(), 6u);
  for (const StageRun* r : {&two, &slack}) {
    ASSERT_EQ(r->outputs.size(), 6u);
    for (const auto& [frame, values] : reference.outputs) {
      const std::vector<float>& other = r->outputs.at(frame);
      ASSERT_EQ(values.size(), other.size());
      EXPECT_EQ(std::memcmp(values.data(), other.data(), values.size() * sizeof(float)), 0)
          << "frame " << frame;
    }
  }
}

}  // namespace
}  // namespace co_up
