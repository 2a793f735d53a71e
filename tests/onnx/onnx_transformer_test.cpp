// Transformer operators end to end: the committed transformer fixtures (tests/fixtures/onnx/,
// made by make_fixtures.py --transformers with PyTorch's output for a seeded input) imported and
// run on cpu-reference with block units and --units=ops, all-B and mixed B/L orders: output within
// 1e-3 of PyTorch's output range, same argmax. Plus the import-time fusions (LayerNormalization
// from the opset-13 pattern, GELU from its erf and tanh forms), transformer layer units and
// one-line import errors (cpu-xnnpack's run of the fixtures: onnx_transformer_xnnpack_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <span>
#include <utility>
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

using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::platform_with;
using onnx_fixtures::run;

// As onnx_fixtures::expect_matches_pytorch, and the golden output must not be flat (a transformer
// fixture whose output does not vary tests nothing).
void expect_matches_pytorch(const std::vector<float>& got, const graph::NpyArray& want,
                            const std::string& what) {
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  ASSERT_GT(static_cast<double>(*hi - *lo), 1e-3) << what << ": the golden output is flat; the fixture tests nothing";
  onnx_fixtures::expect_matches_pytorch(got, want, what);
}

std::map<std::string, int> op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes()) ++counts[std::string(graph::op_type_name(n.op))];
  return counts;
}

class TransformerFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformerFixture, MatchesPyTorchOnCpuReferenceWithBlockAndOpUnits) {
  const std::string name = GetParam();
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  for (const std::string units : {"layers", "ops"}) {
    const graph::Graph g = load(name, units);
    ASSERT_EQ(g.tensor(g.inputs().at(0)).desc.shape, input.shape);
    const uint32_t layers = g.layer_count();
    std::string alternating;
    for (uint32_t i = 0; i < layers; ++i) alternating += i % 2 ? 'L' : 'B';
    for (const std::string& order : {std::string(layers, 'B'), alternating}) {
      for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        const std::string what = name + " --units=" + units + " --order=" + order +
                                 (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
        expect_matches_pytorch(run(g, order, mode, input.data, "cpu-reference"), want, what);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TransformerFixture,
                         ::testing::Values("op_broadcast", "op_attention", "op_matmul_vectors", "op_layernorm17",
                                           "op_layernorm13", "vit_tiny", "vit_tiny_opset13",
                                           "bert_tiny"),
                         [](const auto& info) { return info.param; });

TEST(TransformerImport, LayerNormPatternAndGeluFormsAreFusedAtImport) {
  for (const std::string name : {"op_layernorm17", "op_layernorm13"}) {
    const auto counts = op_counts(load(name));
    EXPECT_EQ(counts.count("ReduceMean"), 0u) << name;
    EXPECT_EQ(counts.count("Erf"), 0u) << name;
    EXPECT_EQ(counts.count("Tanh"), 0u) << name;
    EXPECT_EQ(counts.at("LayerNormalization"), 2) << name;
    EXPECT_EQ(counts.at("Gelu"), 2) << name;  // F.gelu (erf) and F.gelu(approximate="tanh")
  }
  const auto vit = op_counts(load("vit_tiny_opset13"));
  EXPECT_EQ(vit.at("LayerNormalization"), 5);  // two per block and the final one
  EXPECT_EQ(vit.at("Gelu"), 2);
  EXPECT_EQ(vit.count("Pow"), 0u);
}

TEST(TransformerImport, EncoderBlocksPatchEmbeddingAndHeadAreUnits) {
  const graph::Graph vit = load("vit_tiny");
  std::vector<std::string> names;
  int64_t matmul_macs = 0;
  for (const graph::LayerSummary& s : graph::summarize_layers(vit)) names.push_back(s.name);
  for (const graph::Node& n : vit.nodes()) {
    if (n.op == graph::OpType::kMatMul) matmul_macs += graph::node_macs(vit, n);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"conv_proj", "encoder/layers/encoder_layer_0",
                                             "encoder/layers/encoder_layer_1", "heads/head"}));
  // q k^T and attention x v of 4 heads of 16 over 17 tokens, per block.
  EXPECT_EQ(matmul_macs, 2 * 2 * 4 * 17 * 17 * 16);
  const graph::Graph bert = load("bert_tiny");
  names.clear();
  for (const graph::LayerSummary& s : graph::summarize_layers(bert)) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"encoder/layers.0", "encoder/layers.1", "head"}));
  // --units=ops: one unit per compute op (Conv, FullyConnected, MatMul).
  int compute = 0;
  const graph::Graph ops = load("vit_tiny", "ops");
  for (const graph::Node& n : ops.nodes()) compute += graph::is_compute_op(n.op) ? 1 : 0;
  EXPECT_EQ(ops.layer_count(), static_cast<uint32_t>(compute));
}

TEST(TransformerImport, UnsupportedCasesAreOneLineErrorsNamingTheNode) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"err_cast_int64", {"node 'to_int64' (Cast)", "element type 7", "float32 only"}},
      {"err_gather_computed_indices", {"node 'pick' (Gather)", "constant indices only", "'r'"}},
  };
  onnx_fixtures::expect_one_line_import_errors(cases);
}

}  // namespace
}  // namespace co_up
