// What the co_up binary refuses instead of silently guessing: empty option values, order strings
// with characters that are not processor letters (positions counted in characters, long orders
// quoted shortened), `plan` with another --image-size than its profile's, a network too large for
// this machine's memory (the bytes it needs, before allocating), and one level numbering (1 =
// lowest frequency) in --help.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/network.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using test::Exit;

class OptionChecksTest : public ::testing::Test {
 protected:
  Exit run(const std::vector<std::string>& args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  // Exit 2 and exactly one line on stderr, holding every needle.
  void expect_refused(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
    const Exit e = run(args);
    std::string line;
    for (const std::string& a : args) line += a + " ";
    EXPECT_EQ(e.code, 2) << line << "\n" << e.err;
    EXPECT_THAT(e.err, StartsWith("co_up: error: ")) << line;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << line << "\n" << e.err;
    for (const std::string& n : needles) EXPECT_THAT(e.err, HasSubstr(n)) << line;
  }
  test::ScratchDir dir_;
};

TEST_F(OptionChecksTest, EmptyValuesAreRefusedNotTakenAsTheDefault) {
  for (const char* name : {"order", "split", "input", "frequency", "output", "platform", "plugins",
                           "profile-out", "gpio-tags", "data", "image", "labels", "mode", "units",
                           "sysfs-root", "power-csv", "trace-out", "n", "image-size"}) {
    expect_refused({"--graph=alexnet", "--image-size=64", "--n=1", std::string("--") + name + "="},
                   {std::string("--") + name + "= has an empty value"});
  }
  expect_refused({"profile", "--graph=alexnet", "--processors=", "--profile-out=" + (dir_ / "p.json").string()},
                 {"--processors= has an empty value"});
  expect_refused({"plan", "--profile="}, {"--profile= has an empty value"});
  expect_refused({"--graph="}, {"--graph= has an empty value"});
}

TEST_F(OptionChecksTest, OrderCharactersAreCountedAsCharacters) {
  // 'É' is two bytes: the old count said 9 letters for 8 characters.
  expect_refused({"--graph=alexnet", "--image-size=64", "--order=BBLLLLLÉ"},
                 {"order 'BBLLLLLÉ' has invalid character 'É' at position 8, which is not a processor letter"});
  expect_refused({"--graph=alexnet", "--image-size=64", "--order=ÉBLLLLLL"}, {"'É' at position 1"});
  expect_refused({"--graph=alexnet", "--image-size=64", "--order=BBLLLLLb"},
                 {"'b' at position 8: processor letters are upper-case (B)"});
  expect_refused({"--graph=alexnet", "--image-size=64", std::string("--order=BB\xff") + "LLLLL"},
                 {"invalid byte 0xFF at position 3, which is not UTF-8 text"});
  expect_refused({"--graph=alexnet", "--image-size=64", "--order=BBLLLLL"}, {"has 7 letters", "has 8 layers"});
}

TEST_F(OptionChecksTest, LongOrdersAreQuotedShortened) {
  const std::string order(5000, 'B');
  const Exit e = run({"--graph=alexnet", "--image-size=64", "--order=" + order});
  EXPECT_EQ(e.code, 2);
  EXPECT_THAT(e.err, HasSubstr("order '" + std::string(40, 'B') + "... (5000 letters)' has 5000 letters"));
  EXPECT_LT(e.err.size(), 300u) << e.err;
  const Exit f = run({"--graph=alexnet", "--image-size=64", "--order=" + std::string(100, 'B') + "x"});
  EXPECT_THAT(f.err, HasSubstr("... (101 letters)' has invalid character 'x' at position 101"));
}

TEST_F(OptionChecksTest, PlanRefusesAnotherImageSizeThanTheProfiles) {
  planner::LayerProfile p = planner::make_synthetic_profile({});  // 8 layers, like AlexNet
  p.network.graph = "alexnet";
  p.network.image_size = 64;
  const auto file = dir_ / "alexnet64.json";
  planner::write_layer_profile(file, p);
  expect_refused({"plan", "--profile=" + file.string(), "--image-size=32"},
                 {"--image-size=32 differs from the profile, which was measured at --image-size=64"});
  const Exit same = run({"plan", "--profile=" + file.string(), "--image-size=64", "--top=1"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_THAT(same.out, HasSubstr("--image-size=64"));

  p.network.image_size = 0;  // the network's own size: 227 for the zoo's AlexNet
  planner::write_layer_profile(file, p);
  expect_refused({"plan", "--profile=" + file.string(), "--image-size=64"},
                 {"measured at the network's own input size (227)"});
  EXPECT_EQ(run({"plan", "--profile=" + file.string(), "--image-size=227", "--top=1"}).code, 0);
}

TEST_F(OptionChecksTest, ANetworkTooLargeForMemoryIsRefusedWithTheBytesItNeeds) {
  // AlexNet at 4096 pixels: fc6 alone has 4096 x 4129024 weights (63 GiB).
  if (available_memory_bytes() >= (uint64_t{64} << 30)) {
    GTEST_SKIP() << "this machine has 64 GiB or more available: AlexNet at 4096 pixels would fit";
  }
  expect_refused({"--graph=alexnet", "--image-size=4096", "--list-layers"},
                 {"network alexnet at --image-size=4096 needs at least ", "fc6_w [4096,4129024] alone: 67649929216 bytes",
                  "available; use a smaller --image-size"});
  expect_refused({"profile", "--graph=alexnet", "--image-size=4096", "--profile-out=" + (dir_ / "p.json").string()},
                 {"needs at least "});
}

TEST_F(OptionChecksTest, LevelsAreOneBasedInHelp) {
  const Exit e = run({"--help"});
  ASSERT_EQ(e.code, 0);
  EXPECT_THAT(e.out, HasSubstr("levels count from 1 = lowest frequency"));
  EXPECT_THAT(e.out, Not(HasSubstr("0-based")));
}

}  // namespace
}  // namespace co_up
