// The transformer fixtures (and the CNNs that need rank-N ops: ShuffleNetV2's channel split,
// ConvNeXt's permuted LayerNorm) on cpu-xnnpack: every fixture through all-B, half B / half L
// and alternating B,L orders in pipeline and switch mode, output within 1e-3 of PyTorch's output
// range with the same argmax, and every mapping's output bit for bit the same (cpu-xnnpack's
// kernels sum in a fixed order whatever the thread count or where a sub-graph is cut).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "tests/core/test_support.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

using onnx_fixtures::expect_matches_pytorch;
using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::orders_for;
using onnx_fixtures::platform_with;
using onnx_fixtures::run;

class TransformerOnXnnpack : public ::testing::TestWithParam<std::string> {};

TEST_P(TransformerOnXnnpack, MatchesPyTorchInEveryMappingAndModeBitForBit) {
  ASSERT_NE(testing::build_plugins().find("cpu-xnnpack"), nullptr) << "plugin 'cpu-xnnpack' is not built";
  const std::string name = GetParam();
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  ASSERT_GT(static_cast<double>(*hi - *lo), 1e-3) << name << ": the golden output is flat";
  std::vector<float> first;
  std::string first_what;
  for (const std::string units : {"layers", "ops"}) {
    const graph::Graph g = load(name, units);
    for (const std::string& order : orders_for(g.layer_count())) {
      for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
        const std::string what = name + " --units=" + units + " --order=" + order +
                                 (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
        const std::vector<float> got = run(g, order, mode, input.data, "cpu-xnnpack");
        expect_matches_pytorch(got, want, what);
        if (first.empty()) {
          first = got;
          first_what = what;
        } else {
          EXPECT_TRUE(got == first) << what << " differs from " << first_what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TransformerOnXnnpack,
                         ::testing::Values("op_broadcast", "op_attention", "op_matmul_vectors",
                                           "op_layernorm17", "op_layernorm13", "op_view_matmul",
                                           "op_misc", "vit_tiny", "vit_tiny_opset13", "bert_tiny",
                                           "convnext_tiny_tiny", "shufflenet_v2_tiny",
                                           // detectors and their resampling ops
                                           "op_resize", "op_resize_modes", "op_pad_modes",
                                           "op_pad_output", "op_pad_conv", "op_shape_chain",
                                           "yolo_tiny", "inception_v4_tiny", "swin_tiny"),
                         [](const auto& info) { return info.param; });

// A B|L pipeline that cuts attention between the processors: the MatMul of two computed tensors
// on one side, its Softmax and the product with V on the other, in every block.
TEST(TransformerOnXnnpackPipeline, OpUnitsAlternatingInsideAttentionMatchPyTorch) {
  for (const std::string name : {"bert_tiny", "vit_tiny"}) {
    const graph::Graph g = load(name, "ops");
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    std::string order;
    for (uint32_t i = 0; i < g.layer_count(); ++i) order += (i / 2) % 2 ? 'L' : 'B';
    expect_matches_pytorch(run(g, order, ExecutionMode::kPipeline, input.data, "cpu-xnnpack"), want,
                           name + " --units=ops --order=" + order);
  }
}

}  // namespace
}  // namespace co_up
