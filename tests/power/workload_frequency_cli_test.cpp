// `co_up --workload --frequency`: levels for the whole run (min, max, {{l-b-g}}) set at setup on a
// simulated sysfs tree, recorded in the workload profile and restored at exit; per-layer and
// per-sub-graph levels (one network's order) refused in one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/spawn_process.h"
#include "tests/power/sim_sysfs.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using test::get;
using test::SimSysfs;

class WorkloadFrequencyCliTest : public ::testing::Test {
 protected:
  WorkloadFrequencyCliTest() : sim_("wlfreq") {
    sim_.add_standard();
    platform_ = sim_.write_platform().string();
  }
  test::Exit run(const std::string& frequency, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        "--workload=squeezenet:BBBBBLLLLL:image_size=32:frames=2;mobilenet:LLLLLLLLLLLLLL:image_size=32:frames=2",
        "--platform=" + platform_, "--sysfs-root=" + sim_.root().string(), "--frequency=" + frequency};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::finish_process(test::spawn_process(CO_UP_BINARY, args, sim_.root()), sim_.root());
  }
  void expect_restored() {
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy1/scaling_min_freq"), "408000");
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy1/scaling_max_freq"), "1008000");
    EXPECT_EQ(get(sim_ / "class/devfreq/gpu/governor"), "simple_ondemand");
  }
  void expect_one_line_error(const test::Exit& e, const std::string& line) {
    EXPECT_EQ(e.code, 2) << e;
    EXPECT_EQ(e.err, "co_up: error: " + line + "\n") << e;
  }
  SimSysfs sim_;
  std::string platform_;
};

TEST_F(WorkloadFrequencyCliTest, WholeRunLevelsSetAtSetupRecordedAndRestored) {
  const std::string profile = (sim_.root() / "w.json").string();
  const test::Exit e = run("{{2-3-1}}", {"--profile-out=" + profile});
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_EQ(e.err, "");
  expect_restored();
  // {{l-b-g}}: L level 2 (600 MHz), B level 3 (1200 MHz), G level 1.
  EXPECT_THAT(e.out, HasSubstr("\n  DVFS for the whole run: "));
  EXPECT_THAT(e.out, HasSubstr("L level 2 (600 MHz)"));
  EXPECT_THAT(e.out, HasSubstr("B level 3 (1200 MHz)"));
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  ASSERT_TRUE(j.contains("dvfs")) << j.dump();
  std::map<std::string, int64_t> khz;
  for (const auto& d : j["dvfs"]) {
    EXPECT_EQ(d["layer"], "setup");
    EXPECT_GT(d["apply_ns"].get<int64_t>(), 0) << d;
    khz[d["processor"]] = d["khz"];
  }
  EXPECT_EQ(khz.at("B"), 1200000);
  EXPECT_EQ(khz.at("L"), 600000);
  for (const auto& n : j["networks"]) EXPECT_EQ(n["frames_completed"], 2) << n["name"];
}

TEST_F(WorkloadFrequencyCliTest, MaxSetsEveryDomainsTopLevel) {
  const std::string profile = (sim_.root() / "w.json").string();
  const test::Exit e = run("max", {"--profile-out=" + profile});
  ASSERT_EQ(e.code, 0) << e;
  expect_restored();
  const nlohmann::json j = nlohmann::json::parse(test::read_file(profile));
  std::map<std::string, int64_t> khz;
  for (const auto& d : j["dvfs"]) khz[d["processor"]] = d["khz"];
  ASSERT_TRUE(khz.count("B") && khz.count("L")) << j["dvfs"].dump() << e;
  EXPECT_EQ(khz.at("B"), 1800000);
  EXPECT_EQ(khz.at("L"), 1008000);
}

TEST_F(WorkloadFrequencyCliTest, PerLayerOrPerSubGraphLevelsAreOneLineErrors) {
  for (const std::string f : {"3-2", "{3-2}"}) {
    expect_one_line_error(run(f), "--frequency='" + f +
                                      "' with --workload: give levels for the whole run (min, max or {{l-b-g}}); "
                                      "per-layer and per-sub-graph levels belong to one network's order");
  }
  const test::Exit e = run("{{9-1-1}}");
  EXPECT_EQ(e.code, 2) << e;
  EXPECT_THAT(e.err, HasSubstr("--frequency"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  expect_restored();
}

}  // namespace
}  // namespace co_up
