// co_up --model on the transformer fixtures, the real binary: --list-layers shows one unit per
// encoder block with MatMul MACs, a mixed B/L run on cpu-reference writes PyTorch's output, the
// default platform (cpu-xnnpack first) refuses the rank-N nodes in one line naming the node, and
// unsupported models are one-line errors with exit status 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

std::string model(const std::string& name) { return "--model=" + (kFixtures / (name + ".onnx")).string(); }

// B and L on cpu-reference only (the one CPU backend with the rank-N ops).
std::string reference_platform(const test::ScratchDir& dir) {
  return "--platform=" + dir.write("reference.json", R"({"name": "reference-only", "processors": [
    {"letter": "B", "name": "CPU core 0", "kind": "cpu", "backend": ["cpu-reference"], "cores": [0], "threads": 1},
    {"letter": "L", "name": "CPU core 1", "kind": "cpu", "backend": ["cpu-reference"], "cores": [1], "threads": 1}]})").string();
}

TEST(OnnxTransformerCli, ListsEncoderBlocksAsUnitsWithMatMulMacs) {
  const test::ScratchDir dir;
  const Exit e = run(dir, {model("vit_tiny"), "--list-layers"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("4 layers"), std::string::npos) << e.out;
  for (const char* unit : {"conv_proj", "encoder/layers/encoder_layer_0", "encoder/layers/encoder_layer_1", "heads/head"}) {
    EXPECT_NE(e.out.find(unit), std::string::npos) << e.out;
  }
  EXPECT_NE(e.out.find("MatMul+Softmax+MatMul"), std::string::npos) << e.out;
  const Exit ops = run(dir, {model("bert_tiny"), "--units=ops", "--list-layers"});
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  // Per block: in-projection, q k^T, attention x v, out-projection, two MLP layers; then the head.
  EXPECT_NE(ops.out.find("13 layers"), std::string::npos) << ops.out;
}

TEST(OnnxTransformerCli, MixedOrderOnCpuReferenceWritesPyTorchsOutput) {
  const test::ScratchDir dir;
  const std::string out = (dir / "y.npy").string();
  const Exit e = run(dir, {model("bert_tiny"), reference_platform(dir), "--order=BLB", "--n=2",
                           "--input=" + (kFixtures / "bert_tiny_input.npy").string(), "--output=" + out});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const graph::NpyArray got = graph::read_npy(out);
  const graph::NpyArray want = graph::read_npy(kFixtures / "bert_tiny_output.npy");
  ASSERT_EQ(got.shape, want.shape);
  const auto [lo, hi] = std::minmax_element(want.data.begin(), want.data.end());
  for (size_t i = 0; i < got.data.size(); ++i) EXPECT_NEAR(got.data[i], want.data[i], 1e-3 * (*hi - *lo));
}

TEST(OnnxTransformerCli, UnsupportedModelsAreOneLineErrorsAndXnnpackOnlyPlatformsRunBert) {
  const test::ScratchDir dir;
  auto expect_one_line = [&](const std::vector<std::string>& args, int code, const std::string& needle) {
    const Exit e = run(dir, args);
    EXPECT_EQ(e.exit_code, code) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
    EXPECT_NE(e.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << e.err;
  };
  expect_one_line({model("err_cast_int64"), "--list-layers"}, 2, "node 'to_int64' (Cast)");
  expect_one_line({model("err_gather_computed_indices"), "--list-layers"}, 2, "node 'pick' (Gather)");
  // B on a platform that offers only cpu-xnnpack: it has the rank-N ops, so BERT runs there.
  const std::string xnn = "--platform=" + dir.write("xnn.json", R"({"name": "xnnpack-only", "processors": [
    {"letter": "B", "name": "CPU core 0", "kind": "cpu", "backend": ["cpu-xnnpack"], "cores": [0], "threads": 1}]})").string();
  const Exit e = run(dir, {model("bert_tiny"), xnn, "--order=BBB", "--n=1"});
  EXPECT_EQ(e.exit_code, 0) << e.err;
}

}  // namespace
}  // namespace co_up
