// Executor behaviour that matters: every mapping computes the same bits as one processor, in both
// modes; frames are never lost, duplicated or reordered; skip edges never stall the first stage;
// non-contiguous mappings (BLB, BLBLB) neither deadlock nor share a core.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/affinity.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "graph/zoo/zoo.h"
#include "tests/core/test_spin.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::host_platform;

// Image size for zoo tests: every layer stays, the work shrinks (keeps sanitizer runs short).
constexpr int64_t kSmallImage = 64;

struct Outputs {
  std::map<uint64_t, std::vector<float>> by_frame;
  std::vector<uint64_t> arrival;  // frame numbers in the order they were delivered
};

Outputs run_graph(const graph::Graph& g, const std::string& order, ExecutionMode mode,
                  uint64_t frames, const std::vector<std::vector<std::vector<float>>>& inputs,
                  uint32_t buffers = 2, RunResult* result_out = nullptr) {
  const Platform platform = host_platform();
  ExecutorOptions options;
  options.mode = mode;
  options.receiver_buffers = buffers;
  options.profile_level = 1;
  options.spin_wait_in_frame_us = testing::kSpinWaitInFrameUs;
  Executor executor(g, Partition::create(g, order), platform, build_plugins(), options);
  Outputs outputs;
  std::mutex mutex;
  RunRequest request;
  request.frames = frames;
  request.input_sets = inputs;
  request.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
    ASSERT_EQ(output, 0u);
    std::lock_guard lock(mutex);
    outputs.arrival.push_back(frame);
    outputs.by_frame[frame].assign(values.begin(), values.end());
  };
  RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, frames);
  EXPECT_FALSE(result.profile.interrupted);
  if (result_out != nullptr) *result_out = std::move(result);
  return outputs;
}

std::vector<std::vector<std::vector<float>>> input_sets(const graph::Graph& g, int count) {
  std::vector<std::vector<std::vector<float>>> sets;
  for (int i = 0; i < count; ++i) sets.push_back(seeded_inputs(g, 100 + static_cast<uint64_t>(i)));
  return sets;
}

void expect_in_order(const Outputs& o, uint64_t frames) {
  ASSERT_EQ(o.arrival.size(), frames);
  for (uint64_t f = 0; f < frames; ++f) ASSERT_EQ(o.arrival[f], f) << "frame delivered out of order";
}

void expect_bit_equal(const Outputs& reference, const Outputs& other, const std::string& what) {
  ASSERT_EQ(reference.by_frame.size(), other.by_frame.size()) << what;
  for (const auto& [frame, values] : reference.by_frame) {
    const std::vector<float>& got = other.by_frame.at(frame);
    ASSERT_EQ(values.size(), got.size()) << what;
    ASSERT_EQ(std::memcmp(values.data(), got.data(), values.size() * sizeof(float)), 0)
        << what << ": frame " << frame << " differs from the single-processor run";
  }
}

// A mapping of `layers` letters: random B/L with a fixed seed, so that runs are reproducible.
std::string random_order(uint32_t layers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string order;
  for (uint32_t i = 0; i < layers; ++i) order += (rng() & 1) ? 'L' : 'B';
  return order;
}

std::vector<std::string> mappings_for(uint32_t layers) {
  const uint32_t half = layers / 2;
  std::string blb(layers, 'B');
  for (uint32_t i = layers / 3; i < 2 * layers / 3; ++i) blb[i] = 'L';
  std::string blblb;
  for (uint32_t i = 0; i < layers; ++i) blblb += ((i * 5 / layers) % 2) ? 'L' : 'B';
  return {
      std::string(layers, 'L'),                                          // other single processor
      std::string(half, 'B') + std::string(layers - half, 'L'),          // 2 stages
      std::string(half, 'L') + std::string(layers - half, 'B'),          // 2 stages, reversed
      blb,                                                               // BLB
      blblb,                                                             // BLBLB
  };
}

class ZooMappings : public ::testing::TestWithParam<const char*> {};

// Outputs of every mapping and both modes equal the all-B output bit for bit, frame by frame.
TEST_P(ZooMappings, EveryMappingMatchesSingleProcessorBitForBit) {
  const graph::Graph g = build_network({GetParam(), "layers", kSmallImage, 7, ""});
  const auto inputs = input_sets(g, 3);
  const uint64_t frames = 4;
  const Outputs reference =
      run_graph(g, std::string(g.layer_count(), 'B'), ExecutionMode::kSwitch, frames, inputs);
  expect_in_order(reference, frames);
  for (const std::string& order : mappings_for(g.layer_count())) {
    for (ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
      const std::string what = std::string(GetParam()) + " " + order + " " + mode_name(mode);
      const Outputs got = run_graph(g, order, mode, frames, inputs);
      expect_in_order(got, frames);
      expect_bit_equal(reference, got, what);
    }
  }
}

// --units=ops cuts inception branches and residual shortcuts, so one sender feeds receivers in
// several sub-graphs; results must not change.
TEST_P(ZooMappings, OpUnitsSplitsAcrossBranchesMatchBitForBit) {
  const graph::Graph layers = build_network({GetParam(), "layers", kSmallImage, 7, ""});
  const graph::Graph ops = build_network({GetParam(), "ops", kSmallImage, 7, ""});
  const auto inputs = input_sets(layers, 2);
  const uint64_t frames = 3;
  const Outputs reference = run_graph(layers, std::string(layers.layer_count(), 'B'),
                                      ExecutionMode::kSwitch, frames, inputs);
  for (uint32_t seed : {1u, 2u}) {
    const std::string order = random_order(ops.layer_count(), seed);
    const Partition partition = Partition::create(ops, order);
    for (ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
      const Outputs got = run_graph(ops, order, mode, frames, inputs);
      expect_in_order(got, frames);
      expect_bit_equal(reference, got, std::string(GetParam()) + " ops " + order);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooMappings,
                         ::testing::Values("alexnet", "googlenet", "mobilenet", "resnet50",
                                           "squeezenet"));

// Pools moved through channel Concats (graph/pool_through_concat.h) with --split and
// --units=branches: split parts and inception branches, spread over B and L, pool on their own
// processor; the output equals the graph without the move (all on B) bit for bit.
TEST(ExecutorTest, PoolsMovedThroughConcatsMatchTheGraphWithoutThemBitForBit) {
  NetworkSpec spec{"googlenet", "branches", kSmallImage, 7, ""};
  spec.split = "0:2,2:2";
  const graph::Graph moved = build_network(spec);
  graph::Graph unmoved = [&] {
    graph::SeededWeights weights(spec.seed);
    graph::ZooOptions options;
    options.image_size = kSmallImage;
    return graph::build_zoo_graph("googlenet", weights, options);
  }();
  graph::optimize_for_inference(unmoved);
  graph::assign_branch_units(unmoved);
  graph::split_output_channels(unmoved, 2, 2);
  graph::split_output_channels(unmoved, 0, 2);
  graph::assign_branch_units(unmoved);
  ASSERT_EQ(moved.layer_count(), unmoved.layer_count());
  const std::vector<graph::LayerSummary> units = graph::summarize_layers(moved);
  ASSERT_EQ(units[0].ops, "Conv(relu)+MaxPool");  // the move happened: conv1's part pools its channels
  ASSERT_EQ(graph::summarize_layers(unmoved)[0].ops, "Conv(relu)");
  const auto inputs = input_sets(moved, 2);
  const uint64_t frames = 2;
  const Outputs reference =
      run_graph(unmoved, std::string(unmoved.layer_count(), 'B'), ExecutionMode::kSwitch, frames, inputs);
  // All on B; every split part and every unit alternating B/L (branches and parts spread); and
  // the other way round.
  std::string alternating, reversed;
  for (uint32_t u = 0; u < moved.layer_count(); ++u) {
    alternating += u % 2 == 0 ? 'B' : 'L';
    reversed += u % 2 == 0 ? 'L' : 'B';
  }
  for (const std::string& order : {std::string(moved.layer_count(), 'B'), alternating, reversed}) {
    for (ExecutionMode mode : {ExecutionMode::kSwitch, ExecutionMode::kPipeline}) {
      const Outputs got = run_graph(moved, order, mode, frames, inputs);
      expect_bit_equal(reference, got, "googlenet pools moved " + order + " " + mode_name(mode));
    }
  }
}

// Some op-level splits of branchy networks must really fan one tensor out to several sub-graphs.
TEST(ExecutorTest, OpUnitsProduceMultiReceiverEdges) {
  for (const char* name : {"googlenet", "resnet50", "squeezenet"}) {
    const graph::Graph ops = build_network({name, "ops", kSmallImage, 7, ""});
    const Partition p = Partition::create(ops, random_order(ops.layer_count(), 1));
    size_t fan_out = 0;
    for (const Edge& e : p.edges()) fan_out = std::max(fan_out, e.destinations.size());
    EXPECT_GE(fan_out, 2u) << name;
  }
}

// A three-stage chain with a skip edge from the first stage to the last (paper Fig. 8).
graph::Graph skip_graph() {
  graph::SeededWeights weights(3);
  graph::GraphBuilder b("skip", weights);
  graph::TensorId x = b.input("data", {1, 4, 8, 8});
  b.begin_layer("stage0");
  const graph::TensorId a = b.conv(x, "conv_a", graph::ConvParams::square(8, 3, 1, 1));
  b.begin_layer("stage1");
  const graph::TensorId c = b.relu(b.conv(a, "conv_b", graph::ConvParams::square(8, 3, 1, 1)), "relu_b");
  b.begin_layer("stage2");
  const graph::TensorId y = b.softmax(b.flatten(b.add(a, c, "add"), "flat"), "prob");
  b.output(y);
  graph::Graph g = b.finish();
  graph::optimize_for_inference(g);
  return g;
}

TEST(ExecutorTest, ThousandFramesThroughSkipEdgePipelineArriveInOrderWithoutStalls) {
  const graph::Graph g = skip_graph();
  const auto inputs = input_sets(g, 7);  // distinct inputs, so a mixed-up frame shows in values
  const uint64_t frames = 1000;
  const Outputs reference = run_graph(g, "BBB", ExecutionMode::kSwitch, 7, inputs);
  RunResult result;
  const Outputs got = run_graph(g, "BLB", ExecutionMode::kPipeline, frames, inputs, 2, &result);
  expect_in_order(got, frames);
  for (uint64_t f = 0; f < frames; ++f) {
    const std::vector<float>& expected = reference.by_frame.at(f % 7);
    const std::vector<float>& actual = got.by_frame.at(f);
    ASSERT_EQ(std::memcmp(expected.data(), actual.data(), expected.size() * sizeof(float)), 0)
        << "frame " << f << " carries another frame's data";
  }
  // Edges: stage0 -> stage1 (adjacent) and stage0 -> stage2 (skip).
  bool saw_skip = false;
  for (const profiler::ReceiverInfo& r : result.profile.receivers) {
    EXPECT_EQ(r.transfers, frames) << r.tensor;
    if (r.source == 0 && r.destination == 2) {
      saw_skip = true;
      EXPECT_EQ(r.capacity, 4u) << "skip edge needs the depth of the path it skips";
      EXPECT_EQ(r.full_stalls, 0u) << "the first stage stalled on the skip edge";
    }
  }
  EXPECT_TRUE(saw_skip);
}

TEST(ExecutorTest, NonContiguousMappingsDoNotDeadlockWithMinimalBuffers) {
  const graph::Graph g = build_network({"squeezenet", "layers", 32, 7, ""});
  const auto inputs = input_sets(g, 2);
  const Outputs reference = run_graph(g, std::string(10, 'B'), ExecutionMode::kSwitch, 2, inputs);
  for (const char* order : {"BLBLBLBLBL", "BBLLBBLLBB", "LBBBBBBBBL"}) {
    for (uint32_t buffers : {1u, 2u, 3u}) {
      for (ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        const Outputs got = run_graph(g, order, mode, 20, inputs, buffers);
        expect_in_order(got, 20);
        EXPECT_EQ(0, std::memcmp(reference.by_frame.at(0).data(), got.by_frame.at(18).data(),
                                 reference.by_frame.at(0).size() * sizeof(float)))
            << order;
      }
    }
  }
}

TEST(ExecutorTest, SwitchModeKeepsOneFrameInFlight) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  RunResult result;
  run_graph(g, "BBBBLLLL", ExecutionMode::kSwitch, 6, input_sets(g, 1), 2, &result);
  const auto& p = result.profile;
  // One start and one end per frame, or the loop below checks nothing.
  ASSERT_EQ(p.frame_start_ns.size(), 6u);
  ASSERT_EQ(p.frame_end_ns.size(), 6u);
  for (size_t f = 1; f < p.frame_start_ns.size(); ++f) {
    EXPECT_GE(p.frame_start_ns[f], p.frame_end_ns[f - 1]) << "frame " << f << " overlapped";
  }
}

// Makes every sub-graph of one processor take at least `pause` (its thread sleeps at the start).
class SlowProcessor final : public LayerObserver {
 public:
  SlowProcessor(char processor, std::chrono::milliseconds pause) : processor_(processor), pause_(pause) {}
  void on_subgraph_begin(char processor, uint32_t, uint64_t) override {
    if (processor == processor_) std::this_thread::sleep_for(pause_);
  }

 private:
  char processor_;
  std::chrono::milliseconds pause_;
};

// Switch mode: B runs a frame's first layers, then waits for L's part, which takes far longer
// than spin_wait_us. Spinning through that wait (L's thread owns its core) B never sleeps there;
// with the in-frame spin off it sleeps in every frame. The outputs are the same bits either way.
TEST(ExecutorTest, CpuProcessorSpinsThroughAWaitInsideAFrame) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  const auto inputs = input_sets(g, 2);
  constexpr uint64_t kFrames = 4;
  // L's part lasts 5x the spin; the spin is long against a hand-off between the two threads
  // (microseconds), even on a loaded host.
  SlowProcessor slow_l('L', std::chrono::milliseconds(100));
  const auto run_with = [&](uint32_t spin_wait_in_frame_us, RunResult& result) {
    ExecutorOptions options;
    options.mode = ExecutionMode::kSwitch;
    options.spin_wait_us = 20000;
    options.spin_wait_in_frame_us = spin_wait_in_frame_us;
    options.observers = {&slow_l};
    Executor executor(g, Partition::create(g, "BBBBLLLL"), host_platform(), build_plugins(), options);
    Outputs outputs;
    std::mutex mutex;
    RunRequest request;
    request.frames = kFrames;
    request.input_sets = inputs;
    request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
      std::lock_guard lock(mutex);
      outputs.by_frame[frame].assign(values.begin(), values.end());
    };
    result = executor.run(request);
    EXPECT_EQ(result.profile.frames_completed, kFrames);
    return outputs;
  };
  const auto sleeps_of = [](const RunResult& r, char letter) {
    for (const auto& p : r.profile.processors) {
      if (p.letter == letter) return p.in_frame_sleeps;
    }
    ADD_FAILURE() << "no processor " << letter << " in the profile";
    return uint64_t{0};
  };
  RunResult spinning, sleeping;
  const Outputs spun = run_with(60'000'000, spinning);
  const Outputs slept = run_with(0, sleeping);
  EXPECT_EQ(sleeps_of(spinning, 'B'), 0u) << "B slept while L ran the frame's rest";
  // B waits for L in every frame; after the last it owes nothing (a sleep then is not counted).
  EXPECT_GE(sleeps_of(sleeping, 'B'), kFrames - 1) << "without the in-frame spin B sleeps in every frame";
  expect_bit_equal(slept, spun, "in-frame spin on vs off");
}

TEST(ExecutorTest, PipelineModeOverlapsFrames) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  RunResult result;
  run_graph(g, "BBBBLLLL", ExecutionMode::kPipeline, 12, input_sets(g, 1), 2, &result);
  const auto& p = result.profile;
  ASSERT_EQ(p.frame_start_ns.size(), 12u);
  ASSERT_EQ(p.frame_end_ns.size(), 12u);
  size_t overlapped = 0;
  for (size_t f = 1; f < p.frame_start_ns.size(); ++f) {
    if (p.frame_start_ns[f] < p.frame_end_ns[f - 1]) ++overlapped;
  }
  EXPECT_GT(overlapped, 0u) << "pipeline mode never had two frames in flight";
}

TEST(ExecutorTest, ProfileLevelTwoTimesEveryLayerOfEveryFrame) {
  const graph::Graph g = build_network({"mobilenet", "layers", kSmallImage, 7, ""});
  const Platform platform = host_platform();
  ExecutorOptions options;
  options.profile_level = 2;
  Executor executor(g, Partition::create(g, "BBBBBBBLLLLLLL"), platform, build_plugins(), options);
  RunRequest request;
  request.frames = 3;
  request.input_sets = {seeded_inputs(g, 1)};
  const RunResult result = executor.run(request);
  std::map<uint32_t, int> layer_events;
  int sends = 0;
  int receives = 0;
  for (const profiler::Event& e : result.profile.events) {
    if (e.kind == profiler::EventKind::kLayer) ++layer_events[e.layer];
    if (e.kind == profiler::EventKind::kTransfer) {
      (e.peer == e.subgraph ? receives : sends) += 1;
      EXPECT_GT(e.bytes, 0u);
      EXPECT_GE(e.end_ns, e.begin_ns);
    }
  }
  for (uint32_t l = 0; l < g.layer_count(); ++l) EXPECT_EQ(layer_events[l], 3) << "layer " << l;
  EXPECT_EQ(sends, 3);     // one boundary, three frames
  EXPECT_EQ(receives, 6);  // the graph input into stage 0 and the boundary into stage 1
}

TEST(ExecutorTest, StopRequestEndsRunEarlyWithConsistentProfile) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  const Platform platform = host_platform();
  ExecutorOptions options;
  Executor executor(g, Partition::create(g, "BBBBLLLL"), platform, build_plugins(), options);
  RunRequest request;
  request.frames = 1000000;
  request.input_sets = {seeded_inputs(g, 1)};
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float>) {
    if (frame == 5) executor.request_stop();
  };
  const RunResult result = executor.run(request);
  EXPECT_TRUE(result.profile.interrupted);
  EXPECT_GE(result.profile.frames_completed, 6u);
  EXPECT_LT(result.profile.frames_completed, 1000000u);
  EXPECT_EQ(result.profile.frame_end_ns.size(), result.profile.frames_completed);
  // The executor can run again after an interrupted run.
  request.frames = 3;
  request.on_output = nullptr;
  EXPECT_EQ(executor.run(request).profile.frames_completed, 3u);
}

// A stop requested before run() (a signal during setup) ends the run at once, and the profile says
// so: interrupted, 0 of the frames requested (the command line then exits 128 + signal).
TEST(ExecutorTest, StopBeforeRunIsAnInterruptedRunOfNoFrames) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  Executor executor(g, Partition::create(g, "BBBBLLLL"), host_platform(), build_plugins(), {});
  RunRequest request;
  request.frames = 1000;
  request.input_sets = {seeded_inputs(g, 1)};
  executor.request_stop();
  const RunResult result = executor.run(request);
  EXPECT_TRUE(result.profile.interrupted);
  EXPECT_EQ(result.profile.frames_completed, 0u);
  EXPECT_EQ(result.profile.frames_requested, 1000u);
  // The request is used up: the next run runs.
  request.frames = 2;
  const RunResult again = executor.run(request);
  EXPECT_FALSE(again.profile.interrupted);
  EXPECT_EQ(again.profile.frames_completed, 2u);
}

// Between two backends that hold activations channels-last (cpu-xnnpack on B and L) 4-D edges
// travel in NHWC, with the same results bit for bit as NCHW edges; an edge touching a backend
// without NHWC (cpu-reference) stays NCHW. The profile's receivers say which.
TEST(ExecutorTest, EdgesBetweenNhwcBackendsTravelInNhwc) {
  if (!testing::have_xnnpack()) {
    GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev), so no "
                    "backend holds NHWC";
  }
  const graph::Graph g = skip_graph();  // edges: stage0 -> stage1, stage2; stage1 -> stage2
  const auto inputs = input_sets(g, 2);
  const Outputs single = run_graph(g, "BBB", ExecutionMode::kPipeline, 4, inputs);
  auto run = [&](const Platform& platform, bool nhwc, Outputs* outputs) {
    ExecutorOptions options;
    options.profile_level = 1;
    PlacementOptions placement;
    placement.nhwc_boundaries = nhwc;
    Executor executor(Placement::create(g, "BLB", platform, build_plugins(), placement), options);
    RunRequest request;
    request.frames = 4;
    request.input_sets = inputs;
    std::mutex mutex;
    request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
      std::lock_guard lock(mutex);
      outputs->arrival.push_back(frame);
      outputs->by_frame[frame].assign(values.begin(), values.end());
    };
    std::vector<std::string> layouts;
    for (const auto& r : executor.run(request).profile.receivers) layouts.push_back(r.layout);
    return layouts;
  };
  const std::vector<std::string> three_nhwc(3, "NHWC"), three_nchw(3, "NCHW");
  Outputs negotiated, plain, mixed;
  EXPECT_EQ(run(host_platform(), true, &negotiated), three_nhwc);
  expect_bit_equal(single, negotiated, "NHWC edges");
  EXPECT_EQ(run(host_platform(), false, &plain), three_nchw);
  expect_bit_equal(single, plain, "NCHW edges");
  Platform reference_l = host_platform();
  reference_l.find('L')->backends = {"cpu-reference"};
  EXPECT_EQ(run(reference_l, true, &mixed), three_nchw);
  // cpu-reference on L sums in another order than cpu-xnnpack: not bit for bit, but every frame,
  // in order, within float rounding of the all-B output (relative to each frame's output range).
  expect_in_order(mixed, 4);
  ASSERT_EQ(mixed.by_frame.size(), single.by_frame.size());
  for (const auto& [frame, want] : single.by_frame) {
    const std::vector<float>& got = mixed.by_frame.at(frame);
    ASSERT_EQ(got.size(), want.size()) << "frame " << frame;
    const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
    const double range = std::max(1e-6, static_cast<double>(*hi - *lo));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5 * range) << "frame " << frame << " value " << i;
    }
  }
}

TEST(ExecutorTest, UnknownLetterAndMissingPluginAreInputErrors) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  Platform platform = host_platform();
  // The build ships an N plugin (npu-int8); name one that no plugin provides.
  platform.find('N')->backends = {"rknn", "no-such-npu"};
  try {
    Executor(g, Partition::create(g, "BBBBXXXX"), platform, build_plugins(), {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'X'"), std::string::npos) << e.what();
  }
  try {
    Executor(g, Partition::create(g, "BBBBNNNN"), platform, build_plugins(), {});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-npu"), std::string::npos) << e.what();
  }
}

// --split: a layer's op over slices of its output channels, the slices on different processors,
// computes what the whole op computes (to rounding: a slice may pick another kernel than the
// whole op), in both modes; the split graph keeps every MAC.
TEST(ExecutorTest, SplitLayersAcrossProcessorsMatchTheWholeLayer) {
  const graph::Graph whole = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  NetworkSpec spec{"alexnet", "layers", kSmallImage, 7, ""};
  spec.split = "5:3,2:2";  // fc6 in three, conv3 in two
  const graph::Graph split = build_network(spec);
  ASSERT_EQ(split.layer_count(), whole.layer_count() + 3);
  const auto summary = graph::summarize_layers(split);
  EXPECT_EQ(summary[2].name, "conv3#1");
  EXPECT_EQ(summary[3].name, "conv3#2");
  EXPECT_EQ(summary[6].name, "fc6#1");
  EXPECT_EQ(summary[8].name, "fc6#3");
  EXPECT_EQ(summary[8].ops, "FullyConnected(relu)+Concat");
  int64_t macs_whole = 0, macs_split = 0;
  for (const auto& l : graph::summarize_layers(whole)) macs_whole += l.macs;
  for (const auto& l : summary) macs_split += l.macs;
  EXPECT_EQ(macs_split, macs_whole);

  const auto inputs = input_sets(whole, 2);
  const uint64_t frames = 3;
  const Outputs reference =
      run_graph(whole, std::string(whole.layer_count(), 'B'), ExecutionMode::kSwitch, frames, inputs);
  // Slices of one layer on B and L (conv3#1 B, conv3#2 L; fc6 B, L, B), and the Concat's inputs
  // arriving from both.
  for (const std::string order : {"BBBLBBBLBBB", "LLBLBBLBLLL"}) {
    for (ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
      const Outputs got = run_graph(split, order, mode, frames, inputs);
      expect_in_order(got, frames);
      for (const auto& [frame, values] : reference.by_frame) {
        const std::vector<float>& v = got.by_frame.at(frame);
        ASSERT_EQ(v.size(), values.size());
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_NEAR(v[i], values[i], 1e-5f) << order << " " << mode_name(mode) << " frame " << frame << " output " << i;
        }
      }
    }
  }
}

TEST(ExecutorTest, WrongInputSizeIsAnInputError) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  Executor executor(g, Partition::create(g, "BBBBBBBB"), host_platform(), build_plugins(), {});
  RunRequest request;
  request.input_sets = {{std::vector<float>(10)}};
  EXPECT_THROW(executor.run(request), InputError);
}

}  // namespace
}  // namespace co_up

namespace co_up {
namespace {

// The zoo at its real input sizes, two mappings each (a few seconds in a Release build; skipped
// under sanitizers, where the small-image tests above cover the same code paths).
TEST(ExecutorFullSizeTest, ZooAtFullResolutionMatchesAcrossMappings) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "full-size networks are too slow under sanitizers";
#endif
  for (const char* name : {"alexnet", "googlenet", "mobilenet", "resnet50", "squeezenet"}) {
    const graph::Graph g = build_network({name, "layers", 0, 7, ""});
    const auto inputs = input_sets(g, 1);
    const uint32_t layers = g.layer_count();
    const Outputs reference =
        run_graph(g, std::string(layers, 'B'), ExecutionMode::kSwitch, 2, inputs);
    const std::string split = std::string(layers / 2, 'B') + std::string(layers - layers / 2, 'L');
    expect_bit_equal(reference, run_graph(g, split, ExecutionMode::kPipeline, 2, inputs),
                     std::string(name) + " " + split);
  }
}

}  // namespace
}  // namespace co_up

namespace co_up {
namespace {

// Host threads are pinned to their processor's cores: the output callback runs on the thread of
// the sub-graph that produced the output.
TEST(ExecutorTest, HostThreadsRunOnTheirClusterCores) {
  const graph::Graph g = build_network({"alexnet", "layers", kSmallImage, 7, ""});
  const Platform platform = host_platform();
  if (platform.find('L') == nullptr) GTEST_SKIP() << "needs two CPU clusters (2+ cores)";
  for (const char* order : {"BBBBLLLL", "LLLLBBBB"}) {
    Executor executor(g, Partition::create(g, order), platform, build_plugins(), {});
    RunRequest request;
    request.frames = 2;
    request.input_sets = {seeded_inputs(g, 1)};
    std::vector<int> seen;
    request.on_output = [&](uint64_t, uint32_t, std::span<const float>) {
      seen = current_thread_affinity();
    };
    executor.run(request);
    EXPECT_EQ(seen, platform.find(order[7])->cores) << order;
  }
}

}  // namespace
}  // namespace co_up
