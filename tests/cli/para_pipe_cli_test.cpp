// co_up --list-regions and co_up plan with parallel regions, end to end: the regions printed,
// the hybrid plan, its one-line errors (bad --objective, unreachable or malformed constraints),
// and branch-parallel mappings computing the single-processor output bit for bit in both modes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/parallel_regions.h"
#include "graph/passes.h"
#include "graph/zoo/zoo.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using test::CommandResult;
using test::run_program;

constexpr int kImageSize = 64;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// GoogLeNet with one unit per convolution, as co_up builds it for --units=ops.
graph::Graph googlenet_ops() {
  graph::SeededWeights weights(1);
  graph::ZooOptions options;
  options.image_size = kImageSize;
  graph::Graph g = graph::build_zoo_graph("googlenet", weights, options);
  graph::optimize_for_inference(g);
  graph::assign_op_units(g);
  return g;
}

// A synthetic B/L profile with GoogLeNet's --units=ops layer count, so that `co_up plan` builds
// the network and finds its regions without profiling here.
std::filesystem::path googlenet_profile(const test::ScratchDir& scratch) {
  planner::SyntheticSpec spec;
  spec.layers = googlenet_ops().layer_count();
  spec.processors = 2;
  spec.shared_hosts = false;
  spec.handoff_us = 30;
  spec.graph = "googlenet";
  planner::LayerProfile p = planner::make_synthetic_profile(spec);
  p.network.units = "ops";
  p.network.image_size = kImageSize;
  const std::filesystem::path file = scratch / "googlenet_ops.json";
  planner::write_layer_profile(file, p);
  return file;
}

TEST(ListRegions, GoogLeNetPrintsItsNineModules) {
  const test::ScratchDir scratch;
  const CommandResult r = run_program(CO_UP_BINARY, {"--graph=googlenet", "--list-regions"}, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 10u) << r;
  EXPECT_THAT(out[0], StartsWith("inception_3a: fork pool2/3x3_s2 -> join inception_3a/output, 4 branches, "));
  EXPECT_THAT(out[0], HasSubstr("[inception_3a/1x1, 1 nodes, layers 2-2, "));
  EXPECT_THAT(out[8], StartsWith("inception_5b: fork inception_5a/output -> join inception_5b/output, 4 branches, "));
  EXPECT_EQ(out[9], "9 parallel regions");
  EXPECT_EQ(r.err, "");
}

TEST(PlanRegions, LatencyPlanUsesTheHybridSearch) {
  const test::ScratchDir scratch;
  const std::filesystem::path profile = googlenet_profile(scratch);
  const CommandResult r = run_program(
      CO_UP_BINARY, {"plan", "--profile=" + profile.string(), "--objective=latency", "--top=2"}, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("9 parallel regions: hybrid para/pipe search, DAG cost model"));
  EXPECT_THAT(r.out, HasSubstr("co_up --graph=googlenet --units=ops --image-size=64 --order="));
  EXPECT_THAT(r.out, HasSubstr("--mode=switch"));
  // Same seed, same plan.
  const CommandResult again = run_program(
      CO_UP_BINARY, {"plan", "--profile=" + profile.string(), "--objective=latency", "--top=2"}, scratch.path());
  EXPECT_EQ(again.out, r.out);
}

TEST(PlanRegions, ParetoFrontListsBothModesWithCommands) {
  const test::ScratchDir scratch;
  const std::filesystem::path profile = googlenet_profile(scratch);
  const CommandResult r = run_program(
      CO_UP_BINARY, {"plan", "--profile=" + profile.string(), "--objective=pareto", "--top=20"}, scratch.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("Pareto front of throughput, latency and energy, switch and pipeline mode"));
  EXPECT_THAT(r.out, HasSubstr("--mode=pipeline"));
  EXPECT_THAT(r.out, HasSubstr(" fps "));
  EXPECT_THAT(r.out, HasSubstr(" ms "));
}

TEST(PlanRegions, ErrorsAreOneLine) {
  const test::ScratchDir scratch;
  const std::filesystem::path profile = googlenet_profile(scratch);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--objective=fastest"},
       "co_up: error: --objective='fastest' must be throughput, latency, energy or pareto\n"},
      {{"--objective=throughput", "--min-fps=abc"}, "co_up: error: --min-fps='abc' must be a positive number\n"},
      {{"--objective=latency", "--max-latency-ms=-1"},
       "co_up: error: --max-latency-ms='-1' must be a positive number\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"plan", "--profile=" + profile.string()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CommandResult r = run_program(CO_UP_BINARY, args, scratch.path());
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_EQ(r.err, c.message) << r;
  }
  const CommandResult r = run_program(
      CO_UP_BINARY, {"plan", "--profile=" + profile.string(), "--objective=throughput", "--min-fps=1e9"}, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_THAT(r.err, StartsWith("co_up: error: no plan reaches --min-fps=1e+09: the closest predicts "));
  EXPECT_THAT(r.err, HasSubstr(" (relax the constraint)\n"));
  EXPECT_EQ(lines(r.err).size(), 1u) << r;
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
