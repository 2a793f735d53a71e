// Zero-copy boundaries (ExecutorOptions::share_boundaries, co_up_io_memory of ABI 1.3): in switch
// mode a spread split layer's parts write straight into their channel slices of the Concat's
// output and every boundary between cpu-xnnpack sub-graphs is read where it was written, so no
// transfer happens but the network input's; the output stays the single-processor output bit
// for bit. And the backend half of it: a convolution compiled to write into a channel slice of
// runtime memory writes exactly there.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/placement.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "graph/builder.h"
#include "graph/passes.h"
#include "tests/core/test_support.h"

namespace co_up {
namespace {

using testing::build_plugins;
using testing::have_xnnpack;
using testing::host_platform;

struct RunResultSummary {
  std::map<uint64_t, std::vector<float>> outputs;
  uint64_t transfers = 0;        // transfer events (copies or binds) in the profile
  uint64_t input_transfers = 0;  // of those, the network input's
  std::map<std::string, std::string> in_place;  // receiver tensor -> ReceiverInfo::in_place
};

RunResultSummary run_order(const graph::Graph& g, const std::string& order, Mode mode, bool share) {
  Executor executor = testing::profiled_executor(g, order, mode, share);
  RunRequest request;
  request.frames = 3;
  request.input_sets = {seeded_inputs(g, 11), seeded_inputs(g, 12)};
  RunResultSummary r;
  std::mutex mutex;
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
    std::lock_guard lock(mutex);
    r.outputs[frame].assign(values.begin(), values.end());
  };
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 3u);
  // Sub-graphs that read the network input (both parts of a split first layer do) bind it.
  std::vector<bool> reads_input;
  for (const SubGraph& sg : executor.partition().subgraphs()) {
    const auto& in = sg.inputs;
    reads_input.push_back(in.size() == 1 && in[0] == g.inputs().at(0));
  }
  for (const profiler::ReceiverInfo& info : result.profile.receivers) r.in_place[info.tensor] = info.in_place;
  for (const profiler::Event& e : result.profile.events) {
    if (e.kind != profiler::EventKind::kTransfer) continue;
    ++r.transfers;
    if (reads_input.at(e.subgraph)) ++r.input_transfers;
  }
  return r;
}

// GoogLeNet at 64x64, units per branch, conv1 (unit 0), conv2/3x3 (4) and inception_3a/3x3 (9)
// in two: each split's second part on L, the Concat units and the rest on B.
graph::Graph split_googlenet() {
  NetworkSpec spec{"googlenet", "branches", 64, 7, ""};
  spec.split = "0:2,2:2,5:2";
  return build_network(spec);
}

std::string spread_order() {
  std::string order(82, 'B');
  for (uint32_t first : {0u, 4u, 9u}) order[first + 1] = 'L';
  return order;
}

TEST(SharedBoundaries, SpreadSplitCopiesNothingButTheInputInSwitchMode) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  const graph::Graph g = split_googlenet();
  const RunResultSummary shared = run_order(g, spread_order(), Mode::kSwitch, true);
  // One bind of the network input per frame by each of conv1's two parts; a copy at any other
  // boundary (a part's output, the Concat's inputs, the receiving sub-graph's bind) adds events.
  EXPECT_EQ(shared.input_transfers, 2u * 3u);
  EXPECT_EQ(shared.transfers, shared.input_transfers);
  // Each part writes its slice of the Concat's output (the Concat unit then copies nothing), and
  // the Concat's output is read where it lies.
  for (const char* layer : {"conv2/3x3", "inception_3a/3x3"}) {
    EXPECT_EQ(shared.in_place.at(std::string(layer) + "#2"), "slice") << layer;
  }
  // conv1's parts pool their own channels (graph/pool_through_concat.h): the pooled part is read
  // where it lies.
  EXPECT_EQ(shared.in_place.at("pool1/3x3_s2#2"), "shared");
  EXPECT_EQ(shared.in_place.at("conv2/3x3_reduce"), "shared");
  // The same mapping with copies has them: the count above can see one.
  const RunResultSummary copied = run_order(g, spread_order(), Mode::kSwitch, false);
  EXPECT_GT(copied.transfers, copied.input_transfers + 3 * 6);
}

TEST(SharedBoundaries, SharedAndCopiedRunsEqualOneProcessorBitForBit) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  const graph::Graph g = split_googlenet();
  const RunResultSummary reference = run_order(g, std::string(82, 'B'), Mode::kSwitch, false);
  ASSERT_EQ(reference.outputs.size(), 3u);
  // The spread split, its mirror (parts on L and B, the Concat on L), and every unit alternating
  // (same-processor and cross-processor boundaries, inception Concats gathering from both).
  std::string mirror = spread_order(), alternating(82, 'B');
  for (char& c : mirror) c = c == 'B' ? 'L' : 'B';
  for (size_t u = 0; u < alternating.size(); u += 2) alternating[u] = 'L';
  for (const std::string& order : {spread_order(), mirror, alternating}) {
    for (Mode mode : {Mode::kSwitch, Mode::kPipeline}) {
      for (bool share : {true, false}) {
        const RunResultSummary r = run_order(g, order, mode, share);
        ASSERT_EQ(r.outputs.size(), reference.outputs.size());
        for (const auto& [frame, values] : reference.outputs) {
          EXPECT_TRUE(r.outputs.at(frame) == values)
              << order << " " << mode_name(mode) << (share ? " shared" : " copied") << ": frame " << frame
              << " differs from the single-processor output";
        }
      }
    }
  }
}

#ifdef CO_UP_DECLINING_IO_MEMORY_DIR
TEST(SharedBoundaries, ABackendDecliningRuntimeMemoryGetsCopiesInstead) {
  // cpu-xnnpack whose compiled_create answers UNSUPPORTED to any io_memory (the ABI lets it):
  // the run copies its boundaries instead, with no error, and computes the same output.
  const graph::Graph g = split_googlenet();
  const RunResultSummary reference = run_order(g, std::string(82, 'B'), Mode::kSwitch, false);
  ExecutorOptions options;
  options.mode = Mode::kSwitch;
  const PluginRegistry declining = PluginRegistry::load_directory(CO_UP_DECLINING_IO_MEMORY_DIR);
  ASSERT_NE(declining.find("cpu-xnnpack"), nullptr) << declining.summary();
  Executor executor(g, Partition::create(g, spread_order()), host_platform(), declining, options);
  RunRequest request;
  request.frames = 3;
  request.input_sets = {seeded_inputs(g, 11), seeded_inputs(g, 12)};
  std::map<uint64_t, std::vector<float>> outputs;
  std::mutex mutex;
  request.on_output = [&](uint64_t frame, uint32_t, std::span<const float> values) {
    std::lock_guard lock(mutex);
    outputs[frame].assign(values.begin(), values.end());
  };
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 3u);
  for (const profiler::ReceiverInfo& info : result.profile.receivers) EXPECT_EQ(info.in_place, "") << info.tensor;
  EXPECT_EQ(outputs, reference.outputs);
}
#endif

// x [1,8,6,6] -> Conv 16 -> y, one sub-graph; y described NHWC (a boundary between NHWC backends).
TEST(SharedBoundaries, ConvolutionWritesIntoItsChannelSliceOfRuntimeMemory) {
  if (!have_xnnpack()) GTEST_SKIP() << "cpu-xnnpack is not built here (no libxnnpack-dev)";
  graph::SeededWeights weights(5);
  graph::GraphBuilder b("slice", weights);
  const graph::TensorId x = b.input("data", {1, 8, 6, 6});
  b.begin_layer("conv");
  const graph::TensorId y = b.relu(b.conv(x, "conv", graph::ConvParams::square(16, 3, 1, 1)), "relu");
  b.output(y);
  graph::Graph g = b.finish();
  graph::optimize_for_inference(g);
  const Partition partition = Partition::create(g, "B");
  const Placement placement = Placement::create(g, "B", host_platform(), build_plugins());
  const std::shared_ptr<Device> device = placement.processors().at(0).device;
  ASSERT_NE(device->plugin().external_io() & CO_UP_EXTERNAL_IO_CHANNEL_SLICE, 0u);
  const graph::TensorId out = g.outputs().at(0);
  const SubGraphDesc desc(g, partition.subgraphs().at(0), {out});
  const std::vector<float> input = seeded_inputs(g, 3).at(0);
  constexpr int64_t kPixels = 36, kChannels = 16, kStride = 40, kOffset = 8;

  CompiledSubGraph dense(device, desc.get(), "dense");
  ASSERT_TRUE(dense.bind_input(0, input.data()));
  dense.run(nullptr);
  std::vector<float> expected(kPixels * kChannels);
  std::memcpy(expected.data(), dense.map(CO_UP_IO_OUTPUT, 0), expected.size() * sizeof(float));
  dense.unmap(CO_UP_IO_OUTPUT, 0);

  constexpr float kUntouched = -12345.f;
  alignas(64) static float memory[kPixels * kStride];
  std::fill(std::begin(memory), std::end(memory), kUntouched);
  co_up_io_memory slice{};
  slice.struct_size = sizeof(slice);
  slice.direction = CO_UP_IO_OUTPUT;
  slice.index = 0;
  slice.host_ptr = memory;
  slice.channel_offset = kOffset;
  slice.pixel_stride = kStride;
  co_up_subgraph_desc with_slice = desc.get();
  with_slice.io_memory = &slice;
  with_slice.io_memory_count = 1;
  CompiledSubGraph sliced(device, with_slice, "sliced");
  ASSERT_TRUE(sliced.bind_input(0, input.data()));
  sliced.run(nullptr);
  for (int64_t p = 0; p < kPixels; ++p) {
    for (int64_t c = 0; c < kStride; ++c) {
      const float got = memory[p * kStride + c];
      if (c >= kOffset && c < kOffset + kChannels) {
        ASSERT_EQ(got, expected[p * kChannels + c - kOffset]) << "pixel " << p << " channel " << c;
      } else {
        ASSERT_EQ(got, kUntouched) << "pixel " << p << " channel " << c << " outside the slice was written";
      }
    }
  }

  // Its output lives in io_memory: a dense map would read across the neighbouring channels.
  bool map_refused = false;
  try {
    sliced.map(CO_UP_IO_OUTPUT, 0);
  } catch (const RuntimeError& e) {
    map_refused = std::string(e.what()).find("lives in io_memory") != std::string::npos;
  }
  EXPECT_TRUE(map_refused);

  // Entries that do not describe memory the tensor fits in are refused, each with its reason.
  auto refused = [&](std::vector<co_up_io_memory> entries) -> std::string {
    co_up_subgraph_desc bad = desc.get();
    bad.io_memory = entries.data();
    bad.io_memory_count = static_cast<uint32_t>(entries.size());
    try {
      CompiledSubGraph compiled(device, bad, "bad");
    } catch (const UnsupportedByPlugin& e) {
      return std::string("unsupported, not invalid: ") + e.what();
    } catch (const RuntimeError& e) {
      return e.what();
    }
    return "accepted";
  };
  co_up_io_memory wrong = slice;
  wrong.channel_offset = kStride - kChannels + 1;  // the slice would end past the pixel
  EXPECT_NE(refused({wrong}).find("exceed pixel_stride"), std::string::npos);
  wrong = slice;
  wrong.channel_offset = 0;
  wrong.pixel_stride = kChannels - 1;  // narrower than the tensor's channels
  EXPECT_NE(refused({wrong}).find("exceed pixel_stride"), std::string::npos);
  wrong = slice;
  wrong.pixel_stride = 0;  // dense, yet an offset
  EXPECT_NE(refused({wrong}).find("channel_offset must be 0"), std::string::npos);
  wrong = slice;
  wrong.host_ptr = nullptr;
  EXPECT_NE(refused({wrong}).find("host_ptr is NULL"), std::string::npos);
  EXPECT_NE(refused({slice, slice}).find("one entry per port"), std::string::npos);
  EXPECT_EQ(refused({slice}), "accepted");
}

}  // namespace
}  // namespace co_up
