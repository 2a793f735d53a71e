// An ONNX transformer in a workload, the way a user drives it: `co_up profile --workload`, `co_up
// plan --workload --verify --out=DIR`, then `co_up --workload` on every written plan, with a
// workload file whose model and input paths are relative to the file (not to where co_up runs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class WorkloadOnnxCli : public ::testing::Test {
 protected:
  // The workload and the model lie in the scratch directory's "models" folder.
  test::Exit run(std::vector<std::string> args) {
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, dir_.path()), dir_.path());
  }
  void SetUp() override {
    // co_up inherits the working directory: the scratch directory, not the model's folder.
    fs::current_path(dir_.path());
    fs::create_directories(dir_ / "models");
    fs::copy_file(fs::path(CO_UP_ONNX_FIXTURES) / "vit_tiny.onnx", dir_ / "models/vit_tiny.onnx");
    fs::copy_file(fs::path(CO_UP_ONNX_FIXTURES) / "vit_tiny_input.npy", dir_ / "models/vit_tiny_input.npy");
    dir_.write("models/w.json", R"({"networks": [
      {"name": "sq", "graph": "squeezenet", "image_size": 32, "frames": 6},
      {"name": "vit", "model": "vit_tiny.onnx", "input": "vit_tiny_input.npy", "frames": 6}]})");
  }
  void TearDown() override { fs::current_path(previous_); }
  const fs::path previous_ = fs::current_path();
  test::ScratchDir dir_;
};

TEST_F(WorkloadOnnxCli, ProfilePlanVerifyAndEveryWrittenPlanRunWithTheTransformer) {
  const test::Exit profile = run({"profile", "--workload=models/w.json", "--profile-out=p.json", "--processors=BL",
                                  "--repetitions=1", "--coruns=2"});
  ASSERT_EQ(profile.code, 0) << profile.out << profile.err;
  const test::Exit plan = run({"plan", "--workload=models/w.json", "--profile=p.json", "--out=plans", "--verify"});
  ASSERT_EQ(plan.code, 0) << plan.out << plan.err;
  for (const char* name : {"alone-best", "band-greedy", "balanced", "hetero2pipe-h", "hetero2pipe"}) {
    SCOPED_TRACE(name);
    // --verify ran the plan: every request of both networks completed.
    std::smatch row;
    const std::string out = plan.out;
    ASSERT_TRUE(std::regex_search(out, row, std::regex(std::string("\n") + name + " +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9]+)/([0-9]+)\n")))
        << out;
    EXPECT_EQ(row[1].str(), "12");
    EXPECT_EQ(row[2].str(), "12");
    // The written plan runs from elsewhere: its model and input paths still name the files.
    const std::string written = "plans/" + std::string(name) + ".json";
    const test::Exit x = run({"--workload=" + written, "--profile-out=r.json"});
    ASSERT_EQ(x.code, 0) << x.out << x.err;
    const nlohmann::json r = nlohmann::json::parse(test::read_file(dir_ / "r.json"));
    ASSERT_EQ(r["networks"].size(), 2u);
    for (const nlohmann::json& n : r["networks"]) {
      EXPECT_EQ(n["frames_completed"], 6) << n["name"];
      EXPECT_FALSE(n["interrupted"].get<bool>()) << n["name"];
    }
  }
}

TEST_F(WorkloadOnnxCli, WrittenPlansNameTheModelRelativeToThemselvesAndMoveWithIt) {
  const test::Exit profile = run({"profile", "--workload=models/w.json", "--profile-out=p.json", "--processors=BL",
                                  "--repetitions=1", "--coruns=1"});
  ASSERT_EQ(profile.code, 0) << profile.out << profile.err;
  const test::Exit plan = run({"plan", "--workload=models/w.json", "--profile=p.json", "--out=site/plans"});
  ASSERT_EQ(plan.code, 0) << plan.out << plan.err;
  const nlohmann::json written = nlohmann::json::parse(test::read_file(dir_ / "site/plans/hetero2pipe.json"));
  for (const nlohmann::json& n : written["networks"]) {
    if (n["name"] != "vit") continue;
    EXPECT_EQ(n["model"], "../../models/vit_tiny.onnx");
    EXPECT_EQ(n["input"], "../../models/vit_tiny_input.npy");
  }
  // The plans and the models moved together, one folder deeper: the plan still finds its model.
  fs::create_directories(dir_ / "moved/site");
  fs::rename(dir_ / "models", dir_ / "moved/models");
  fs::rename(dir_ / "site/plans", dir_ / "moved/site/plans");
  const test::Exit x = run({"--workload=moved/site/plans/hetero2pipe.json", "--profile-out=r.json"});
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  const nlohmann::json r = nlohmann::json::parse(test::read_file(dir_ / "r.json"));
  for (const nlohmann::json& n : r["networks"]) EXPECT_EQ(n["frames_completed"], 6) << n["name"];
}

TEST_F(WorkloadOnnxCli, PlansFromTheShortFormNameTheModelsRelativeToThemselves) {
  // The short form's paths are relative to the working directory, not to a file.
  const std::string short_form =
      "models/vit_tiny.onnx:input=models/vit_tiny_input.npy:frames=4;squeezenet:image_size=32:frames=4";
  const test::Exit profile = run({"profile", "--workload=" + short_form, "--profile-out=p.json", "--processors=BL",
                                  "--repetitions=1", "--coruns=1"});
  ASSERT_EQ(profile.code, 0) << profile.out << profile.err;
  const test::Exit plan = run({"plan", "--workload=" + short_form, "--profile=p.json", "--out=site/plans"});
  ASSERT_EQ(plan.code, 0) << plan.out << plan.err;
  const nlohmann::json written = nlohmann::json::parse(test::read_file(dir_ / "site/plans/hetero2pipe.json"));
  bool found = false;
  for (const nlohmann::json& n : written["networks"]) {
    if (!n.contains("model")) continue;
    found = true;
    EXPECT_EQ(n["model"], "../../models/vit_tiny.onnx");
    EXPECT_EQ(n["input"], "../../models/vit_tiny_input.npy");
  }
  EXPECT_TRUE(found) << written.dump();
  const test::Exit x = run({"--workload=site/plans/hetero2pipe.json", "--profile-out=r.json"});
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  const nlohmann::json r = nlohmann::json::parse(test::read_file(dir_ / "r.json"));
  for (const nlohmann::json& n : r["networks"]) EXPECT_EQ(n["frames_completed"], 4) << n["name"];
}

TEST_F(WorkloadOnnxCli, AMissingModelIsOneLineNamingTheFileAsResolved) {
  dir_.write("models/bad.json", R"({"networks": [{"name": "vit", "model": "nosuch.onnx", "order": "B"}]})");
  const test::Exit x = run({"--workload=models/bad.json"});
  EXPECT_EQ(x.code, 2);
  EXPECT_THAT(x.err, HasSubstr("workload network 'vit': "));
  EXPECT_THAT(x.err, HasSubstr((dir_ / "models/nosuch.onnx").lexically_normal().string()));
  EXPECT_EQ(std::count(x.err.begin(), x.err.end(), '\n'), 1) << x.err;
}

}  // namespace
}  // namespace co_up
