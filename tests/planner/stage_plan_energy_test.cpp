// `co_up plan --objective=energy` with a stage plan on a profile without measured power: each
// processor's busy power comes from the platform's power model (P = alpha V^2 f + beta V at the
// profiled level), as the layer planner's cost model does; without a model it is a one-line
// error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/planner/stage_profile.h"
#include "tests/plugins/run_command.h"

namespace co_up {
namespace {

const std::filesystem::path kDir = test::kMncDir;

class StagePlanEnergyTest : public ::testing::Test {
 protected:
  // The synthetic profile without its measured power_w, with or without power models.
  std::filesystem::path profile(bool with_model) {
    const std::filesystem::path file = test::write_stage_profile(scratch_.path());
    nlohmann::json p = nlohmann::json::parse(test::read_file(file));
    p.erase("power_w");
    const double alpha[] = {1.0, 0.2, 0.5};
    size_t i = 0;
    for (nlohmann::json& proc : p["platform"]["processors"]) {
      proc["voltages_mv"] = {900, 1100};
      if (with_model) proc["power_model"] = {{"alpha", alpha[i]}, {"beta", 0.1}};
      ++i;
    }
    std::ofstream(file) << p.dump(1);
    return file;
  }
  test::CommandResult plan(const std::filesystem::path& profile_file) {
    return test::run_program(
        CO_UP_BINARY,
        {"plan", "--model=" + (kDir / "multi_exit.onnx").string(), "--stage-plan=" + (kDir / "stage_plan.json").string(),
         "--profile=" + profile_file.string(), "--exit-logits=" + (kDir / "val_exit_logits.npy").string(),
         "--exit-labels=" + (kDir / "val_labels.npy").string(), "--objective=energy", "--top=2"},
        scratch_.path());
  }
  test::ScratchDir scratch_;
};

TEST_F(StagePlanEnergyTest, ThePowerModelGivesEveryPointAnEnergy) {
  const test::CommandResult r = plan(profile(true));
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out.find("energy n/a"), std::string::npos) << r.out;
  // The single-processor baseline with the least energy is B at level 1 (B is 4x faster than L,
  // which outweighs its power): 1.0 * 0.9^2 * 1 GHz + 0.1 * 0.9 = 0.90 W, so mJ / ms = 0.90.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(single processor +([0-9.]+) ms +([0-9.]+) mJ/frame.*\n.*--order=BBB .*--frequency=1-1-1)")))
      << r.out;
  const double ms = std::stod(m[1]), mj = std::stod(m[2]);
  EXPECT_NEAR(mj / ms, 0.90, 0.01) << r.out;
}

TEST_F(StagePlanEnergyTest, WithoutPowerOrAModelIsAOneLineError) {
  const std::filesystem::path file = profile(false);
  const test::CommandResult r = plan(file);
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: --objective=energy needs each processor's power in profile '" + file.string() +
                       "' (power_w, or a platform power_model with a DVFS table; profile with power, or use "
                       "--objective=latency|accuracy|pareto)\n");
}

}  // namespace
}  // namespace co_up
