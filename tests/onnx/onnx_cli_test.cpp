// co_up --model end to end: the real binary on the committed fixtures. Bad input ends with exit
// status 2 and exactly one line on stderr (the CLI's contract, cli/main.cpp); a good model
// runs, lists its layers and writes its output.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/npy.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kFixtures = CO_UP_ONNX_FIXTURES;

using Exit = test::CommandResult;

class OnnxCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("co_up_onnx_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  Exit run(const std::vector<std::string>& args) { return test::run_program(CO_UP_BINARY, args, dir_); }

  // Exit 2, one line on stderr containing `needle`.
  void expect_input_error(const std::vector<std::string>& args, const std::string& needle) {
    const Exit e = run(args);
    EXPECT_EQ(e.exit_code, 2) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e.err;
    EXPECT_NE(e.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << e.err;
  }

  std::string model(const std::string& name) const { return (kFixtures / (name + ".onnx")).string(); }

  std::filesystem::path dir_;
};

TEST_F(OnnxCli, RunsAModelAndWritesItsOutput) {
  const std::string out = (dir_ / "y.npy").string();
  const Exit e = run({"--model=" + model("op_fan_in"), "--order=BLB", "--mode=switch", "--n=2",
                      "--input=" + (kFixtures / "op_fan_in_input.npy").string(), "--output=" + out});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const graph::NpyArray got = graph::read_npy(out);
  const graph::NpyArray want = graph::read_npy(kFixtures / "op_fan_in_output.npy");
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < got.data.size(); ++i) EXPECT_NEAR(got.data[i], want.data[i], 1e-4);
}

TEST_F(OnnxCli, ListsLayers) {
  const Exit e = run({"--model=" + model("squeezenet1_0_small"), "--list-layers"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("18 layers"), std::string::npos) << e.out;
  const Exit ops = run({"--model=" + model("squeezenet1_0_small"), "--units=ops", "--list-layers"});
  EXPECT_NE(ops.out.find("26 layers"), std::string::npos) << ops.out;
}

TEST_F(OnnxCli, BadFilesAreOneLineErrors) {
  const std::string good = slurp(model("squeezenet1_0_small"));
  std::ofstream(dir_ / "truncated.onnx", std::ios::binary) << good.substr(0, good.size() / 2);
  std::string corrupt = good;
  for (size_t i = 0; i < 200; ++i) corrupt[100 + i * 13] ^= static_cast<char>(0x5a);
  std::ofstream(dir_ / "corrupt.onnx", std::ios::binary) << corrupt;
  std::ofstream(dir_ / "text.onnx") << "hello, I am not a model\n";
  std::ofstream(dir_ / "empty.onnx");
  expect_input_error({"--model=" + (dir_ / "truncated.onnx").string(), "--list-layers"}, "truncated");
  const Exit c = run({"--model=" + (dir_ / "corrupt.onnx").string(), "--list-layers"});
  EXPECT_EQ(c.exit_code, 2) << c.err;
  EXPECT_EQ(std::count(c.err.begin(), c.err.end(), '\n'), 1) << c.err;
  expect_input_error({"--model=" + (dir_ / "text.onnx").string()}, "not");
  expect_input_error({"--model=" + (dir_ / "empty.onnx").string()}, "empty");
  expect_input_error({"--model=" + (dir_ / "missing.onnx").string()}, "does not exist");
  expect_input_error({"--model=" + dir_.string()}, "directory");
}

TEST_F(OnnxCli, UnsupportedModelsAreOneLineErrors) {
  expect_input_error({"--model=" + model("err_unsupported_op")}, "node 'celu1' (Celu)");
  expect_input_error({"--model=" + model("err_opset9")}, "opset 9 is not supported");
  expect_input_error({"--model=" + model("err_dynamic_batch")}, "--input-shape");
  const Exit fixed = run({"--model=" + model("err_dynamic_batch"), "--input-shape=1,3,8,8", "--n=1"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.err;
  expect_input_error({"--model=" + model("err_dynamic_batch"), "--input-shape=1,3,8"}, "rank");
  expect_input_error({"--model=" + model("op_lrn"), "--input-shape=1,3,x"}, "--input-shape");
}

TEST_F(OnnxCli, WrongInputTensorAndOptionMixes) {
  expect_input_error({"--model=" + model("op_fan_in"), "--n=1",
                      "--input=" + (kFixtures / "op_lrn_input.npy").string()},
                     "has shape [1,7,5,5]");
  expect_input_error({"--model=" + model("op_fan_in"), "--order=BBBB"}, "order");
  expect_input_error({"--model=" + model("op_fan_in"), "--graph=alexnet"}, "not both");
  expect_input_error({"--model=" + model("op_fan_in"), "--image-size=64"}, "--input-shape");
  expect_input_error({"--graph=alexnet", "--input-shape=1,3,64,64"}, "--model");
}

TEST_F(OnnxCli, ImageWithPreprocessingFromJson) {
  {
    std::ofstream ppm(dir_ / "img.ppm", std::ios::binary);
    ppm << "P6\n40 30\n255\n";
    for (int i = 0; i < 40 * 30; ++i) ppm << static_cast<char>(i % 256) << static_cast<char>(i * 7 % 256) << static_cast<char>(90);
  }
  std::ofstream(dir_ / "pre.json") << R"({"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "layout": "BGR", "resize": "stretch", "size": [96, 96]})";
  std::ofstream(dir_ / "wrong_size.json") << R"({"size": 224})";
  std::ofstream(dir_ / "bad.json") << R"({"std": [1, 0, 1]})";
  std::ofstream(dir_ / "broken.json") << "{\"mean\": [";
  const std::string m = "--model=" + model("mobilenet_v2_small");
  const std::string image = "--image=" + (dir_ / "img.ppm").string();
  const Exit ok = run({m, image, "--preprocess=" + (dir_ / "pre.json").string(), "--n=1"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("top-5"), std::string::npos) << ok.out;
  const Exit defaults = run({m, image, "--n=1"});  // torchvision ImageNet preprocessing
  EXPECT_EQ(defaults.exit_code, 0) << defaults.err;
  expect_input_error({m, image, "--preprocess=" + (dir_ / "wrong_size.json").string()}, "differs");
  expect_input_error({m, image, "--preprocess=" + (dir_ / "bad.json").string()}, "non-zero");
  expect_input_error({m, image, "--preprocess=" + (dir_ / "broken.json").string()}, "not valid JSON");
  expect_input_error({m, "--preprocess=" + (dir_ / "pre.json").string()}, "--image");
}

}  // namespace
}  // namespace co_up
