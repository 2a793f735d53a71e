// npu-int8 and the rank-N tensor ops, through the real binary: with N in the order, each node the
// accelerator does not run (MatMul, Transpose, LayerNormalization, Resize, ...) is declined per
// node with its reason, so without --npu_fallback the run stops with one line naming the node, op
// and backend, and with --npu_fallback=B exactly the layers holding such nodes move to B (one
// line each) while the others stay on N; the output then matches PyTorch's within int8 accuracy.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "graph/npy.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kFixtures = CO_UP_ONNX_FIXTURES;

using Exit = test::CommandResult;

Exit run(const test::ScratchDir& dir, const std::vector<std::string>& args) {
  return test::run_program(CO_UP_BINARY, args, dir.path());
}

// B on cpu-reference (the rank-N ops), N on npu-int8 hosted by B.
std::string npu_platform(const test::ScratchDir& dir) {
  return "--platform=" + dir.write("npu.json", R"({"name": "npu-int8-and-reference", "processors": [
    {"letter": "B", "name": "CPU core 0", "kind": "cpu", "backend": ["cpu-reference"], "cores": [0], "threads": 1},
    {"letter": "N", "name": "int8 accelerator", "kind": "npu", "backend": "npu-int8", "host": "B"}]})").string();
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) found.push_back(line);
  }
  return found;
}

struct Case {
  std::string fixture;
  std::string order;
  std::vector<std::string> moved;  // unit names that must leave N
  std::string first_refusal;      // what the run without fallback names
};

class NpuTensorFallback : public ::testing::TestWithParam<Case> {};

TEST_P(NpuTensorFallback, DeclinedLayersMoveToBAndTheOutputMatches) {
  const Case& c = GetParam();
  const test::ScratchDir dir;
  const std::string input = "--input=" + (kFixtures / (c.fixture + "_input.npy")).string();
  const std::string model = "--model=" + (kFixtures / (c.fixture + ".onnx")).string();

  const Exit refused = run(dir, {model, npu_platform(dir), "--order=" + c.order, "--n=1", input});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find(c.first_refusal), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("is not implemented by npu-int8"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--npu_fallback"), std::string::npos) << refused.err;

  const std::string out = (dir / "y.npy").string();
  // 4 calibration frames, then 4 int8 frames; the output file holds the last one.
  const Exit e = run(dir, {model, npu_platform(dir), "--order=" + c.order, "--npu_fallback=B", "--n=8",
                           input, "--output=" + out});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::vector<std::string> moved = lines_with(e.err, "left 'N'");
  ASSERT_EQ(moved.size(), c.moved.size()) << e.err;
  for (size_t i = 0; i < moved.size(); ++i) {
    EXPECT_NE(moved[i].find("(" + c.moved[i] + ") left 'N'"), std::string::npos) << moved[i];
    EXPECT_NE(moved[i].find("is not implemented by npu-int8"), std::string::npos) << moved[i];
  }
  const graph::NpyArray got = graph::read_npy(out);
  const graph::NpyArray want = graph::read_npy(kFixtures / (c.fixture + "_output.npy"));
  ASSERT_EQ(got.shape, want.shape);
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  const float range = *hi - *lo;
  float max_diff = 0.0f;
  for (size_t i = 0; i < got.data.size(); ++i) max_diff = std::max(max_diff, std::abs(got.data[i] - want.data[i]));
  // int8 layers stay on N: within 2 % of the output range, the same top-1 class.
  EXPECT_LE(max_diff, 0.02f * range) << e.err;
  EXPECT_EQ(std::max_element(got.data.begin(), got.data.end()) - got.data.begin(),
            std::max_element(want.data.begin(), want.data.end()) - want.data.begin());
}

INSTANTIATE_TEST_SUITE_P(
    Transformers, NpuTensorFallback,
    ::testing::Values(
        // The encoder blocks (MatMul, Transpose, LayerNormalization, Gelu) leave N; the head stays.
        Case{"bert_tiny", "NNN", {"encoder/layers.0", "encoder/layers.1"},
             "node '/encoder/layers.0/self_attn/Transpose' (Transpose)"},
        // Patch embedding on B; both blocks leave N; the head stays on N.
        Case{"vit_tiny", "BNNN", {"encoder/layers/encoder_layer_0", "encoder/layers/encoder_layer_1"},
             "(LayerNormalization)"}),
    [](const auto& info) { return info.param.fixture; });

}  // namespace
}  // namespace co_up
