// co_up --list-regions and co_up plan with parallel regions, end to end: the regions printed,
// the hybrid plan and its one-line errors (bad --objective, unreachable or malformed constraints).
// Planning runs no pipeline, so these are not in the ThreadSanitizer suite (para_pipe_cli_test
// runs the branch-parallel mappings there).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/layer_profile.h"
#include "tests/cli/googlenet_ops.h"
#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using test::CommandResult;
using test::lines;
using test::run_program;

// googlenet_ops_profile() in a file of `scratch`.
std::filesystem::path googlenet_profile(const test::ScratchDir& scratch) {
  const std::filesystem::path file = scratch / "googlenet_ops.json";
  planner::write_layer_profile(file, test::googlenet_ops_profile());
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
  EXPECT_THAT(r.out, HasSubstr("Pareto front of throughput, latency and energy, switch, pipeline and overlap mode"));
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
      {{"--objective=pareto", "--tune=0"}, "co_up: error: --tune='0' must be a positive number\n"},
      {{"--objective=pareto", "--tune=soon"}, "co_up: error: --tune='soon' must be a positive number\n"},
      {{"--objective=energy", "--tune=30"},
       "co_up: error: --tune measures throughput and latency, not energy; use it with --objective=latency, "
       "throughput or pareto\n"},
      {{"--objective=pareto", "--tune-candidates=4"},
       "co_up: error: --tune-candidates needs --tune=SECONDS (the time the measured search may take)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-candidates=-1"},
       "co_up: error: --tune-candidates='-1' must be a whole number >= 0 (mappings measured)\n"},
      {{"--objective=latency", "--tune=30", "--tune-target=100,5"},
       "co_up: error: --tune-target is a point of the Pareto front; use it with --objective=pareto\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=100"},
       "co_up: error: --tune-target='100' must be FPS,MS (e.g. --tune-target=120,9.5) or gains over the best single processor "
       "THROUGHPUTx,LATENCYx (e.g. --tune-target=1.8x,1.3x)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=1.8x,9.5"},
       "co_up: error: --tune-target='1.8x,9.5' must be FPS,MS (e.g. --tune-target=120,9.5) or gains over the best single processor "
       "THROUGHPUTx,LATENCYx (e.g. --tune-target=1.8x,1.3x)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=1.8x,"},
       "co_up: error: --tune-target='1.8x,' must be FPS,MS (e.g. --tune-target=120,9.5) or gains over the best single processor "
       "THROUGHPUTx,LATENCYx (e.g. --tune-target=1.8x,1.3x)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=0x,1.3x"},
       "co_up: error: --tune-target='0x,1.3x': '0x' must be a positive number followed by x (1.8x: 1.8 times better "
       "than the best single processor)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=1.8x,fastx"},
       "co_up: error: --tune-target='1.8x,fastx': 'fastx' must be a positive number followed by x (1.8x: 1.8 times "
       "better than the best single processor)\n"},
      {{"--objective=pareto", "--tune=30", "--tune-target=120,-2"},
       "co_up: error: --tune-target='120,-2': '-2' must be a positive number\n"},
      {{"--objective=pareto", "--tune-target=1.8x,1.3x"},
       "co_up: error: --tune-target needs --tune=SECONDS (the time the measured search may take)\n"},
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

}  // namespace
}  // namespace co_up
