// `co_up plan --verify` with a stage plan: the front's points and the baselines run through the
// run command on a few labelled test images (three processors on one core, cpu-reference), one
// row each with predicted and measured mean latency and accuracy; a row's measured accuracy and
// exit shares are what running its order and thresholds with co_up gives; the labelled set is
// required with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/planner/stage_profile.h"
#include "tests/exits/three_on_one.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = test::kMncDir;
constexpr int kFrames = 20;

struct Row {
  std::string order, thresholds, source;
  double predicted_ms = 0, measured_ms = 0, predicted_acc = 0, measured_acc = 0;
  std::vector<int> shares;
};

std::vector<Row> verify_rows(const std::string& out) {
  const std::regex row(R"(^ +\d+ +([A-Z]{3}) +(\S+) +([0-9.]+) +([0-9.]+) +[+-][0-9.]+% +([0-9.]+) % +([0-9.]+) % +(\d+)% +(\d+)% +(\d+)%(?: +\[(.*)\])?$)");
  std::vector<Row> rows;
  std::istringstream lines(out.substr(out.find("\nverify:") == std::string::npos ? out.size() : out.find("\nverify:")));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    rows.push_back({m[1], m[2], m[10], std::stod(m[3]), std::stod(m[4]), std::stod(m[5]), std::stod(m[6]),
                    {std::stoi(m[7]), std::stoi(m[8]), std::stoi(m[9])}});
  }
  return rows;
}

class StagePlanVerifyTest : public ::testing::Test {
 protected:
  std::vector<std::string> plan(bool labelled) {
    std::vector<std::string> args = {
        "plan", "--platform=" + platform_.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
        "--stage-plan=" + (kDir / "stage_plan.json").string(), "--profile=" + profile_.string(),
        "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
        "--exit-labels=" + (kDir / "val_labels.npy").string(), "--objective=latency", "--top=2", "--verify",
        "--input=" + (kDir / "test_images.npy").string(), "--input-scale=1/255", "--n=" + std::to_string(kFrames)};
    if (labelled) args.push_back("--labels=" + (kDir / "test_labels.npy").string());
    return args;
  }
  test::ScratchDir scratch_;
  std::filesystem::path platform_ = scratch_.write("platform.json", test::three_on_one_platform('L', 'G'));
  std::filesystem::path profile_ = test::write_stage_profile(scratch_.path());
};

TEST_F(StagePlanVerifyTest, EveryPointAndBaselineIsMeasuredOnTheLabelledSet) {
  const test::CommandResult r = test::run_program(CO_UP_BINARY, plan(true), scratch_.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::vector<Row> rows = verify_rows(r.out);
  ASSERT_EQ(rows.size(), 4u) << r;  // --top=2, the single processor and the static split
  EXPECT_EQ(rows[2].source, "single processor");
  EXPECT_EQ(rows[3].source, "static split");
  EXPECT_EQ(rows[3].thresholds, "off,off");
  EXPECT_EQ(rows[3].shares, (std::vector<int>{0, 0, 100}));
  for (const Row& row : rows) {
    EXPECT_GT(row.measured_ms, 0) << row.order;
    EXPECT_GT(row.predicted_ms, 0) << row.order;
    EXPECT_EQ(row.shares[0] + row.shares[1] + row.shares[2] >= 99, true) << row.order;
  }
  // The first point's measured accuracy and exits are what co_up itself gives for its command.
  const Row& first = rows[0];
  ASSERT_NE(first.thresholds, "off,off") << "the front's fastest point stops frames early";
  const std::filesystem::path profile = scratch_ / "run.json";
  const test::CommandResult run = test::run_program(
      CO_UP_BINARY,
      {"--platform=" + platform_.string(), "--model=" + (kDir / "multi_exit.onnx").string(),
       "--stage-plan=" + (kDir / "stage_plan.json").string(), "--order=" + first.order, "--mode=pipeline",
       "--exit=softmax-max>=" + first.thresholds, "--input=" + (kDir / "test_images.npy").string(),
       "--input-scale=1/255", "--labels=" + (kDir / "test_labels.npy").string(), "--n=" + std::to_string(kFrames),
       "--profile-out=" + profile.string()},
      scratch_.path());
  ASSERT_EQ(run.exit_code, 0) << run;
  const nlohmann::json exits = nlohmann::json::parse(test::read_file(profile)).at("exits");
  EXPECT_NEAR(first.measured_acc, 100 * exits.at("accuracy").get<double>(), 0.005);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(first.shares[k], 100.0 * exits.at("exits").at(k).at("frames").get<double>() / kFrames, 0.5) << k;
  }
}

TEST_F(StagePlanVerifyTest, WithoutLabelsIsAOneLineError) {
  const test::CommandResult r = test::run_program(CO_UP_BINARY, plan(false), scratch_.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.out, "");  // refused before the search
  EXPECT_EQ(r.err,
            "co_up: error: --verify with a stage plan runs the front on a labelled test set: give --input=TEST.npy "
            "(with --input-scale=1/255 for 8-bit images) and --labels=TEST_LABELS.npy\n");
}

}  // namespace
}  // namespace co_up
