// ONNX import against PyTorch: the committed fixtures (tests/fixtures/onnx/, exported by
// tests/fixtures/make_fixtures.py with PyTorch's output for a seeded input) run through
// build_network — the path the CLI takes — and the executor, under several mappings in both
// modes. Output within 1e-3 of PyTorch's output range, same argmax. Plus automatic layer units
// and the loader's errors (one line, InputError, naming what is wrong).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "graph/onnx/onnx_importer.h"
#include "tests/core/test_support.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

using onnx_fixtures::expect_matches_pytorch;
using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::orders_for;
using onnx_fixtures::run;

class OnnxFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxFixture, MatchesPyTorchUnderSeveralMappingsInBothModes) {
  const std::string name = GetParam();
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  for (const std::string units : {"layers", "ops"}) {
    const graph::Graph g = load(name, units);
    ASSERT_EQ(g.tensor(g.inputs().at(0)).desc.shape, input.shape);
    for (const std::string& order : orders_for(g.layer_count())) {
      for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        const std::string what = name + " --units=" + units + " --order=" + order +
                                 (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
        expect_matches_pytorch(run(g, order, mode, input.data), want, what);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnnxFixture,
                         ::testing::Values("op_conv_bn_relu", "op_grouped_dilated", "op_classifier",
                                           "op_view_matmul", "op_pools", "op_fan_in", "op_pad_conv",
                                           "op_lrn", "op_misc", "squeezenet1_0_small",
                                           "mobilenet_v2_small"),
                         [](const auto& info) { return info.param; });

// Every f32 backend of this build: the CPU plugins alone on B and L, the GPU plugin on G (mixed
// with B). A plugin this build lacks is skipped, saying so.
class OnnxBackend : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxBackend, CommittedFixturesMatchPyTorch) {
  const std::string backend = GetParam();
  if (testing::build_plugins().find(backend) == nullptr) {
    GTEST_SKIP() << "plugin '" << backend << "' is not built or not loadable here";
  }
  const bool gpu = backend == "opencl";
  for (const std::string name : {"op_conv_bn_relu", "op_grouped_dilated", "op_classifier",
                                 "op_view_matmul", "op_pools", "op_fan_in", "op_pad_conv", "op_lrn",
                                 "op_misc", "squeezenet1_0_small", "mobilenet_v2_small"}) {
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    const graph::Graph g = load(name, "ops");
    const uint32_t n = g.layer_count();
    std::vector<std::string> orders;
    if (gpu) {
      std::string mixed;
      for (uint32_t i = 0; i < n; ++i) mixed += i % 2 ? 'G' : 'B';
      orders = {std::string(n, 'G'), mixed};
    } else {
      orders = orders_for(n);
    }
    for (const std::string& order : orders) {
      for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        expect_matches_pytorch(run(g, order, mode, input.data, gpu ? "" : backend), want,
                               backend + " " + name + " " + order +
                                   (mode == ExecutionMode::kPipeline ? " pipeline" : " switch"));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, OnnxBackend,
                         ::testing::Values("cpu-reference", "cpu-xnnpack", "opencl"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// --- layer units ---------------------------------------------------------------------------------

std::vector<std::string> unit_ops(const graph::Graph& g) {
  std::vector<std::string> result;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) result.push_back(s.ops);
  return result;
}

TEST(OnnxUnits, FanInBlocksAreOneUnitAndComputeOpsTakeWhatFollows) {
  const graph::Graph g = load("op_fan_in");
  // stem conv; the inception block (fork at the stem's output, join at Concat); the residual
  // block (fork at the Concat, join at Add).
  EXPECT_EQ(unit_ops(g), (std::vector<std::string>{
                             "Conv(relu)",
                             "Conv(relu)+Conv(relu)+Conv(relu)+MaxPool+Conv(relu)+Concat",
                             "Conv(relu)+Conv+Add(relu)"}));
  EXPECT_EQ(load("op_classifier").layer_count(), 3u);  // conv(+pool+flatten), fc1, fc2(+softmax)
}

TEST(OnnxUnits, SqueezeNetFireModulesAndOpsUnits) {
  const graph::Graph g = load("squeezenet1_0_small");
  // conv1(+pool), per fire module: squeeze conv, then the expand fan-in block, and conv10. The
  // pool after fire4 and fire8 moves into their expand convolutions (graph/pool_through_concat.h).
  EXPECT_EQ(g.layer_count(), 1u + 8u * 2u + 1u);
  int pooled_blocks = 0;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) {
    if (s.ops.find("Concat") == std::string::npos) continue;
    if (s.ops == "Conv(relu)+MaxPool+Conv(relu)+MaxPool+Concat") {
      ++pooled_blocks;
    } else {
      EXPECT_EQ(s.ops.rfind("Conv(relu)+Conv(relu)+Concat", 0), 0u) << s.ops;
    }
  }
  EXPECT_EQ(pooled_blocks, 2);
  // --units=ops: one unit per Conv (26 in SqueezeNet 1.0).
  EXPECT_EQ(load("squeezenet1_0_small", "ops").layer_count(), 26u);
}

TEST(OnnxUnits, ResidualBlocksOfMobileNetV2StayWhole) {
  const graph::Graph g = load("mobilenet_v2_small");
  int residual_units = 0;
  for (const graph::LayerSummary& s : graph::summarize_layers(g)) {
    if (s.ops.find("Add") != std::string::npos) {
      ++residual_units;
      EXPECT_EQ(s.ops, "Conv(relu6)+Conv(relu6)+Conv+Add") << s.name;
    }
  }
  EXPECT_EQ(residual_units, 10);
}

// --- errors --------------------------------------------------------------------------------------

std::string import_error(const std::string& bytes, const graph::OnnxImportOptions& options = {}) {
  try {
    graph::import_onnx_bytes(bytes, "model.onnx", options);
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no error";
  return {};
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(OnnxErrors, TruncatedCorruptAndNonOnnxFiles) {
  const std::string good = read_bytes(kFixtures / "squeezenet1_0_small.onnx");
  ASSERT_GT(good.size(), 1000u);
  // Cut at many places: every cut is an error, never a crash or a silently smaller model.
  for (size_t cut : {size_t{1}, size_t{7}, size_t{100}, good.size() / 3, good.size() / 2,
                     good.size() - 5, good.size() - 1}) {
    EXPECT_FALSE(import_error(good.substr(0, cut)).empty()) << "cut at " << cut;
  }
  std::string corrupt = good;
  for (size_t i = 0; i < 64; ++i) corrupt[40 + i * 7] = static_cast<char>(0xff);
  EXPECT_FALSE(import_error(corrupt).empty());
  EXPECT_NE(import_error("").find("empty"), std::string::npos);
  EXPECT_NE(import_error("this is a text file, not a model\n").find("not"), std::string::npos);
  EXPECT_NE(import_error(read_bytes(std::filesystem::path(CO_UP_SOURCE_DIR) / "README.md")).find("not"),
            std::string::npos);
  EXPECT_THROW(graph::import_onnx_file(kFixtures / "missing.onnx"), InputError);
}

TEST(OnnxErrors, UnsupportedOpOpsetAndDynamicShape) {
  const std::string op = import_error(read_bytes(kFixtures / "err_unsupported_op.onnx"));
  EXPECT_NE(op.find("'celu1'"), std::string::npos) << op;
  EXPECT_NE(op.find("Celu"), std::string::npos) << op;
  const std::string opset = import_error(read_bytes(kFixtures / "err_opset9.onnx"));
  EXPECT_NE(opset.find("opset 9"), std::string::npos) << opset;
  const std::string dynamic = import_error(read_bytes(kFixtures / "err_dynamic_batch.onnx"));
  EXPECT_NE(dynamic.find("--input-shape"), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("batch"), std::string::npos) << dynamic;
  // With the shape given it loads; a shape of the wrong rank is refused.
  graph::OnnxImportOptions options;
  options.input_shape = {2, 3, 8, 8};
  const graph::Graph g = graph::import_onnx_bytes(read_bytes(kFixtures / "err_dynamic_batch.onnx"),
                                                  "dyn.onnx", options);
  EXPECT_EQ(g.tensor(g.inputs().at(0)).desc.shape, (std::vector<int64_t>{2, 3, 8, 8}));
  options.input_shape = {3, 8, 8};
  EXPECT_NE(import_error(read_bytes(kFixtures / "err_dynamic_batch.onnx"), options).find("rank"),
            std::string::npos);
}

TEST(OnnxErrors, InputShapeOption) {
  EXPECT_EQ(graph::parse_input_shape("1,3,224,224"), (std::vector<int64_t>{1, 3, 224, 224}));
  for (const char* bad : {"", "1,,3", "1,3,x", "0,3", "-1,3", "1,3,"}) {
    EXPECT_THROW(graph::parse_input_shape(bad), InputError) << bad;
  }
}

}  // namespace
}  // namespace co_up
