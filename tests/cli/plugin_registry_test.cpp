// PluginRegistry against real shared objects (tests/plugins): every kind of bad plugin is refused
// or declined with a reason that names the problem (no entry point, another ABI major, a truncated
// table, a NULL entry, a failing init), a newer ABI minor loads, and none of them stops the good
// ones loading. Then the same seen from the Executor: a processor whose plugin declined is an
// InputError that says which plugin and why; a plugin whose compile fails stops setup with a
// RuntimeError naming the plugin, the sub-graph and the plugin's message; a node an accelerator
// declines names the layer, op, backend and the plugin's reason.
#include "core/plugin_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/plugin.h"
#include "core/platform.h"
#include "tests/cli/scratch_dir.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using Outcome = PluginRecord::Outcome;

const std::filesystem::path kTestPlugins = CO_UP_TEST_PLUGIN_DIR;

const PluginRecord* find_record(const PluginRegistry& registry, const std::string& file) {
  for (const PluginRecord& r : registry.records()) {
    if (r.path.filename() == file) return &r;
  }
  return nullptr;
}

class PluginRegistryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = new PluginRegistry(PluginRegistry::load_directory(kTestPlugins));
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
  }

  const PluginRecord& record(const std::string& file) const {
    const PluginRecord* r = find_record(*registry_, file);
    if (r == nullptr) {
      ADD_FAILURE() << "no record for " << file << " in " << kTestPlugins << ": "
                    << registry_->summary();
      static const PluginRecord kEmpty;
      return kEmpty;
    }
    return *r;
  }

  static PluginRegistry* registry_;
};

PluginRegistry* PluginRegistryTest::registry_ = nullptr;

TEST_F(PluginRegistryTest, KeepsARecordForEverySoFileInNameOrder) {
  EXPECT_EQ(registry_->directory(), kTestPlugins);
  std::vector<std::string> files;
  for (const PluginRecord& r : registry_->records()) files.push_back(r.path.filename().string());
  const std::vector<std::string> expected = {
      CO_UP_REFERENCE_PLUGIN_FILE, "libcrashing.so",      "libdeclining.so",     "libfailing_init.so",
      "libfailing_npu.so",         "libgarbage.so",       "libnewer_minor.so",
      "libnot_a_plugin.so",        "libnull_api.so",      "libnull_function.so",
      "libpartial_npu.so",         "libtruncated.so",     "libwrong_major.so"};
  EXPECT_EQ(files, expected) << registry_->summary();
}

TEST_F(PluginRegistryTest, TheReferencePluginLoadsNextToBadOnes) {
  const PluginRecord& r = record(CO_UP_REFERENCE_PLUGIN_FILE);
  EXPECT_EQ(r.outcome, Outcome::kLoaded) << r.reason;
  EXPECT_EQ(r.backend, "cpu-reference");
  EXPECT_FALSE(r.version.empty());
  EXPECT_TRUE(r.reason.empty()) << r.reason;
  ASSERT_NE(registry_->find("cpu-reference"), nullptr);
  EXPECT_EQ(registry_->find("cpu-reference")->name(), "cpu-reference");
}

TEST_F(PluginRegistryTest, GarbageIsRefusedBeforeDlopenAsNotElf) {
  const PluginRecord& r = record("libgarbage.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  EXPECT_TRUE(r.backend.empty());
  // The ELF check refuses it before dlopen sees it (core/elf_check.h).
  EXPECT_EQ(r.reason,
            "not an ELF file (it does not start with \\x7fELF); a plugin is a shared library");
}

TEST_F(PluginRegistryTest, ASharedObjectWithoutTheEntryPointIsRefusedNamingTheSymbol) {
  const PluginRecord& r = record("libnot_a_plugin.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  EXPECT_THAT(r.reason, HasSubstr("not a co_up plugin"));
  EXPECT_THAT(r.reason, HasSubstr(CO_UP_PLUGIN_ENTRY_POINT));
}

TEST_F(PluginRegistryTest, AnotherAbiMajorIsRefusedNamingBothVersions) {
  const PluginRecord& r = record("libwrong_major.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  const std::string ours =
      std::to_string(CO_UP_ABI_VERSION_MAJOR) + "." + std::to_string(CO_UP_ABI_VERSION_MINOR);
  const std::string theirs = std::to_string(CO_UP_ABI_VERSION_MAJOR + 1) + ".0";
  EXPECT_THAT(r.reason, HasSubstr("ABI " + theirs)) << r.reason;
  EXPECT_THAT(r.reason, HasSubstr(ours)) << r.reason;
  EXPECT_EQ(registry_->find("wrong-major"), nullptr);
}

TEST_F(PluginRegistryTest, APluginThatReturnsNoTableIsRefusedNamingOurAbi) {
  const PluginRecord& r = record("libnull_api.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  const std::string ours =
      std::to_string(CO_UP_ABI_VERSION_MAJOR) + "." + std::to_string(CO_UP_ABI_VERSION_MINOR);
  EXPECT_THAT(r.reason, HasSubstr("does not support co_up ABI " + ours)) << r.reason;
}

TEST_F(PluginRegistryTest, ATruncatedTableIsRefused) {
  const PluginRecord& r = record("libtruncated.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  EXPECT_THAT(r.reason, HasSubstr("truncated")) << r.reason;
  EXPECT_EQ(registry_->find("truncated"), nullptr);
}

TEST_F(PluginRegistryTest, ANewerAbiMinorLoadsBecauseMinorsOnlyAppend) {
  const PluginRecord& r = record("libnewer_minor.so");
  EXPECT_EQ(r.outcome, Outcome::kLoaded) << r.reason;
  EXPECT_EQ(r.backend, "newer-minor");
  ASSERT_NE(registry_->find("newer-minor"), nullptr);
  const co_up_plugin_api& api = registry_->find("newer-minor")->api();
  EXPECT_EQ(api.abi_minor, CO_UP_ABI_VERSION_MINOR + 1);
  EXPECT_GT(api.struct_size, sizeof(co_up_plugin_api));
}

// boundary_layouts came with ABI 1.2: a 1.0 or 1.1 table ends before it, whatever lies there.
TEST(PluginTable, BoundaryLayoutsAreReadOnlyFromTablesThatHaveThem) {
  co_up_plugin_api api{};
  api.struct_size = static_cast<uint32_t>(offsetof(co_up_plugin_api, boundary_layouts));
  api.boundary_layouts = 1u << CO_UP_LAYOUT_NHWC;
  const co_up::Plugin plugin("older.so", nullptr, &api, nullptr);
  EXPECT_EQ(plugin.boundary_layouts(), 0u);
  api.struct_size = sizeof(api);
  EXPECT_EQ(plugin.boundary_layouts(), 1u << CO_UP_LAYOUT_NHWC);
}

TEST_F(PluginRegistryTest, ANullEntryInTheTableIsRefusedNamingIt) {
  const PluginRecord& r = record("libnull_function.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);
  EXPECT_EQ(r.backend, "null-function");
  EXPECT_THAT(r.reason, HasSubstr("lacks device_release")) << r.reason;
  EXPECT_THAT(r.reason, ::testing::Not(HasSubstr("factory_create"))) << r.reason;
  EXPECT_EQ(registry_->find("null-function"), nullptr);
}

TEST_F(PluginRegistryTest, APluginWhoseInitFailsIsRefusedWithItsMessage) {
  const PluginRecord& r = record("libfailing_init.so");
  EXPECT_EQ(r.outcome, Outcome::kRefused);  // not declined: the error is not NO_DEVICE
  EXPECT_EQ(r.backend, "failing-init");
  EXPECT_EQ(r.reason, "factory_create failed: failing-init: firmware upload failed (device reset "
                      "needed)");
  EXPECT_EQ(registry_->find("failing-init"), nullptr);
}

TEST_F(PluginRegistryTest, APluginWithoutItsHardwareDeclinesWithItsOwnMessage) {
  const PluginRecord& r = record("libdeclining.so");
  EXPECT_EQ(r.outcome, Outcome::kDeclined);
  EXPECT_EQ(r.backend, "fake-npu");
  EXPECT_EQ(r.version, "0.1.0");
  EXPECT_EQ(r.reason, "no NPU device here (librknnrt.so not found)");
  EXPECT_EQ(registry_->find("fake-npu"), nullptr);
}

TEST_F(PluginRegistryTest, SummaryNamesEveryOutcome) {
  const std::string summary = registry_->summary();
  EXPECT_THAT(summary, HasSubstr("cpu-reference loaded"));
  EXPECT_THAT(summary, HasSubstr("fake-npu declined (no NPU device here"));
  EXPECT_THAT(summary, HasSubstr("libgarbage.so refused"));
  EXPECT_THAT(summary, HasSubstr("libnot_a_plugin.so refused"));
}

TEST(PluginRegistry, AMissingDirectoryGivesNoRecords) {
  const std::filesystem::path missing = kTestPlugins / "does-not-exist";
  const PluginRegistry registry = PluginRegistry::load_directory(missing);
  EXPECT_TRUE(registry.records().empty());
  EXPECT_EQ(registry.find("cpu-reference"), nullptr);
  EXPECT_EQ(registry.directory(), missing);
  EXPECT_THAT(registry.summary(), HasSubstr("no plugin files"));
}

TEST(PluginRegistry, IgnoresFilesThatAreNotDotSo) {
  test::ScratchDir dir;
  dir.write("README.txt", "not a plugin\n");
  dir.write("libsomething.so.txt", "not a plugin either\n");
  const PluginRegistry registry = PluginRegistry::load_directory(dir.path());
  EXPECT_TRUE(registry.records().empty()) << registry.summary();
}

TEST(PluginRegistry, ASecondFileWithTheSameBackendIsRefused) {
  test::ScratchDir dir;
  std::filesystem::copy_file(kTestPlugins / CO_UP_REFERENCE_PLUGIN_FILE, dir / "liba_ref.so");
  std::filesystem::copy_file(kTestPlugins / CO_UP_REFERENCE_PLUGIN_FILE, dir / "libb_ref.so");
  const PluginRegistry registry = PluginRegistry::load_directory(dir.path());
  ASSERT_EQ(registry.records().size(), 2u);
  EXPECT_EQ(registry.records()[0].outcome, Outcome::kLoaded) << registry.records()[0].reason;
  EXPECT_EQ(registry.records()[1].outcome, Outcome::kRefused);
  EXPECT_THAT(registry.records()[1].reason, HasSubstr("already provided"));
  ASSERT_NE(registry.find("cpu-reference"), nullptr);
  EXPECT_EQ(std::filesystem::path(registry.find("cpu-reference")->path()).filename(), "liba_ref.so");
}

// A platform whose NPU is served only by the declining plugin.
Platform platform_with_fake_npu() {
  return parse_platform(R"({
    "name": "fake-board",
    "processors": [
      {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [0]},
      {"letter": "N", "name": "fake NPU", "kind": "npu", "backend": "fake-npu", "host": "B"}
    ]})",
                        "test platform");
}

TEST(PluginRegistryExecutor, AProcessorWhosePluginDeclinedIsAnInputErrorWithTheReason) {
  const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  const Platform platform = platform_with_fake_npu();
  NetworkSpec spec;
  spec.name = "alexnet";
  spec.image_size = 64;
  const graph::Graph g = build_network(spec);
  ASSERT_EQ(g.layer_count(), 8u);
  try {
    Executor executor(g, Partition::create(g, "BNNNNNNN"), platform, registry, ExecutorOptions{});
    FAIL() << "an executor was built for a processor whose plugin declined";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr("'N'"));
    EXPECT_THAT(message, HasSubstr("fake-npu"));
    EXPECT_THAT(message, HasSubstr("declined"));
    EXPECT_THAT(message, HasSubstr("no NPU device here (librknnrt.so not found)"));
  }
}

// B on `cpu_backend`, N on `npu_backend` (an accelerator hosted on B).
Platform platform_with(const std::string& cpu_backend, const std::string& npu_backend) {
  return parse_platform(R"({"name": "test-board", "processors": [
      {"letter": "B", "name": "big CPU", "kind": "cpu", "backend": ")" + cpu_backend +
                            R"(", "cores": [0]},
      {"letter": "N", "name": "test NPU", "kind": "npu", "backend": ")" + npu_backend +
                            R"(", "host": "B"}]})",
                        "test platform");
}

graph::Graph small_alexnet() {
  NetworkSpec spec;
  spec.name = "alexnet";
  spec.image_size = 64;
  return build_network(spec);
}

std::vector<float> run_one_frame(const graph::Graph& g, const std::string& order,
                                 const Platform& platform, const PluginRegistry& registry) {
  Executor executor(g, Partition::create(g, order), platform, registry, ExecutorOptions{});
  RunRequest request;
  request.frames = 1;
  request.input_sets.push_back(seeded_inputs(g, 1));
  RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 1u);
  return result.last_outputs.empty() ? std::vector<float>{} : result.last_outputs[0];
}

TEST(PluginRegistryExecutor, ANewerMinorPluginComputesLikeTheOneItWraps) {
  const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  const graph::Graph g = small_alexnet();
  const std::vector<float> newer =
      run_one_frame(g, "BBBBBBBB", platform_with("newer-minor", "partial-npu"), registry);
  const std::vector<float> reference =
      run_one_frame(g, "BBBBBBBB", platform_with("cpu-reference", "partial-npu"), registry);
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(newer, reference);  // the same kernels underneath: bit-identical
}

TEST(PluginRegistryExecutor, ACompileFailureAtSetupNamesPluginSubGraphAndMessage) {
  const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  const graph::Graph g = small_alexnet();
  try {
    Executor executor(g, Partition::create(g, "BBNNBBBB"),
                      platform_with("cpu-reference", "failing-npu"), registry, ExecutorOptions{});
    FAIL() << "an executor was built although the plugin's compile failed";
  } catch (const RuntimeError& e) {
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr("sub-graph 1 (layers 2-3 on N)"));
    EXPECT_THAT(message, HasSubstr("backend 'failing-npu'"));
    EXPECT_THAT(message, HasSubstr("compile failed"));
    EXPECT_THAT(message, HasSubstr("out of NPU SRAM: needs 9 MiB, has 4 MiB"));
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The registry and its other plugins are unharmed.
  EXPECT_FALSE(run_one_frame(g, "BBBBBBBB", platform_with("cpu-reference", "failing-npu"),
                             registry)
                   .empty());
}

TEST(PluginRegistryExecutor, ANodeTheAcceleratorDeclinesNamesLayerOpBackendAndReason) {
  const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  const graph::Graph g = small_alexnet();
  try {
    Executor executor(g, Partition::create(g, "BBBBBBNN"),
                      platform_with("cpu-reference", "partial-npu"), registry, ExecutorOptions{});
    FAIL() << "an executor was built although the accelerator declined a node";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr("layer 7 (fc8)"));
    EXPECT_THAT(message, HasSubstr("(Softmax) cannot run on 'N' (backend 'partial-npu')"));
    EXPECT_THAT(message, HasSubstr("partial-npu runs Conv, FullyConnected and MaxPool only, not "
                                   "Softmax"));
    EXPECT_THAT(message, HasSubstr("--npu_fallback"));
  }
}

TEST(PluginRegistryExecutor, TheSamePlatformRunsWhatAvoidsTheDeclinedProcessor) {
  const PluginRegistry registry = PluginRegistry::load_directory(kTestPlugins);
  NetworkSpec spec;
  spec.name = "alexnet";
  spec.image_size = 64;
  const graph::Graph g = build_network(spec);
  // The platform is a temporary on purpose: the executor must not keep a reference to it.
  Executor executor(g, Partition::create(g, "BBBBBBBB"), platform_with_fake_npu(), registry,
                    ExecutorOptions{});
  RunRequest request;
  request.frames = 1;
  request.input_sets.push_back(seeded_inputs(g, 1));
  const RunResult result = executor.run(request);
  EXPECT_EQ(result.profile.frames_completed, 1u);
}

}  // namespace
}  // namespace co_up
