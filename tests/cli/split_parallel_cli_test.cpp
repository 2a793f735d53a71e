// A split layer's parts on B and L at once (--units=branches --split, graph/split_units.h): each
// part and the Concat unit run as sub-graphs of their own, and the output equals the
// single-processor output bit for bit in both modes, end to end through co_up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/googlenet_ops.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using test::CommandResult;
using test::lines;
using test::run_program;

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// conv1 (unit 0), conv2/3x3 (unit 2) and inception_3a/3x3 (unit 5) in two: 76 + 3 x 2 units.
const std::vector<std::string> kNetwork = {"--graph=googlenet", "--units=branches", "--split=0:2,2:2,5:2",
                                           "--image-size=64"};

TEST(SplitParallel, SpreadPartsRunAsSubGraphsOfTheirOwn) {
  const test::ScratchDir scratch;
  std::vector<std::string> list = kNetwork;
  list.push_back("--list-layers");
  const CommandResult layers = run_program(CO_UP_BINARY, list, scratch.path());
  ASSERT_EQ(layers.exit_code, 0) << layers;
  ASSERT_EQ(lines(layers.out).size() - 1, 82u) << layers;
  ASSERT_THAT(layers.out, testing::HasSubstr("conv2/3x3#concat"));
  // Units: 0 conv1#1, 1 conv1#2, 2 conv1#concat, 3 conv2/3x3_reduce, 4 conv2/3x3#1, 5 #2,
  // 6 #concat. conv2/3x3#2 on L: B {0..3} {4} | L {5} | B {6..81}: 4 sub-graphs (cut only where
  // the letter changes it would be 3, and L's part would wait for B's).
  std::string order(82, 'B');
  order[5] = 'L';
  std::vector<std::string> args = kNetwork;
  args.insert(args.end(), {"--order=" + order, "--mode=switch", "--n=2", "--profile=1"});
  const CommandResult r = run_program(CO_UP_BINARY, args, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::regex row(R"(^\s+\d+\s+[BL]\s+cpu-\S+\s+\d+-\d+\s.*)");
  std::vector<std::string> ranges;
  for (const std::string& line : lines(r.out)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) ranges.push_back(line);
  }
  ASSERT_EQ(ranges.size(), 4u) << r;
  EXPECT_THAT(ranges[1], testing::HasSubstr(" 4-4 "));
  EXPECT_THAT(ranges[2], testing::HasSubstr(" 5-5 "));
  EXPECT_THAT(ranges[3], testing::HasSubstr(" 6-81 "));
}

TEST(SplitParallel, SpreadPartsEqualOneProcessorBitForBit) {
  const test::ScratchDir scratch;
  // Every split's parts over B and L (Concat on B, then on L), and the parts on one processor.
  std::string spread_b(82, 'B'), spread_l(82, 'B'), together(82, 'B');
  for (uint32_t first : {0u, 4u, 9u}) {
    spread_b[first + 1] = 'L';
    spread_l[first] = 'L';
    spread_l[first + 2] = 'L';
    together[first] = together[first + 1] = 'L';
  }
  std::string reference;
  for (const std::string& order : {std::string(82, 'B'), spread_b, spread_l, together}) {
    for (const char* mode : {"switch", "pipeline"}) {
      const std::filesystem::path out = scratch / (std::string(mode) + "_" + order + ".npy");
      std::vector<std::string> args = kNetwork;
      args.insert(args.end(), {"--order=" + order, std::string("--mode=") + mode, "--n=3", "--output=" + out.string()});
      const CommandResult r = run_program(CO_UP_BINARY, args, scratch.path());
      ASSERT_EQ(r.exit_code, 0) << r;
      const std::string bytes = slurp(out);
      ASSERT_GT(bytes.size(), 1000u);
      if (reference.empty()) reference = bytes;
      EXPECT_TRUE(bytes == reference) << order << " " << mode << " differs from the single-processor output";
    }
  }
}

}  // namespace
}  // namespace co_up
