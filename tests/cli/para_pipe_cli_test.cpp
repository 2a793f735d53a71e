// Branch-parallel mappings (--units=branches, regions spread over B and L) computing the
// single-processor output bit for bit in both modes, end to end through co_up.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "graph/parallel_regions.h"
#include "tests/cli/googlenet_ops.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using test::CommandResult;
using test::googlenet_ops;
using test::lines;
using test::run_program;

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(BranchParallel, OutputEqualsOneProcessorBitForBitInBothModes) {
  const test::ScratchDir scratch;
  const graph::Graph g = googlenet_ops();
  // Every module's 3x3 branch on L, the rest on B; and every branch on its own letter of two.
  std::string spread(g.layer_count(), 'B'), alternate(g.layer_count(), 'B');
  const std::vector<graph::DagRegion> regions = graph::find_unit_regions(graph::unit_dag(g));
  ASSERT_EQ(regions.size(), 9u);
  for (const graph::DagRegion& r : regions) {
    for (uint32_t u : r.branches[1]) spread[u] = 'L';
    for (size_t b = 0; b < r.branches.size(); ++b) {
      for (uint32_t u : r.branches[b]) alternate[u] = b % 2 == 0 ? 'L' : 'B';
    }
  }
  const std::string single(g.layer_count(), 'B');
  std::string reference;
  for (const std::string& order : {single, spread, alternate}) {
    for (const char* mode : {"switch", "pipeline"}) {
      const std::filesystem::path out = scratch / (std::string(mode) + "_" + order + ".npy");
      const CommandResult r = run_program(
          CO_UP_BINARY,
          {"--graph=googlenet", "--units=ops", "--image-size=64", "--order=" + order, std::string("--mode=") + mode,
           "--n=3", "--output=" + out.string()},
          scratch.path());
      ASSERT_EQ(r.exit_code, 0) << r;
      const std::string bytes = slurp(out);
      ASSERT_GT(bytes.size(), 1000u);
      if (reference.empty()) reference = bytes;
      EXPECT_TRUE(bytes == reference) << order << " " << mode << " differs from the single-processor output";
    }
  }
}

TEST(BranchParallel, BranchUnitsWithSplitsEqualOneProcessorBitForBit) {
  // --units=branches with the first module's 3x3 convolution split in two: every branch, both
  // halves and the joins on alternating processors.
  const test::ScratchDir scratch;
  const std::vector<std::string> network = {"--graph=googlenet", "--units=branches", "--split=5:2",
                                            "--image-size=64"};
  std::vector<std::string> list = network;
  list.push_back("--list-layers");
  const CommandResult layers = run_program(CO_UP_BINARY, list, scratch.path());
  ASSERT_EQ(layers.exit_code, 0) << layers;
  const size_t count = lines(layers.out).size() - 1;
  ASSERT_EQ(count, 78u) << layers;  // 76 + a second half + its Concat
  std::string alternate;
  for (size_t u = 0; u < count; ++u) alternate += u % 2 == 0 ? 'L' : 'B';
  std::string reference;
  for (const std::string& order : {std::string(count, 'B'), alternate}) {
    for (const char* mode : {"switch", "pipeline"}) {
      const std::filesystem::path out = scratch / (std::string(mode) + "_" + order + ".npy");
      std::vector<std::string> args = network;
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
