// The opencl backend's rank-N tensor ops and CNN forms (MatMul through CLBlast, broadcast
// element-wise, Softmax, LayerNorm, GELU, Transpose, Reshape, Reduce, Gather, Slice, Split,
// Concat, Resize, Pad, LeakyRelu, SiLU, HardSigmoid, ChannelScale, ChannelShuffle) on PoCL: the
// committed ONNX fixtures (tests/fixtures/onnx) all on G, and alternating G with B on
// cpu-reference, in pipeline and switch mode, against PyTorch's output (within 1e-3 of its
// range, same argmax), plus the per-node answer of device_query_node for those ops.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/executor.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "tests/onnx/fixture_support.h"

namespace co_up {
namespace {

using onnx_fixtures::kFixtures;
using onnx_fixtures::load;
using onnx_fixtures::run;

// Why the GPU cannot be used here, or empty: the runs need the opencl plugin and an OpenCL device.
std::string no_opencl_reason() {
  if (testing::build_plugins().find("opencl") == nullptr) {
    return "plugin 'opencl' is not built or found no OpenCL device (install PoCL: pocl-opencl-icd)";
  }
  return {};
}

class OpenclTensorFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(OpenclTensorFixture, AllOnGAndAlternatingWithBMatchPyTorch) {
  if (const std::string why = no_opencl_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string name = GetParam();
  const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
  const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
  const graph::Graph g = load(name);
  const uint32_t layers = g.layer_count();
  std::string alternating;
  for (uint32_t i = 0; i < layers; ++i) alternating += i % 2 ? 'B' : 'G';
  for (const std::string& order : {std::string(layers, 'G'), alternating}) {
    for (const ExecutionMode mode : {ExecutionMode::kPipeline, ExecutionMode::kSwitch}) {
      const std::string what = name + " --order=" + order + (mode == ExecutionMode::kPipeline ? " pipeline" : " switch");
      onnx_fixtures::expect_matches_pytorch(run(g, order, mode, input.data, "cpu-reference"), want, what);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OpenclTensorFixture,
                         ::testing::Values("op_broadcast", "op_attention", "op_matmul_vectors",
                                           "op_layernorm17", "op_layernorm13", "vit_tiny", "bert_tiny",
                                           "op_resize", "op_resize_modes", "op_pad_modes", "op_shape_chain",
                                           "op_channel_shuffle", "mobilenet_v3_small_tiny", "yolo_tiny",
                                           "inception_v4_tiny", "swin_tiny"),
                         [](const auto& info) { return info.param; });

// With --units=ops every MatMul, Resize or Pad sits in a sub-graph boundary somewhere: G and B
// hand rank-N tensors (not only NCHW) across in both directions.
TEST(OpenclTensorOps, OpUnitsAlternatingGAndBOnTheTransformerAndDetector) {
  if (const std::string why = no_opencl_reason(); !why.empty()) GTEST_SKIP() << why;
  for (const std::string name : {"bert_tiny", "yolo_tiny"}) {
    const graph::NpyArray input = graph::read_npy(kFixtures / (name + "_input.npy"));
    const graph::NpyArray want = graph::read_npy(kFixtures / (name + "_output.npy"));
    const graph::Graph g = load(name, "ops");
    std::string order;
    for (uint32_t i = 0; i < g.layer_count(); ++i) order += i % 2 ? 'G' : 'B';
    onnx_fixtures::expect_matches_pytorch(run(g, order, ExecutionMode::kPipeline, input.data, "cpu-reference"),
                                          want, name + " --units=ops --order=" + order);
  }
}

}  // namespace
}  // namespace co_up
