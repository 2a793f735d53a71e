// `co_up plan` with a stage plan, end to end on the trained multi-exit fixture and a synthetic
// per-op profile: the plan is reproducible for a seed, prints its baselines, and refuses an
// objective that does not apply with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/scratch_dir.h"
#include "tests/planner/stage_profile.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = test::kMncDir;
std::filesystem::path write_profile(const std::filesystem::path& dir) { return test::write_stage_profile(dir); }

std::vector<std::string> plan_args(const std::filesystem::path& profile, const std::string& seed) {
  return {"plan", "--model=" + (kDir / "multi_exit.onnx").string(), "--stage-plan=" + (kDir / "stage_plan.json").string(),
          "--profile=" + profile.string(), "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
          "--exit-labels=" + (kDir / "val_labels.npy").string(), "--seed=" + seed};
}

TEST(StagePlanCli, PlanIsReproduciblePerSeedAndPrintsBaselines) {
  test::ScratchDir scratch;
  const std::filesystem::path profile = write_profile(scratch.path());
  const test::CommandResult a = test::run_program(CO_UP_BINARY, plan_args(profile, "7"), scratch.path());
  ASSERT_EQ(a.exit_code, 0) << a;
  const test::CommandResult b = test::run_program(CO_UP_BINARY, plan_args(profile, "7"), scratch.path());
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("  1. "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("  single processor "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("  static split "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("--stage-plan="), std::string::npos) << a.out;
}

TEST(StagePlanCli, ObjectivesThatDoNotApplyAreOneLineErrors) {
  test::ScratchDir scratch;
  std::vector<std::string> args = plan_args(write_profile(scratch.path()), "1");
  args.push_back("--objective=throughput");
  const test::CommandResult r = test::run_program(CO_UP_BINARY, args, scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: --objective='throughput' with a stage plan must be latency, energy, accuracy or pareto\n");
}

TEST(StagePlanCli, BadStagePlansAreOneLineErrorsWithExitCode2) {
  test::ScratchDir scratch;
  const std::string model = "--model=" + (kDir / "multi_exit.onnx").string();
  const test::CommandResult sum = test::run_program(
      CO_UP_BINARY, {model, "--stages=P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,0.4;I:1,1,1/0,1,1/0,0,0", "--list-layers"},
      scratch.path());
  EXPECT_EQ(sum.exit_code, 2) << sum;
  EXPECT_EQ(sum.err, "co_up: error: --stages: P column 3 (layer 3) sums to 0.9, not 1; a layer's fractions over the "
                     "stages must sum to 1 (or the last stage's be 1: it computes the whole layer)\n");
  const test::CommandResult later = test::run_program(
      CO_UP_BINARY, {model, "--stages=P:0.25,0.25,0.25/0.25,0.25,0.25/0.5,0.5,0.5;I:1,1,1/0,1,1/1,0,0", "--order=BLB"},
      scratch.path());
  EXPECT_EQ(later.exit_code, 2) << later;
  EXPECT_EQ(later.err, "co_up: error: --stages: I[3][1] = 1 shares stage 3's features with a later stage, but it is "
                       "the last stage; its row must be all 0\n");
  const test::CommandResult zoo =
      test::run_program(CO_UP_BINARY, {"--graph=alexnet", "--stages=P:1;I:0", "--list-layers"}, scratch.path());
  EXPECT_EQ(zoo.exit_code, 2) << zoo;
  EXPECT_EQ(zoo.err, "co_up: error: --stages and --stage-plan apply to --model (a multi-exit ONNX model with outputs "
                     "exit0, exit1, ...)\n");
}

}  // namespace
}  // namespace co_up
