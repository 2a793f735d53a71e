// Placement: an order bound to the machine once — devices per letter, sub-graphs, node queries,
// --npu_fallback — against a real accelerator plugin that declines some ops (libpartial_npu.so:
// Conv, FullyConnected and MaxPool only) and the cpu-reference plugin.
#include "core/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kTestPlugins = CO_UP_TEST_PLUGIN_DIR;

Platform board() {
  return parse_platform(R"({"name": "placement-board", "processors": [
    {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": ["no-such-cpu", "cpu-reference"], "cores": [0]},
    {"letter": "L", "name": "LITTLE CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [1]},
    {"letter": "N", "name": "test NPU", "kind": "npu", "backend": "partial-npu", "host": "B"}]})",
                        "test platform");
}

const PluginRegistry& test_plugins() {
  static const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  return registry;
}

class PlacementTest : public ::testing::Test {
 protected:
  const PluginRegistry& plugins_ = test_plugins();
  const graph::Graph graph_ = build_network({"alexnet", "layers", 64, 7, ""});
};

TEST_F(PlacementTest, BindsEachLetterOnceToTheFirstLoadedBackend) {
  const Placement p = Placement::create(graph_, "BBLLLLBB", board(), plugins_);
  EXPECT_EQ(p.order(), "BBLLLLBB");
  ASSERT_EQ(p.partition().subgraphs().size(), 3u);
  ASSERT_EQ(p.processors().size(), 2u);  // B owns two sub-graphs, one device
  EXPECT_EQ(p.processors()[0].letter, 'B');
  EXPECT_EQ(p.processors()[0].backend, "cpu-reference");  // "no-such-cpu" did not load
  EXPECT_EQ(p.processors()[0].host_cores, std::vector<int>{0});
  EXPECT_EQ(p.processor('L').host_cores, std::vector<int>{1});
  EXPECT_EQ(p.processor('B').spec, p.platform().find('B'));  // points into its own platform
  EXPECT_THROW(p.processor('N'), std::out_of_range);
  for (const SubGraph& sg : p.partition().subgraphs()) {
    EXPECT_EQ(p.desc(sg.index).get().node_count, sg.nodes.size());
  }
  EXPECT_TRUE(p.nhwc_tensors().empty());  // cpu-reference holds NCHW
  EXPECT_TRUE(p.fallback().report.empty());
  EXPECT_GT(p.setup_ns(), 0);
}

TEST_F(PlacementTest, ADeclinedNodeIsAnInputErrorNamingItWithoutFallback) {
  try {
    Placement::create(graph_, "NNNNNNNN", board(), plugins_);
    FAIL() << "partial-npu declines LRN";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("layer 0 (conv1)"));
    EXPECT_THAT(e.what(), HasSubstr("(LRN) cannot run on 'N' (backend 'partial-npu')"));
    EXPECT_THAT(e.what(), HasSubstr("--npu_fallback=B|L|G"));
  }
}

TEST_F(PlacementTest, FallbackMovesDeclinedLayersAndKeepsTheAcceleratorsDevice) {
  PlacementOptions options;
  options.npu_fallback = 'L';
  const Placement p = Placement::create(graph_, "NNNNNNNN", board(), plugins_, options);
  EXPECT_EQ(p.order(), "LLNNNNNL");
  EXPECT_EQ(p.fallback().order, "LLNNNNNL");
  ASSERT_EQ(p.fallback().moves.size(), 3u);
  EXPECT_EQ(p.fallback().report.at(0),
            "npu fallback: layers 0 (conv1), 1 (conv2), 7 (fc8) \u2192 L; order LLNNNNNL");
  EXPECT_EQ(p.processor('N').backend, "partial-npu");
  EXPECT_EQ(p.processor('N').spec, p.platform().find('N'));
  // The fallback's order runs, and computes what the CPU computes (within the plugin's rounding).
  Executor executor(Placement::create(graph_, "NNNNNNNN", board(), plugins_, options), {});
  RunRequest request;
  request.input_sets.push_back(seeded_inputs(graph_, 1));
  EXPECT_EQ(executor.run(request).profile.order, "LLNNNNNL");
}

// A run resolves the order first (its DVFS levels are set before any of its devices exists),
// then binds: the accelerator device the fallback queried is the one the placement runs on.
TEST_F(PlacementTest, InTwoStepsTheFallbacksDeviceIsTheOneBound) {
  ResolvedOrder resolved = resolve_order(graph_, "NNNNNNNN", board(), plugins_, 'B');
  EXPECT_EQ(resolved.fallback.order, "BBNNNNNB");
  ASSERT_EQ(resolved.probe.devices.count('N'), 1u);
  EXPECT_EQ(resolved.probe.devices.count('B'), 0u);  // CPUs are bound with the placement
  const Device* queried = resolved.probe.devices.at('N').device.get();
  const Placement p = Placement::create(graph_, std::move(resolved), board(), plugins_);
  EXPECT_EQ(p.order(), "BBNNNNNB");
  EXPECT_EQ(p.processor('N').device.get(), queried);
  EXPECT_EQ(resolve_order(graph_, "BBLL", board(), plugins_, 0).fallback.order, "BBLL");
}

TEST_F(PlacementTest, AnUnknownLetterIsAnInputErrorNamingThePlatformsLetters) {
  try {
    Placement::create(graph_, "BBBBXXXX", board(), plugins_);
    FAIL() << "X is no processor of the board";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("uses 'X', but platform 'placement-board' defines only BLN"));
  }
}

}  // namespace
}  // namespace co_up
