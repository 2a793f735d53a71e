// `co_up plan` end to end: the real binary on synthetic profile files; exit codes, one-line
// errors, and command lines that co_up itself accepts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using test::Exit;

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("co_up_plan_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  Exit run(const std::vector<std::string>& args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_), dir_);
  }

  fs::path write_profile(const planner::SyntheticSpec& spec) {
    const fs::path file = dir_ / "profile.json";
    planner::write_layer_profile(file, planner::make_synthetic_profile(spec));
    return file;
  }

  void expect_input_error(const Exit& x, const std::string& needle) {
    EXPECT_EQ(x.code, 2) << x.out << x.err;
    EXPECT_THAT(x.err, HasSubstr("co_up: error: "));
    EXPECT_THAT(x.err, HasSubstr(needle));
    EXPECT_EQ(std::count(x.err.begin(), x.err.end(), '\n'), 1) << x.err;
  }

  fs::path dir_;
};

// Every line of the plan that starts with "co_up --" is a command line.
std::vector<std::string> command_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find("co_up --");
    if (at != std::string::npos) lines.push_back(line.substr(at));
  }
  return lines;
}

// "co_up --graph=alexnet --order=<8 of B, L, G> --mode=pipeline|switch" and nothing else.
bool looks_runnable(const std::string& line) {
  const std::string head = "co_up --graph=alexnet --order=";
  if (line.rfind(head, 0) != 0 || line.size() < head.size() + 8) return false;
  const std::string order = line.substr(head.size(), 8);
  if (order.find_first_not_of("BLG") != std::string::npos) return false;
  const std::string tail = line.substr(head.size() + 8);
  return tail == " --mode=pipeline" || tail == " --mode=switch";
}

TEST_F(PlanCli, PrintsRunnableCommandLinesForEachObjective) {
  planner::SyntheticSpec spec;
  spec.layers = 8;
  spec.processors = 3;
  spec.graph = "alexnet";  // a zoo network, so the printed commands name a real one
  const fs::path file = write_profile(spec);
  for (const char* objective : {"throughput", "latency", "pareto"}) {
    const Exit x = run({"plan", "--profile=" + file.string(), std::string("--objective=") + objective, "--top=3"});
    ASSERT_EQ(x.code, 0) << objective << "\n" << x.out << x.err;
    EXPECT_THAT(x.out, HasSubstr("baselines:"));
    EXPECT_THAT(x.out, HasSubstr("single processor"));
    EXPECT_THAT(x.out, HasSubstr("HEFT"));
    const auto lines = command_lines(x.out);
    ASSERT_GE(lines.size(), 3u) << x.out;  // >= 1 ranked + 2 baselines
    EXPECT_LE(lines.size(), 5u) << x.out;
    for (const std::string& line : lines) EXPECT_TRUE(looks_runnable(line)) << line;
    if (std::string(objective) == "latency") {
      EXPECT_THAT(lines[0], HasSubstr("--mode=switch"));
    }
  }
  // A printed command line runs (B and L are this host's CPU halves; G would need OpenCL).
  spec.processors = 2;
  const Exit plan = run({"plan", "--profile=" + write_profile(spec).string(), "--top=1"});
  std::istringstream words(command_lines(plan.out).at(0));
  std::vector<std::string> args;
  for (std::string w; words >> w;) {
    if (w != "co_up") args.push_back(w);
  }
  args.push_back("--image-size=64");
  args.push_back("--n=1");
  const Exit ran = run(args);
  EXPECT_EQ(ran.code, 0) << ran.out << ran.err;
}

TEST_F(PlanCli, LevelsBecomeFrequencyOptions) {
  planner::SyntheticSpec spec;
  spec.layers = 6;
  spec.processors = 2;
  spec.levels = 3;
  spec.power = true;
  const fs::path file = write_profile(spec);
  const Exit x = run({"plan", "--profile=" + file.string(), "--objective=energy", "--top=2", "--seed=9"});
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  EXPECT_THAT(x.out, HasSubstr("--frequency='{"));
  EXPECT_THAT(x.out, HasSubstr("mJ/frame"));
  const Exit again = run({"plan", "--profile=" + file.string(), "--objective=energy", "--top=2", "--seed=9"});
  EXPECT_EQ(again.out, x.out) << "deterministic for a seed";
}

TEST_F(PlanCli, BadInputExitsTwoWithOneLine) {
  planner::SyntheticSpec spec;
  spec.graph = "alexnet";
  const fs::path file = write_profile(spec);
  expect_input_error(run({"plan"}), "--profile=FILE");
  expect_input_error(run({"plan", "--profile=" + (dir_ / "none.json").string()}), "none.json");
  expect_input_error(run({"plan", "--profile=" + file.string(), "--objective=speed"}), "--objective='speed'");
  expect_input_error(run({"plan", "--profile=" + file.string(), "--objective=energy"}), "power");
  expect_input_error(run({"plan", "--profile=" + file.string(), "--graph=mobilenet"}), "--graph=alexnet");
  // alexnet has 8 layer units, this profile 8 as well; one with 7 does not match.
  spec.layers = 7;
  const fs::path short_file = write_profile(spec);
  expect_input_error(run({"plan", "--profile=" + short_file.string(), "--graph=alexnet"}), "7 layer units");
  std::ofstream(dir_ / "bad.json") << "{\"format\": \"co_up-layer-profile\", \"version\": 1, ";
  expect_input_error(run({"plan", "--profile=" + (dir_ / "bad.json").string()}), "not valid JSON");
  expect_input_error(run({"plan", "--profile=" + file.string(), "--top=0"}), "--top");
}

}  // namespace
}  // namespace co_up
