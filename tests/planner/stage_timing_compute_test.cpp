// `co_up plan --stage-timing=runtime`: what the fit subtracts from each measured exit latency (the
// "compute ms" column) is the runtime model's own compute, a frame's stages one after another, so
// each exit adds at least its stage's profiled time to the exit before it (Eq. 8's concurrent
// stages would let a fast later stage add nothing, and the fitted costs would absorb the rest).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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


// Stage `stage`'s profiled time (ms) on `letter` in test::write_stage_profile at its faster
// level: a lower bound whichever level the fit runs at.
double own_ms(char letter, int stage) {
  const std::map<char, double> speed = {{'B', 4}, {'L', 1}, {'G', 2}};
  double us = 0;
  for (int u = 4 * stage; u < 4 * stage + 4; ++u) us += (u % 4 == 3 ? 2.0 : 40.0 + 10 * (u / 4)) / (speed.at(letter) * 2);
  return us / 1000;
}

TEST(StageTimingComputeTest, EachExitAddsItsStageToTheComputeTheFitSubtracts) {
  test::ScratchDir scratch;
  const std::filesystem::path platform = scratch.write("platform.json", test::three_on_one_platform('L', 'G'));
  const std::filesystem::path profile = test::write_stage_profile(scratch.path());
  for (const std::string fit_orders : {"BLG,LGB,GBL", "LBG,BGL,GLB"}) {
    SCOPED_TRACE(fit_orders);
    const std::vector<std::string> args = {
        "plan", "--platform=" + platform.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
        "--stage-plan=" + (kDir / "stage_plan.json").string(), "--profile=" + profile.string(),
        "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
        "--exit-labels=" + (kDir / "val_labels.npy").string(), "--objective=latency", "--top=1",
        "--stage-timing=runtime", "--fit-orders=" + fit_orders,
        "--input=" + (kDir / "test_images.npy").string(), "--input-scale=1/255",
        "--labels=" + (kDir / "test_labels.npy").string(), "--n=30"};
    const test::CommandResult r = test::run_program(CO_UP_BINARY, args, scratch.path());
    ASSERT_EQ(r.exit_code, 0) << r;
    const std::regex row(R"(^  ([BLG]{3}) +([012]) +\d+ +([0-9.]+) +([0-9.]+|-)$)");
    std::map<std::string, std::vector<double>> compute;  // order -> per exit
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_match(line, m, row)) compute[m[1]].push_back(std::stod(m[3]));
    }
    ASSERT_EQ(compute.size(), 3u) << r.out;
    for (const auto& [order, c] : compute) {
      ASSERT_EQ(c.size(), 3u) << order;
      EXPECT_GE(c[0], own_ms(order[0], 0) - 1e-3) << order;
      for (int k = 1; k < 3; ++k) {
        // Printed to 3 decimals: two roundings of at most 0.0005 each.
        EXPECT_GE(c[k] - c[k - 1], own_ms(order[k], k) - 1.1e-3)
            << order << ": exit " << k << " adds " << c[k] - c[k - 1] << " ms, stage " << k + 1
            << " alone is " << own_ms(order[k], k) << " ms\n" << r.out;
      }
    }
  }
}

}  // namespace
}  // namespace co_up
