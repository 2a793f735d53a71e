// The library as an application uses it: `cmake --install` of this build tree into a scratch
// prefix; examples/api (a C++ and a C program) configured and built by a separate CMake that knows
// co_up only through find_package(co_up) -> co_up::co_up; the C example also built with pkg-config
// alone; both run against the installed libco_up.so.1, which finds the installed plugins beside
// itself (lib/co_up/plugins) without any environment.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"
#include "graph/npy.h"
#include "tests/api/api_test_support.h"
#include "tests/plugins/run_command.h"

namespace co_up::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kSource = CO_UP_SOURCE_DIR;
const fs::path kBuild = CO_UP_BUILD_DIR;
const std::string kLibDir = CO_UP_INSTALL_LIBDIR;
const std::string kCMake = CO_UP_CMAKE_COMMAND;

TEST(ApiInstall, ExamplesBuiltOutOfTreeAgainstTheInstalledPackageRun) {
  const ApiWorld world;
  const fs::path prefix = world.scratch / "prefix";
  auto run = [&](const std::string& line) { return run_command(line, world.scratch.path()); };
  const CommandResult installed =
      run(join_quoted({kCMake, "--install", kBuild.string(), "--prefix", prefix.string()}));
  ASSERT_EQ(installed.exit_code, 0) << installed;
  const fs::path lib = prefix / kLibDir;
  EXPECT_TRUE(fs::is_regular_file(prefix / "include/co_up/co_up.h"));
  EXPECT_TRUE(fs::is_regular_file(prefix / "include/co_up/co_up.hpp"));
  EXPECT_TRUE(fs::is_symlink(lib / "libco_up.so"));
  EXPECT_TRUE(fs::is_regular_file(lib / "libco_up.so.1"));
  EXPECT_TRUE(fs::is_regular_file(lib / "pkgconfig/co_up.pc"));
  // The SONAME carries the API major.
  const CommandResult soname = run("readelf -d " + shell_quote((lib / "libco_up.so.1").string()));
  EXPECT_THAT(soname.out, HasSubstr("[libco_up.so." + std::to_string(CO_UP_API_VERSION_MAJOR) + "]"));
  // Only the API is exported, not co_up's internals.
  const CommandResult symbols = run("nm -D --defined-only " + shell_quote((lib / "libco_up.so.1").string()) + " | c++filt");
  EXPECT_THAT(symbols.out, HasSubstr("co_up_session_open_zoo"));
  EXPECT_THAT(symbols.out, HasSubstr("co_up::Session::run"));
  EXPECT_THAT(symbols.out, ::testing::Not(HasSubstr("co_up::Executor")));
  EXPECT_THAT(symbols.out, ::testing::Not(HasSubstr("co_up::graph::")));

  const fs::path build = world.scratch / "examples-build";
  const CommandResult configured = run(join_quoted(
      {kCMake, "-S", (kSource / "examples/api").string(), "-B", build.string(), "-G", CO_UP_CMAKE_GENERATOR,
       "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_COMPILER=" + std::string(CO_UP_C_COMPILER),
       "-DCMAKE_CXX_COMPILER=" + std::string(CO_UP_CXX_COMPILER), "-DCMAKE_PREFIX_PATH=" + prefix.string()}));
  ASSERT_EQ(configured.exit_code, 0) << configured;
  const CommandResult built = run(join_quoted({kCMake, "--build", build.string()}));
  ASSERT_EQ(built.exit_code, 0) << built;

  // The installed library finds lib/co_up/plugins itself: no CO_UP_PLUGIN_PATH.
  const std::string env = "env -u CO_UP_PLUGIN_PATH ";
  const std::string order = three_stage_order(Session::open_zoo(kNetwork, world.options("")).order().size());
  const std::string size = "image-size=" + std::to_string(kImageSize);
  const std::string platform = "platform=" + (kSource / "platforms/host-2core.json").string();
  const CommandResult c_run = run(env + join_quoted({(build / "co_up_c_example").string(), kNetwork, order, "12",
                                                     size, platform}));
  ASSERT_EQ(c_run.exit_code, 0) << c_run;
  EXPECT_THAT(c_run.out, HasSubstr("streamed 12 frames in order: yes"));
  EXPECT_THAT(c_run.out, HasSubstr("frame 11 checksum"));

  // Frames from a directory of .npy files, in name order, through the callback.
  const fs::path frames = world.scratch / "frames";
  fs::create_directories(frames);
  Session session = Session::open_zoo(kNetwork, world.options(""));
  for (int i = 0; i < 3; ++i) {
    const Tensor t = random_input(session.inputs()[0].shape, static_cast<uint32_t>(i));
    graph::write_npy(frames / ("f" + std::to_string(i) + ".npy"), t.shape(), t.values());
  }
  const CommandResult cpp_run = run(env + join_quoted({(build / "co_up_stream_npy").string(), kNetwork, order,
                                                       frames.string(), size, platform}));
  ASSERT_EQ(cpp_run.exit_code, 0) << cpp_run;
  EXPECT_THAT(cpp_run.out, HasSubstr("frame 0  f0.npy"));
  EXPECT_THAT(cpp_run.out, HasSubstr("frame 2  f2.npy"));
  EXPECT_THAT(cpp_run.out, HasSubstr("3 frames"));
  // An error crosses the installed library with the command line's message and exit code.
  const CommandResult bad = run(env + join_quoted({(build / "co_up_stream_npy").string(), kNetwork, "BBX", size, platform}));
  EXPECT_EQ(bad.exit_code, 2) << bad;
  EXPECT_THAT(bad.err, HasSubstr("co_up: error: "));
  EXPECT_THAT(bad.err, HasSubstr("'BBX'"));

  // pkg-config alone: the C example compiled and linked by hand.
  const std::string pc = "PKG_CONFIG_PATH=" + shell_quote((lib / "pkgconfig").string()) + " ";
  const fs::path by_hand = world.scratch / "c_example_pc";
  const CommandResult compiled =
      run(shell_quote(CO_UP_C_COMPILER) + " -std=c99 -Wall -Werror -o " + shell_quote(by_hand.string()) + " " +
          shell_quote((kSource / "examples/api/c_example.c").string()) + " $(" + pc +
          "pkg-config --cflags --libs co_up)");
  ASSERT_EQ(compiled.exit_code, 0) << compiled;
  const CommandResult pc_run = run(env + "LD_LIBRARY_PATH=" + shell_quote(lib.string()) + " " +
                                   join_quoted({by_hand.string(), kNetwork, order, "3", size, platform}));
  ASSERT_EQ(pc_run.exit_code, 0) << pc_run;
  EXPECT_THAT(pc_run.out, HasSubstr("streamed 3 frames in order: yes"));
}

}  // namespace
}  // namespace co_up::test
