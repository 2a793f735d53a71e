// Every zoo network on G, and mixed mappings (GGGBBBLL, BGBG..., a G stage inside an inception
// branch with --units=ops) in pipeline and switch mode: outputs equal the all-CPU run frame by
// frame, with the runtime's own map/unmap transfers. The networks are compared on their logits
// (the final Softmax removed): 1000 softmax probabilities are each about 1e-3, so an absolute
// tolerance on them hides wrong logits; logits must agree within 1e-3 of their range.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <mutex>
#include <string>
#include <vector>

#include "core/executor.h"
#include "core/network.h"
#include "core/platform.h"
#include "core/plugin_registry.h"
#include "profiler/events.h"
#include "profiler/report.h"
#include "tests/backends/opencl_test_support.h"

namespace co_up::opencl_test {
namespace {

constexpr int64_t kSmallImage = 64;

const PluginRegistry& plugins() {
  static const PluginRegistry registry = [] {
    const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
    return PluginRegistry::load_directory(dir != nullptr ? dir : "plugins");
  }();
  return registry;
}

// frame -> output 0 of that frame.
std::map<uint64_t, std::vector<float>> run_order(const graph::Graph& g, const std::string& order,
                                                 ExecutionMode mode, uint64_t frames) {
  Platform platform = detect_host_platform("/nonexistent-sysfs");
  ExecutorOptions options;
  options.mode = mode;
  options.profile_level = 2;  // hooks on: the backend brackets each layer
  Executor executor(g, Partition::create(g, order), platform, plugins(), options);
  std::map<uint64_t, std::vector<float>> out;
  std::mutex mutex;
  RunRequest request;
  request.frames = frames;
  for (uint64_t f = 0; f < frames; ++f) request.input_sets.push_back(seeded_inputs(g, 500 + f));
  request.on_output = [&](uint64_t frame, uint32_t output, std::span<const float> values) {
    if (output != 0) return;
    std::lock_guard lock(mutex);
    out[frame].assign(values.begin(), values.end());
  };
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, frames) << order;
  return out;
}

// |got - want| <= 1e-3 * (max(want) - min(want)) for every value.
::testing::AssertionResult near_in_range(const std::vector<float>& want, const std::vector<float>& got) {
  if (want.size() != got.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  }
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  const double limit = 1e-3 * (static_cast<double>(*hi) - static_cast<double>(*lo));
  if (!(limit > 0)) return ::testing::AssertionFailure() << "constant output: nothing to compare";
  for (size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= limit)) {
      return ::testing::AssertionFailure() << "value " << i << ": " << got[i] << " vs " << want[i]
                                           << " (limit " << limit << ", 1e-3 of the range)";
    }
  }
  return ::testing::AssertionSuccess();
}

// A zoo network without its final Softmax: its output is the logits.
graph::Graph logits_network(const NetworkSpec& spec) {
  graph::Graph g = build_network(spec);
  const uint32_t layers = g.layer_count();
  g.erase_passthrough_nodes([](const graph::Node& n) { return n.op == graph::OpType::kSoftmax; });
  EXPECT_EQ(g.layer_count(), layers) << spec.name << ": the Softmax had a layer of its own";
  return g;
}

void expect_near_all_cpu(const graph::Graph& g, const std::string& order, ExecutionMode mode,
                         uint64_t frames = 2) {
  const auto want = run_order(g, std::string(order.size(), 'B'), mode, frames);
  const auto got = run_order(g, order, mode, frames);
  ASSERT_EQ(got.size(), want.size()) << order;
  for (const auto& [frame, values] : want) {
    EXPECT_TRUE(near_in_range(values, got.at(frame)))
        << g.name() << " " << order << " " << mode_name(mode) << " frame " << frame;
  }
}

class ZooOnGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooOnGpu, AllLayersOnGMatchAllCpu) {
  OPENCL_OR_SKIP();
  const graph::Graph g = logits_network({GetParam(), "layers", kSmallImage, 7, ""});
  expect_near_all_cpu(g, std::string(g.layer_count(), 'G'), ExecutionMode::kPipeline);
}

TEST_P(ZooOnGpu, AlternatingBGMappingsMatchAllCpuInBothModes) {
  OPENCL_OR_SKIP();
  const graph::Graph g = logits_network({GetParam(), "layers", kSmallImage, 7, ""});
  std::string bg;
  for (uint32_t i = 0; i < g.layer_count(); ++i) bg += (i % 2) ? 'G' : 'B';
  expect_near_all_cpu(g, bg, ExecutionMode::kPipeline, 3);
  expect_near_all_cpu(g, bg, ExecutionMode::kSwitch, 2);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooOnGpu,
                         ::testing::Values("alexnet", "googlenet", "mobilenet", "resnet50",
                                           "squeezenet"));

TEST(OpenclMappings, GGGBBBLLOnAlexNetInBothModes) {
  OPENCL_OR_SKIP();
  const graph::Graph g = logits_network({"alexnet", "layers", kSmallImage, 7, ""});
  expect_near_all_cpu(g, "GGGBBBLL", ExecutionMode::kPipeline, 3);
  expect_near_all_cpu(g, "GGGBBBLL", ExecutionMode::kSwitch, 2);
  expect_near_all_cpu(g, "BBLLLGGG", ExecutionMode::kPipeline, 2);
}

TEST(OpenclMappings, GStageInsideInceptionBranchesWithOpUnits) {
  OPENCL_OR_SKIP();
  const graph::Graph g = logits_network({"googlenet", "ops", kSmallImage, 7, ""});
  const uint32_t n = g.layer_count();
  // B, then a G stage that starts and ends inside inception blocks, then L, then G again.
  std::string order(n, 'B');
  for (uint32_t i = n / 5; i < 2 * n / 5 + 1; ++i) order[i] = 'G';
  for (uint32_t i = 2 * n / 5 + 1; i < 3 * n / 5; ++i) order[i] = 'L';
  for (uint32_t i = 3 * n / 5; i < 3 * n / 5 + 3; ++i) order[i] = 'G';
  expect_near_all_cpu(g, order, ExecutionMode::kPipeline, 2);
  expect_near_all_cpu(g, order, ExecutionMode::kSwitch, 2);
}

TEST(OpenclMappings, ResidualShortcutsAcrossGWithOpUnits) {
  OPENCL_OR_SKIP();
  const graph::Graph g = logits_network({"resnet50", "ops", kSmallImage, 7, ""});
  std::string order;
  for (uint32_t i = 0; i < g.layer_count(); ++i) order += "BGL"[(i / 3) % 3];
  expect_near_all_cpu(g, order, ExecutionMode::kPipeline, 2);
}

// ABI 1.1 layer_device_time: G layers carry the device time that OpenCL event profiling measured
// (between markers around the layer), within the host-side layer time; CPU layers carry none; the
// report and its JSON show it.
TEST(OpenclProfile, GLayersReportDeviceTimeFromEventProfiling) {
  OPENCL_OR_SKIP();
  const graph::Graph g = build_network({"mobilenet", "layers", kSmallImage, 3, ""});
  const uint32_t n = g.layer_count();
  const std::string order = std::string(n / 2, 'G') + std::string(n - n / 2, 'B');
  ExecutorOptions options;
  options.profile_level = 2;
  Executor executor(g, Partition::create(g, order), detect_host_platform("/nonexistent-sysfs"),
                    plugins(), options);
  RunRequest request;
  request.frames = 3;
  request.input_sets = {seeded_inputs(g, 1)};
  const RunResult result = executor.run(request);
  int g_layers = 0, b_layers = 0;
  for (const profiler::Event& e : result.profile.events) {
    if (e.kind != profiler::EventKind::kLayer) continue;
    if (order[e.layer] == 'G') {
      ++g_layers;
      EXPECT_GE(e.device_ns, 0) << "G layer " << e.layer << " frame " << e.frame;
      // The device worked within the span the host saw (markers complete before clFinish returns).
      EXPECT_LE(e.device_ns, e.end_ns - e.begin_ns) << "G layer " << e.layer;
    } else {
      ++b_layers;
      EXPECT_EQ(e.device_ns, -1) << "B layer " << e.layer << " has a device time";
    }
  }
  EXPECT_EQ(g_layers, static_cast<int>(n / 2) * 3);
  EXPECT_EQ(b_layers, static_cast<int>(n - n / 2) * 3);
  const nlohmann::json j = profiler::to_json(result.profile);
  EXPECT_TRUE(j["layers"][0].contains("device_ms_median"));
  EXPECT_FALSE(j["layers"][n - 1].contains("device_ms_median"));
  std::ostringstream report;
  profiler::print_report(report, result.profile);
  EXPECT_NE(report.str().find("device ms"), std::string::npos) << report.str();
}

}  // namespace
}  // namespace co_up::opencl_test
