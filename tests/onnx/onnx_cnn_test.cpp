// Modern mobile CNNs from torchvision against PyTorch: MobileNetV3 (squeeze-excite ChannelScale,
// HardSigmoid, HardSwish), EfficientNet-B0 (SiLU), RegNetY (squeeze-excite), DenseNet (Concat of
// many inputs, one-input Concat) and ShuffleNet's channel shuffle, as narrowed fixtures
// (tests/fixtures/make_fixtures.py, make_cnn). Each runs on cpu-reference and on cpu-xnnpack
// alone, with block and op units, under all-B, half B / half L and alternating B,L orders in
// pipeline and switch modes: output within 1e-3 of PyTorch's output range, same argmax. Networks
// still blocked by an op co_up lacks are listed with their exact one-line error, so the list
// stays honest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/fallback.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_exporter.h"
#include "graph/onnx/onnx_importer.h"
#include "graph/passes.h"
#include "tests/core/test_support.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

using onnx_fixtures::expect_matches_pytorch;
using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::orders_for;
using onnx_fixtures::run;

const char* const kRunnable[] = {"op_channel_shuffle",      "op_cnn_edges",
                                 "mobilenet_v3_small_tiny",
                                 "mobilenet_v3_large_tiny", "efficientnet_b0_tiny",
                                 "regnet_y_tiny",           "densenet_tiny"};

class MobileCnn : public ::testing::TestWithParam<std::string> {};

TEST_P(MobileCnn, MatchesPyTorchOnBothCpuBackendsUnderMixedOrdersInBothModes) {
  const std::string backend = GetParam();
  ASSERT_NE(testing::build_plugins().find(backend), nullptr) << backend << " is not built";
  for (const std::string name : kRunnable) {
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    // Block units, and op units (cuts between a squeeze-excite gate and its ChannelScale).
    for (const std::string units : {"layers", "ops"}) {
      const graph::Graph g = load(name, units);
      ASSERT_EQ(g.tensor(g.inputs().at(0)).desc.shape, input.shape) << name;
      for (const std::string& order : orders_for(g.layer_count())) {
        for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
          expect_matches_pytorch(run(g, order, mode, input.data, backend), want,
                                 backend + " " + name + " --units=" + units + " --order=" + order +
                                     (mode == ExecutionMode::kPipeline ? " pipeline" : " switch"));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CpuBackends, MobileCnn, ::testing::Values("cpu-reference", "cpu-xnnpack"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

std::map<std::string, int> op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes()) ++counts[std::string(graph::op_type_name(n.op))];
  return counts;
}

TEST(MobileCnnImport, PatternsBecomeTheCnnOps) {
  // MobileNetV3-Small: 11 blocks, 9 with squeeze-excite (HardSigmoid gate); HardSwish from
  // x * HardSigmoid(x), whose HardSigmoid nodes are gone.
  auto small = op_counts(load("mobilenet_v3_small_tiny"));
  EXPECT_EQ(small["ChannelScale"], 9);
  EXPECT_EQ(small["HardSigmoid"], 9);
  EXPECT_EQ(small["HardSwish"], 19);
  EXPECT_EQ(small["Reshape"], 0);
  // EfficientNet: every SiLU fused (the only Sigmoids left are the squeeze-excite gates).
  auto b0 = op_counts(load("efficientnet_b0_tiny"));
  EXPECT_GT(b0["SiLU"], 0);
  EXPECT_EQ(b0["Sigmoid"], b0["ChannelScale"]);
  EXPECT_GT(b0["ChannelScale"], 0);
  // A Sigmoid read besides its SiLU stays; a HardSigmoid with its own alpha/beta is one; the
  // squeeze-excite gate may come first.
  auto edges = op_counts(load("op_cnn_edges", "ops"));
  EXPECT_EQ(edges["Sigmoid"], 1);
  EXPECT_EQ(edges["SiLU"], 1);
  EXPECT_EQ(edges["HardSigmoid"], 1);
  EXPECT_EQ(edges["ChannelScale"], 1);
  // Channel shuffle: Reshape-Transpose-Reshape is one op.
  auto shuffle = op_counts(load("op_channel_shuffle"));
  EXPECT_EQ(shuffle["ChannelShuffle"], 1);
  EXPECT_EQ(shuffle["Reshape"], 0);
}

TEST(MobileCnnUnits, OneUnitPerInvertedResidualBlock) {
  const graph::Graph g = load("mobilenet_v3_small_tiny");
  std::vector<std::string> names;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) names.push_back(s.name);
  // Stem, blocks features.1 .. features.11 (with or without a skip connection), last conv,
  // classifier.
  for (int b = 1; b <= 11; ++b) {
    const std::string block = "features/features." + std::to_string(b) + "/block";
    EXPECT_EQ(std::count(names.begin(), names.end(), block), 1) << block;
  }
  EXPECT_EQ(names.size(), 1u + 11u + 1u + 2u);
  // EfficientNet's first MBConv of a stage (no skip) is one unit too.
  const graph::Graph b0 = load("efficientnet_b0_tiny");
  int units_of_block = 0;
  for (const graph::LayerSummary& s : graph::summarize_layers(b0)) {
    if (s.name == "features/features.2/features.2.0/block") {
      ++units_of_block;
      EXPECT_EQ(s.ops, "Conv+SiLU+Conv+SiLU+GlobalAveragePool+Conv+SiLU+Conv+Sigmoid+ChannelScale+Conv");
    }
  }
  EXPECT_EQ(units_of_block, 1);
}

// Export writes the CNN forms as ONNX the importer fuses back (ChannelScale as Mul, SiLU as
// Sigmoid + Mul, ChannelShuffle as Reshape-Transpose-Reshape), and the re-imported graph computes
// PyTorch's output.
TEST(MobileCnnExport, RoundTripKeepsTheCnnOpsAndTheOutput) {
  for (const std::string name : {"op_channel_shuffle", "mobilenet_v3_small_tiny", "efficientnet_b0_tiny"}) {
    const graph::Graph g = load(name);
    const std::string bytes = graph::export_onnx_bytes(g, graph::whole_graph_region(g));
    graph::Graph again = graph::import_onnx_bytes(bytes, name + "_exported.onnx", {});
    graph::optimize_for_inference(again);  // as build_network: Relu fused into Conv again
    graph::assign_op_units(again);
    auto ops = op_counts(g), ops_again = op_counts(again);
    ops.erase("Input");
    ops_again.erase("Input");
    EXPECT_EQ(ops_again, ops) << name;
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    expect_matches_pytorch(run(again, std::string(again.layer_count(), 'B'), ExecutionMode::kSwitch,
                               input.data, "cpu-reference"),
                           want, name + " exported and imported again");
  }
}

// Networks that need the rank-N ops as well (ShuffleNetV2's channel split is a Slice of an
// activation; ConvNeXt permutes to NHWC for its LayerNorm and Linear layers): they run on
// cpu-reference, which has both sets, and match PyTorch.
TEST(MobileCnnWithTensorOps, RunOnCpuReference) {
  for (const std::string name : {"shufflenet_v2_tiny", "convnext_tiny_tiny"}) {
    const graph::Graph g = load(name);
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    expect_matches_pytorch(run(g, std::string(g.layer_count(), 'B'), ExecutionMode::kSwitch,
                               input.data, "cpu-reference"),
                           want, name + " on cpu-reference");
  }
}

// A backend without the CNN forms declines them per node, with a reason, in its capability
// query: --npu_fallback moves exactly the layers holding them, and the rest still compiles there.
TEST(MobileCnnDecline, Int8AcceleratorDeclinesTheCnnOpsAndFallbackMovesThoseLayers) {
  if (testing::build_plugins().find("npu-int8") == nullptr) {
    GTEST_SKIP() << "plugin 'npu-int8' is not built or not loadable here";
  }
  const Platform platform = parse_platform(R"({"name": "cnn-board", "processors": [
      {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": "cpu-xnnpack", "cores": [0]},
      {"letter": "L", "name": "LITTLE CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [1]},
      {"letter": "N", "name": "int8 NPU", "kind": "npu", "backend": "npu-int8", "host": "B"}]})",
                                           "test platform");
  const graph::Graph g = load("mobilenet_v3_small_tiny");
  const FallbackPlan plan =
      plan_npu_fallback(g, std::string(g.layer_count(), 'N'), platform, testing::build_plugins(), 'B');
  std::vector<bool> has_cnn_op(g.layer_count(), false);
  for (const graph::Node& n : g.nodes()) {
    if (n.op == graph::OpType::kChannelScale || n.op == graph::OpType::kHardSigmoid ||
        n.op == graph::OpType::kSiLU || n.op == graph::OpType::kChannelShuffle) {
      has_cnn_op[n.layer] = true;
    }
  }
  std::vector<bool> moved(g.layer_count(), false);
  for (const FallbackMove& m : plan.moves) {
    moved[m.layer] = true;
    EXPECT_EQ(m.backend, "npu-int8");
    EXPECT_NE(m.reason.find("op '" + m.op + "' is not implemented by npu-int8"), std::string::npos)
        << m.reason;
  }
  for (uint32_t layer = 0; layer < g.layer_count(); ++layer) {
    EXPECT_EQ(moved[layer], has_cnn_op[layer]) << "layer " << layer;
    EXPECT_EQ(plan.order[layer], has_cnn_op[layer] ? 'B' : 'N') << "layer " << layer;
  }
  // The planned order compiles and runs (int8 layers are not compared with PyTorch).
  ExecutorOptions options;
  Executor executor(g, Partition::create(g, plan.order), platform, testing::build_plugins(), options);
  RunRequest request;
  request.frames = 2;
  request.input_sets = {{graph::read_npy(kFixtures / "mobilenet_v3_small_tiny_input.npy").data}};
  EXPECT_EQ(executor.run(request).profile.frames_completed, 2u);
}

}  // namespace
}  // namespace co_up
