// --npu_fallback: plan_npu_fallback() against a real accelerator plugin that declines some ops
// (libpartial_npu.so: Conv, FullyConnected and MaxPool only), then the co_up binary end to end:
// without the option a declined layer is a one-line error naming it; with it the run succeeds,
// prints the placement, and computes what the CPU computes. Also the other setup failure an
// accelerator can cause: a plugin whose compile fails (libfailing_npu.so) ends the run with exit
// status 1 and one line naming the plugin, the sub-graph and the plugin's message.
#include "core/fallback.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "graph/npy.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::filesystem::path kTestPlugins = CO_UP_TEST_PLUGIN_DIR;
constexpr const char* kBinary = CO_UP_BINARY;

// B and L on the reference plugin, N on `npu_backend`.
constexpr const char* kPlatformTemplate = R"({"name": "fallback-board", "processors": [
    {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
    {"letter": "L", "name": "LITTLE CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [1]},
    {"letter": "N", "name": "test NPU", "kind": "npu", "backend": "NPU_BACKEND", "host": "B"}]})";

std::string platform_json(const std::string& npu_backend) {
  std::string json = kPlatformTemplate;
  json.replace(json.find("NPU_BACKEND"), 11, npu_backend);
  return json;
}

Platform platform_with_npu(const std::string& npu_backend) {
  return parse_platform(platform_json(npu_backend), "test platform");
}

graph::Graph small_alexnet() {
  NetworkSpec spec;
  spec.name = "alexnet";
  spec.image_size = 64;
  return build_network(spec);
}

// max |a - b| <= 1e-4 * max(range of `want`, 1e-3), as the backend conformance tests.
void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  const double tolerance = 1e-4 * std::max(static_cast<double>(*hi - *lo), 1e-3);
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  EXPECT_LE(worst, tolerance);
}

class NpuFallbackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = new PluginRegistry(PluginRegistry::load_directory(kTestPlugins));
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
  }
  static PluginRegistry* registry_;
  const graph::Graph graph_ = small_alexnet();
};

PluginRegistry* NpuFallbackTest::registry_ = nullptr;

TEST_F(NpuFallbackTest, MovesExactlyTheLayersWithADeclinedNodeAndSaysWhy) {
  ASSERT_EQ(graph_.layer_count(), 8u);
  const FallbackPlan plan =
      plan_npu_fallback(graph_, "NNNNNNNN", platform_with_npu("partial-npu"), *registry_, 'B');
  // conv1 and conv2 end in LRN, fc8 in Softmax; conv3-5, fc6 and fc7 are Conv/MaxPool/FC only.
  EXPECT_EQ(plan.order, "BBNNNNNB");
  ASSERT_EQ(plan.moves.size(), 3u);
  EXPECT_EQ(plan.moves[0].layer, 0u);
  EXPECT_EQ(plan.moves[0].layer_name, "conv1");
  EXPECT_EQ(plan.moves[0].op, "LRN");
  EXPECT_EQ(plan.moves[0].from, 'N');
  EXPECT_EQ(plan.moves[0].backend, "partial-npu");
  EXPECT_EQ(plan.moves[0].reason, "partial-npu runs Conv, FullyConnected and MaxPool only, not LRN");
  EXPECT_EQ(plan.moves[1].layer, 1u);
  EXPECT_EQ(plan.moves[2].layer, 7u);
  EXPECT_EQ(plan.moves[2].op, "Softmax");
  ASSERT_EQ(plan.report.size(), 4u);
  EXPECT_EQ(plan.report[0],
            "npu fallback: layers 0 (conv1), 1 (conv2), 7 (fc8) \u2192 B; order BBNNNNNB");
  EXPECT_THAT(plan.report[1], HasSubstr("layer 0 (conv1) left 'N'"));
  EXPECT_THAT(plan.report[1], HasSubstr("(LRN) on backend 'partial-npu'"));
  EXPECT_THAT(plan.report[3], HasSubstr("not Softmax"));
}

TEST_F(NpuFallbackTest, KeepsTheOtherLettersAndMovesToTheLetterAsked) {
  const FallbackPlan plan =
      plan_npu_fallback(graph_, "NNBBNNNN", platform_with_npu("partial-npu"), *registry_, 'L');
  EXPECT_EQ(plan.order, "LLBBNNNL");
}

TEST_F(NpuFallbackTest, ASupportedPlacementIsKeptAndStillReported) {
  const FallbackPlan plan =
      plan_npu_fallback(graph_, "BBNNNNNB", platform_with_npu("partial-npu"), *registry_, 'B');
  EXPECT_EQ(plan.order, "BBNNNNNB");
  EXPECT_TRUE(plan.moves.empty());
  ASSERT_EQ(plan.report.size(), 1u);
  EXPECT_THAT(plan.report[0], StartsWith("npu fallback: every layer"));
  EXPECT_THAT(plan.report[0], HasSubstr("order BBNNNNNB"));
}

TEST_F(NpuFallbackTest, AnOrderWithoutAcceleratorsIsUntouchedAndReportsNothing) {
  const FallbackPlan plan =
      plan_npu_fallback(graph_, "BBBBLLLL", platform_with_npu("partial-npu"), *registry_, 'B');
  EXPECT_EQ(plan.order, "BBBBLLLL");
  EXPECT_TRUE(plan.moves.empty());
  EXPECT_TRUE(plan.report.empty());
}

TEST_F(NpuFallbackTest, AnAcceleratorWithoutAPluginLosesAllItsLayersWithTheRegistrysReason) {
  const FallbackPlan plan =
      plan_npu_fallback(graph_, "BBBBNNNN", platform_with_npu("fake-npu"), *registry_, 'B');
  EXPECT_EQ(plan.order, "BBBBBBBB");
  ASSERT_EQ(plan.moves.size(), 4u);
  EXPECT_TRUE(plan.moves[0].node.empty());
  EXPECT_THAT(plan.moves[0].reason, HasSubstr("no plugin 'fake-npu'"));
  EXPECT_THAT(plan.moves[0].reason, HasSubstr("fake-npu declined (no NPU device here"));
  EXPECT_EQ(plan.report[0],
            "npu fallback: layers 4 (conv5), 5 (fc6), 6 (fc7), 7 (fc8) \u2192 B; order BBBBBBBB");
}

TEST_F(NpuFallbackTest, TheFallbackMustBeAProcessorThatIsNotAnAccelerator) {
  const Platform platform = platform_with_npu("partial-npu");
  try {
    plan_npu_fallback(graph_, "NNNNNNNN", platform, *registry_, 'G');
    FAIL() << "fell back to a letter the platform does not define";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--npu_fallback=G"));
    EXPECT_THAT(e.what(), HasSubstr("no processor 'G'"));
  }
  EXPECT_THROW(plan_npu_fallback(graph_, "NNNNNNNN", platform, *registry_, 'N'), InputError);
  EXPECT_THROW(plan_npu_fallback(graph_, "NNN", platform, *registry_, 'B'), InputError);
}

TEST_F(NpuFallbackTest, ThePlannedOrderRunsAndComputesWhatTheCpuComputes) {
  const Platform platform = platform_with_npu("partial-npu");
  const FallbackPlan plan = plan_npu_fallback(graph_, "NNNNNNNN", platform, *registry_, 'B');
  auto run = [&](const std::string& order) {
    Executor executor(graph_, Partition::create(graph_, order), platform, *registry_,
                      ExecutorOptions{});
    RunRequest request;
    request.frames = 1;
    request.input_sets.push_back(seeded_inputs(graph_, 1));
    return executor.run(request).last_outputs.at(0);
  };
  expect_close(run(plan.order), run("BBBBBBBB"));
}

// --- the co_up binary ---------------------------------------------------------------------------

class NpuFallbackCliTest : public ::testing::Test {
 protected:
  test::CommandResult co_up(const std::string& npu_backend, std::vector<std::string> args) {
    const std::filesystem::path platform =
        dir_.write(npu_backend + ".json", platform_json(npu_backend));
    std::vector<std::string> words = {kBinary, "--graph=alexnet", "--image-size=64", "--n=2",
                                      "--plugins=" + kTestPlugins.string(),
                                      "--platform=" + platform.string()};
    words.insert(words.end(), args.begin(), args.end());
    return test::run_command(test::join_quoted(words), dir_.path());
  }
  std::vector<float> output(const std::string& name) {
    return graph::read_npy(dir_ / name).data;
  }
  test::ScratchDir dir_;
};

TEST_F(NpuFallbackCliTest, WithoutTheOptionADeclinedLayerIsAOneLineErrorNamingIt) {
  const test::CommandResult r = co_up("partial-npu", {"--order=NNNNNNNN"});
  EXPECT_EQ(r.exit_code, 2) << r;
  const std::vector<std::string> lines = test::lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r;
  EXPECT_THAT(lines[0], StartsWith("co_up: error: layer 0 (conv1) node "));
  EXPECT_THAT(lines[0], HasSubstr("(LRN) cannot run on 'N' (backend 'partial-npu')"));
  EXPECT_THAT(lines[0], HasSubstr("not LRN"));
  EXPECT_THAT(lines[0], HasSubstr("--npu_fallback"));
}

TEST_F(NpuFallbackCliTest, WithTheOptionTheRunPrintsThePlacementAndMatchesTheCpu) {
  const test::CommandResult cpu =
      co_up("partial-npu", {"--order=BBBBBBBB", "--output=" + (dir_ / "cpu.npy").string()});
  ASSERT_EQ(cpu.exit_code, 0) << cpu;
  const test::CommandResult npu =
      co_up("partial-npu", {"--order=NNNNNNNN", "--npu_fallback=B", "--profile=1",
                            "--output=" + (dir_ / "npu.npy").string()});
  ASSERT_EQ(npu.exit_code, 0) << npu;
  const std::vector<std::string> lines = test::lines_of(npu.err);
  ASSERT_EQ(lines.size(), 4u) << npu;
  EXPECT_EQ(lines[0],
            "co_up: npu fallback: layers 0 (conv1), 1 (conv2), 7 (fc8) \u2192 B; order BBNNNNNB");
  EXPECT_THAT(npu.out, HasSubstr("order BBNNNNNB"));
  EXPECT_THAT(npu.out, HasSubstr("partial-npu"));  // the per-sub-graph table names the backend
  expect_close(output("npu.npy"), output("cpu.npy"));
}

TEST_F(NpuFallbackCliTest, AMalformedFallbackIsAUsageError) {
  const test::CommandResult r = co_up("partial-npu", {"--order=NNNNNNNN", "--npu_fallback=cpu"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_THAT(r.err, HasSubstr("--npu_fallback='cpu'"));
}

TEST_F(NpuFallbackCliTest, ACompileFailureAtSetupIsOneLineNamingPluginSubGraphAndMessage) {
  const test::CommandResult r = co_up("failing-npu", {"--order=BBNNBBBB"});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_TRUE(r.out.empty()) << r;
  const std::vector<std::string> lines = test::lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r;
  EXPECT_THAT(lines[0], StartsWith("co_up: failed: "));
  EXPECT_THAT(lines[0], HasSubstr("sub-graph 1 (layers 2-3 on N)"));
  EXPECT_THAT(lines[0], HasSubstr("backend 'failing-npu'"));
  EXPECT_THAT(lines[0], HasSubstr("vendor compiler rejected the partition (out of NPU SRAM"));
}

}  // namespace
}  // namespace co_up
