// `co_up plan --stage-timing=runtime`: the runtime stage model fits each processor's measured /
// profiled compute by default (printed with the fitted costs; --fit-compute-scale says so
// explicitly); with --profiled-compute no scale is fitted; both at once are a one-line error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/exits/three_on_one.h"
#include "tests/planner/stage_profile.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = test::kMncDir;

class StageTimingComputeScaleCliTest : public ::testing::Test {
 protected:
  test::CommandResult plan(const std::string& extra) {
    return extra.empty() ? plan_with({}) : plan_with({extra});
  }
  test::CommandResult plan_with(const std::vector<std::string>& extra, bool runtime_timing = true) {
    std::vector<std::string> args = {
        "plan", "--platform=" + platform_.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
        "--stage-plan=" + (kDir / "stage_plan.json").string(), "--profile=" + profile_.string(),
        "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
        "--exit-labels=" + (kDir / "val_labels.npy").string(), "--objective=latency", "--top=1",
        "--stage-timing=runtime", "--input=" + (kDir / "test_images.npy").string(), "--input-scale=1/255",
        "--labels=" + (kDir / "test_labels.npy").string(), "--n=40"};
    if (!runtime_timing) std::erase(args, std::string("--stage-timing=runtime"));
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_program(CO_UP_BINARY, args, scratch_.path());
  }
  test::ScratchDir scratch_;
  std::filesystem::path platform_ = scratch_.write("platform.json", test::three_on_one_platform('L', 'G'));
  std::filesystem::path profile_ = test::write_stage_profile(scratch_.path());
};

// The scale's value (a fit, at least 1 by construction) is checked in stage_compute_scale_test;
// here: the command line fits one for every processor the stage plans use, each printed once.
void expect_a_scale_for_every_processor(const test::CommandResult& r) {
  ASSERT_EQ(r.exit_code, 0) << r;
  std::smatch m;
  const std::string out = r.out;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(; profiled compute x((?: [BLG] [0-9.]+)+)\n)"))) << r.out;
  const std::string scales = m[1];
  const std::regex entry(R"( ([BLG]) ([0-9.]+))");
  std::string letters;
  for (auto it = std::sregex_iterator(scales.begin(), scales.end(), entry); it != std::sregex_iterator(); ++it) {
    letters += (*it)[1].str();
  }
  std::sort(letters.begin(), letters.end());
  EXPECT_EQ(letters, "BGL") << scales;
}

TEST_F(StageTimingComputeScaleCliTest, ByDefaultAScaleIsFittedForEveryProcessor) {
  expect_a_scale_for_every_processor(plan(""));
}

TEST_F(StageTimingComputeScaleCliTest, TheExplicitFlagFitsTheSameScales) {
  expect_a_scale_for_every_processor(plan("--fit-compute-scale"));
}

TEST_F(StageTimingComputeScaleCliTest, WithProfiledComputeNoScaleIsFitted) {
  const test::CommandResult r = plan("--profiled-compute");
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("fitted (ms): run a sub-graph on B "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("profiled compute x"), std::string::npos) << r.out;
}

TEST_F(StageTimingComputeScaleCliTest, BothFlagsAreAOneLineError) {
  const test::CommandResult r = plan_with({"--fit-compute-scale", "--profiled-compute"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err,
            "co_up: error: --fit-compute-scale and --profiled-compute contradict each other: the compute scale is "
            "fitted by default; give --profiled-compute alone to fit the fixed costs only\n")
      << r;
}

TEST_F(StageTimingComputeScaleCliTest, EitherFlagWithoutRuntimeTimingIsAOneLineError) {
  for (const std::string flag : {"--fit-compute-scale", "--profiled-compute"}) {
    const test::CommandResult r = plan_with({flag}, false);
    EXPECT_EQ(r.exit_code, 2) << r;
    EXPECT_EQ(r.err, "co_up: error: " + flag +
                         " chooses how --stage-timing=runtime fits its model; add --stage-timing=runtime or drop it\n")
        << r;
  }
}

}  // namespace
}  // namespace co_up
