// `co_up plan --stage-timing=runtime` with a stage plan: the runtime model's run and boundary
// costs are fitted from switch-mode runs of the fit orders (one row per order and exit), the
// front's commands run in switch mode (the model is one frame in flight), and after --verify the
// prediction error is reported separately for held-out orders and fit orders, and for the plan's
// own points; bad fit orders are one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/exits/three_on_one.h"
#include "tests/planner/stage_profile.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = test::kMncDir;


class StageTimingRuntimeTest : public ::testing::Test {
 protected:
  std::vector<std::string> plan(const std::string& extra) {
    std::vector<std::string> args = {
        "plan", "--platform=" + platform_.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
        "--stage-plan=" + (kDir / "stage_plan.json").string(), "--profile=" + profile_.string(),
        "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
        "--exit-labels=" + (kDir / "val_labels.npy").string(), "--objective=latency", "--top=2",
        "--stage-timing=runtime", "--input=" + (kDir / "test_images.npy").string(), "--input-scale=1/255",
        "--labels=" + (kDir / "test_labels.npy").string(), "--n=40"};
    if (!extra.empty()) args.push_back(extra);
    return args;
  }
  test::ScratchDir scratch_;
  std::filesystem::path platform_ = scratch_.write("platform.json", test::three_on_one_platform('L', 'G'));
  std::filesystem::path profile_ = test::write_stage_profile(scratch_.path());
};

size_t count_matches(const std::string& text, const std::regex& re) {
  size_t n = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) n += std::regex_match(line, re) ? 1 : 0;
  return n;
}

TEST_F(StageTimingRuntimeTest, FitsOnTheRotationsAndReportsHeldOutError) {
  const test::CommandResult r = test::run_program(CO_UP_BINARY, plan("--verify"), scratch_.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  // 3 fit orders x 3 exits, each with its frame count; the frames of one order sum to --n.
  const std::regex fit_row(R"(^  (BLG|LGB|GBL) +[012] +(\d+) +[0-9.]+ +([0-9.]+|-)$)");
  EXPECT_EQ(count_matches(r.out, fit_row), 9u) << r.out;
  EXPECT_NE(r.out.find("fitted (ms): run a sub-graph on B "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; a boundary to B "), std::string::npos) << r.out;
  // The printed commands run one frame at a time, as the model assumes.
  EXPECT_EQ(r.out.find("--mode=pipeline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--mode=switch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latency prediction error of the runtime model:\n  held out (order not among the fit orders):"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  fit orders:"), std::string::npos) << r.out;
  // The single-processor baseline (BBB, ...) is never a fit order: at least one held-out point.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(held out \(order not among the fit orders\): mean \|error\| [0-9.]+ %, max [0-9.]+ % over \d+ points? \(#)")))
      << r.out;
  // The plan's own points (--top=2: #1 and #2), without the baselines verified after them.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  the plan's points \(baselines left out\): mean \|error\| [0-9.]+ %, max [0-9.]+ % over [12] points? \(#1(,2)?\)\n)")))
      << r.out;
}

TEST_F(StageTimingRuntimeTest, GivenFitOrdersAreTheOnesRun) {
  const test::CommandResult r = test::run_program(CO_UP_BINARY, plan("--fit-orders=BGL,GLB,LBG"), scratch_.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(count_matches(r.out, std::regex(R"(^  (BGL|GLB|LBG) +[012] +\d+ .*$)")), 9u) << r.out;
  EXPECT_EQ(count_matches(r.out, std::regex(R"(^  (BLG|LGB|GBL) +[012] +\d+ .*$)")), 0u) << r.out;
}

TEST_F(StageTimingRuntimeTest, BadFitOrdersAreOneLineErrors) {
  const test::CommandResult r = test::run_program(CO_UP_BINARY, plan("--fit-orders=BL,LGB"), scratch_.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: --fit-orders: 'BL' must give each of the 3 stages a processor of the profile (BLG)\n");
  const test::CommandResult x = test::run_program(CO_UP_BINARY, plan("--fit-orders=BLX"), scratch_.path());
  EXPECT_EQ(x.exit_code, 2) << x;
  EXPECT_EQ(x.err, "co_up: error: --fit-orders: 'BLX' must give each of the 3 stages a processor of the profile (BLG)\n");
}

TEST_F(StageTimingRuntimeTest, WithoutALabelledSetIsAOneLineError) {
  std::vector<std::string> args = plan("");
  std::erase_if(args, [](const std::string& a) { return a.rfind("--labels=", 0) == 0; });
  const test::CommandResult r = test::run_program(CO_UP_BINARY, args, scratch_.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.out, "");  // refused before any run
  EXPECT_EQ(r.err,
            "co_up: error: --stage-timing=runtime fits its dispatch and hand-off costs by running the fit orders on a "
            "labelled set: give --input=TEST.npy (with --input-scale=1/255 for 8-bit images) and "
            "--labels=TEST_LABELS.npy\n");
}

TEST_F(StageTimingRuntimeTest, AnUnknownTimingIsAOneLineError) {
  std::vector<std::string> args = plan("");
  args.push_back("--stage-timing=queue");
  const test::CommandResult r = test::run_program(CO_UP_BINARY, args, scratch_.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err,
            "co_up: error: --stage-timing='queue' must be 'layers' (the paper's Eq. 8), 'stages' (whole sub-graphs) or "
            "'runtime' (stages one after another plus measured dispatch and hand-offs)\n");
}

}  // namespace
}  // namespace co_up
