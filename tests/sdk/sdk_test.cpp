// The plugin SDK end to end, as a vendor uses it: install co_up's SDK from this build
// tree into a scratch prefix; configure and build examples/npu_plugin with a separate CMake
// invocation that knows only that prefix; drop the .so into a plugins directory next to copies of
// the shipped plugins; run the co_up binary already built (no rebuild) with N on the example, and
// compare with the all-CPU run. Also: pkg-config against the same prefix, --npu_fallback with the
// example's capability answers, and an installed runtime (bin/co_up) finding lib/co_up/plugins.
//
// Runs are tiny (AlexNet at 64x64, one frame); the whole file takes a few seconds, mostly CMake.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/npy.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using test::join_quoted;
using test::run_command;

const fs::path kSource = CO_UP_SOURCE_DIR;
const fs::path kBuild = CO_UP_BUILD_DIR;
const fs::path kShippedPlugins = CO_UP_SHIPPED_PLUGIN_DIR;
const std::string kLibDir = CO_UP_INSTALL_LIBDIR;
const std::string kCMake = CO_UP_CMAKE_COMMAND;
constexpr const char* kBinary = CO_UP_BINARY;

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

class SdkTest : public ::testing::Test {
 protected:
  test::CommandResult run(const std::vector<std::string>& words) {
    return run_command(join_quoted(words), dir_.path());
  }
  // `cmake --install` of one component of this build tree into `prefix`.
  void install(const std::string& component, const fs::path& prefix) {
    const test::CommandResult r = run({kCMake, "--install", kBuild.string(), "--prefix",
                                       prefix.string(), "--component", component});
    ASSERT_EQ(r.exit_code, 0) << r;
  }
  test::ScratchDir dir_;
};

TEST_F(SdkTest, TheExampleNpuPluginBuiltOutOfTreeRunsAsNAndMatchesTheCpu) {
  const fs::path prefix = dir_ / "prefix";
  ASSERT_NO_FATAL_FAILURE(install("sdk", prefix));
  EXPECT_TRUE(fs::is_regular_file(prefix / "include/co_up/plugin_abi.h"));
  EXPECT_TRUE(fs::is_regular_file(prefix / "include/co_up/plugin_helpers.h"));
  EXPECT_TRUE(fs::is_regular_file(prefix / kLibDir / "cmake/co_up/co_upConfig.cmake"));
  EXPECT_TRUE(fs::is_regular_file(prefix / kLibDir / "cmake/co_up/co_upConfigVersion.cmake"));

  // pkg-config finds the header directory in the same prefix (the .pc file is relocatable).
  const fs::path pc_dir = prefix / kLibDir / "pkgconfig";
  const test::CommandResult cflags =
      run_command("PKG_CONFIG_PATH=" + test::shell_quote(pc_dir.string()) +
                      " pkg-config --cflags co_up-plugin",
                  dir_.path());
  ASSERT_EQ(cflags.exit_code, 0) << cflags;
  const std::string include_flags = cflags.out.substr(0, cflags.out.find_last_not_of(" \n") + 1);
  EXPECT_THAT(include_flags, StartsWith("-I"));
  const std::string probe = dir_.write("probe.c",
                                       "#include <co_up/plugin_helpers.h>\n"
                                       "int probe(void) { return CO_UP_ABI_VERSION_MAJOR; }\n")
                                .string();
  const test::CommandResult compiled = run_command(
      test::shell_quote(CO_UP_C_COMPILER) + " -std=c99 -fsyntax-only " + include_flags + " " +
          test::shell_quote(probe),
      dir_.path());
  EXPECT_EQ(compiled.exit_code, 0) << compiled;

  // A separate CMake project that knows co_up only through find_package(co_up).
  const fs::path build = dir_ / "example-build";
  const test::CommandResult configured =
      run({kCMake, "-S", (kSource / "examples/npu_plugin").string(), "-B", build.string(), "-G",
           CO_UP_CMAKE_GENERATOR, "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_C_COMPILER=" + std::string(CO_UP_C_COMPILER),
           "-DCMAKE_PREFIX_PATH=" + prefix.string()});
  ASSERT_EQ(configured.exit_code, 0) << configured;
  const test::CommandResult built = run({kCMake, "--build", build.string()});
  ASSERT_EQ(built.exit_code, 0) << built;
  const fs::path plugin = build / "libexample_npu.so";
  ASSERT_TRUE(fs::is_regular_file(plugin)) << built;
  // Its install rule targets the installed co_up's plugin directory (co_up_PLUGIN_DIR).
  const test::CommandResult installed = run({kCMake, "--install", build.string()});
  ASSERT_EQ(installed.exit_code, 0) << installed;
  EXPECT_TRUE(fs::is_regular_file(prefix / kLibDir / "co_up/plugins/libexample_npu.so"))
      << installed;

  // The drop-in: the shipped plugins and the example's .so in one directory.
  const fs::path plugins = dir_ / "plugins";
  fs::create_directories(plugins);
  for (const fs::directory_entry& e : fs::directory_iterator(kShippedPlugins)) {
    if (e.path().extension() == ".so") fs::copy_file(e.path(), plugins / e.path().filename());
  }
  fs::copy_file(plugin, plugins / plugin.filename());

  const std::vector<std::string> base = {
      kBinary, "--graph=alexnet", "--image-size=64", "--n=1",
      "--platform=" + (kSource / "examples/npu_plugin/platform.json").string(),
      "--plugins=" + plugins.string()};
  auto co_up = [&](std::vector<std::string> args) {
    std::vector<std::string> words = base;
    words.insert(words.end(), args.begin(), args.end());
    return run(words);
  };
  const test::CommandResult listed = co_up({"--list-plugins"});
  ASSERT_EQ(listed.exit_code, 0) << listed;
  EXPECT_THAT(listed.out, HasSubstr("loaded   example-npu     libexample_npu.so v1.0.0"));

  const test::CommandResult cpu =
      co_up({"--order=BBBBBBBB", "--output=" + (dir_ / "cpu.npy").string()});
  ASSERT_EQ(cpu.exit_code, 0) << cpu;
  // conv3-conv5 (Conv+Relu, MaxPool) and fc6-fc7 (FullyConnected+Relu) on the example NPU.
  const test::CommandResult npu =
      co_up({"--order=BBNNNNNB", "--profile=1", "--output=" + (dir_ / "npu.npy").string()});
  ASSERT_EQ(npu.exit_code, 0) << npu;
  EXPECT_THAT(npu.out, HasSubstr("example-npu"));
  expect_close(graph::read_npy(dir_ / "npu.npy").data, graph::read_npy(dir_ / "cpu.npy").data);

  // LRN (conv1, conv2) and Softmax (fc8) are outside its op set: an error naming the first such
  // layer, or with --npu_fallback those layers on B, said on stderr.
  const test::CommandResult refused = co_up({"--order=NNNNNNNN"});
  EXPECT_EQ(refused.exit_code, 2) << refused;
  EXPECT_THAT(refused.err, HasSubstr("layer 0 (conv1)"));
  EXPECT_THAT(refused.err, HasSubstr("(LRN) cannot run on 'N' (backend 'example-npu')"));
  EXPECT_THAT(refused.err, HasSubstr("op LRN is not in example-npu's op set"));
  const test::CommandResult fallback =
      co_up({"--order=NNNNNNNN", "--npu_fallback=B", "--output=" + (dir_ / "fallback.npy").string()});
  ASSERT_EQ(fallback.exit_code, 0) << fallback;
  EXPECT_THAT(fallback.err, HasSubstr("co_up: npu fallback: layers 0 (conv1), 1 (conv2), 7 (fc8) "
                                      "\u2192 B; order BBNNNNNB"));
  expect_close(graph::read_npy(dir_ / "fallback.npy").data,
               graph::read_npy(dir_ / "cpu.npy").data);
}

TEST_F(SdkTest, AnInstalledCoUpFindsItsPluginsUnderLib) {
  const fs::path prefix = dir_ / "prefix";
  ASSERT_NO_FATAL_FAILURE(install("runtime", prefix));
  const fs::path binary = prefix / "bin/co_up";
  const fs::path plugins = prefix / kLibDir / "co_up/plugins";
  ASSERT_TRUE(fs::is_regular_file(binary));
  EXPECT_TRUE(fs::is_regular_file(plugins / "libco_up_cpu_reference.so"));
  EXPECT_FALSE(fs::exists(prefix / "bin/plugins"));
  // No --plugins and no $CO_UP_PLUGIN_PATH (ctest sets it): the default directory is used.
  const test::CommandResult listed = run_command(
      "env -u CO_UP_PLUGIN_PATH " + join_quoted({binary.string(), "--list-plugins"}), dir_.path());
  ASSERT_EQ(listed.exit_code, 0) << listed;
  EXPECT_THAT(listed.out, StartsWith("plugins in " + plugins.string() + ":"));
  EXPECT_THAT(listed.out, HasSubstr("loaded   cpu-reference"));
  const test::CommandResult ran = run_command(
      "env -u CO_UP_PLUGIN_PATH " +
          join_quoted({binary.string(), "--graph=alexnet", "--image-size=64", "--n=1"}),
      dir_.path());
  EXPECT_EQ(ran.exit_code, 0) << ran;
}

}  // namespace
}  // namespace co_up
