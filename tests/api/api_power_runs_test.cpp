// Power wiring over several runs of one Session: each run applies its per-layer DVFS levels and
// its profile holds that run's records (settled: every request applied), not the ones before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::test {
namespace {

constexpr const char* kSetspeed = "devices/system/cpu/cpufreq/policy0/scaling_setspeed";

struct RunsWorld {
  ApiWorld api;
  SimSysfs sim{"api_runs"};
  std::filesystem::path platform;

  RunsWorld() {
    sim.add_standard();
    platform = api.scratch.write("runs_platform.json", R"({"name": "sim-runs", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000], "voltages_mv": [800, 850, 950, 1200]},
       "power_model": {"alpha": 1.0, "beta": 0.1}}]})");
  }
  SessionOptions options(const std::string& frequency) const {
    SessionOptions o;
    o.set("platform", platform.string())
        .set("plugins", api.plugins.string())
        .set("image-size", std::to_string(kImageSize))
        .set("sysfs-root", sim.root().string())
        .set("state-dir", (api.scratch / "state").string())
        .set("mode", "switch")
        .set("frequency", frequency);
    return o;
  }
};

// Every layer on B: the first half at level 1 (408 MHz), the rest at level 4 (1.8 GHz).
std::string half_and_half(size_t layers) {
  std::string plan;
  for (size_t i = 0; i < layers; ++i) plan += std::string(i == 0 ? "" : "-") + (i < layers / 2 ? "1" : "4");
  return plan;
}

TEST(ApiPowerRuns, EveryRunAppliesItsPerLayerLevelsAndProfilesOnlyItsOwn) {
  const RunsWorld world;
  const size_t layers = Session::open_zoo(kNetwork, world.api.options("")).order().size();
  Session session = Session::open_zoo(kNetwork, world.options(half_and_half(layers)));
  const Tensor input = random_input(session.inputs().at(0).shape, 5);
  for (int run = 0; run < 3; ++run) {
    put(world.sim / kSetspeed, "0");  // what the run writes shows
    session.run(input);
    EXPECT_EQ(get(world.sim / kSetspeed), "1800000") << "run " << run;
    const nlohmann::json profile = nlohmann::json::parse(session.profile().json);
    // This run's two requests (down at layer 0, up half way), settled before the profile was made:
    // applied, or replaced by the next before the worker got to it.
    ASSERT_TRUE(profile.contains("dvfs")) << "run " << run;
    const nlohmann::json& dvfs = profile["dvfs"];
    ASSERT_EQ(dvfs.size(), 2u) << "run " << run << "\n" << dvfs.dump(2);
    EXPECT_EQ(dvfs[0]["level"], 1);
    EXPECT_EQ(dvfs[1]["level"], 4);
    for (const nlohmann::json& e : dvfs) {
      EXPECT_TRUE(e["superseded"].get<bool>() || e["apply_ns"].get<int64_t>() > 0)
          << "run " << run << ": a request not yet applied\n" << e.dump(2);
    }
    EXPECT_EQ(dvfs[1]["khz"], 1800000) << "run " << run;
    EXPECT_GT(dvfs[1]["apply_ns"].get<int64_t>(), 0) << "run " << run;
  }
}

// With power on, each run's per-layer summary covers that run's frame only: nothing accumulates
// over the Session's runs.
TEST(ApiPowerRuns, EveryRunsPowerSummaryCoversOnlyThatRun) {
  const RunsWorld world;
  Session session = Session::open_zoo(kNetwork, world.options("max").set("power", "1"));
  const Tensor input = random_input(session.inputs().at(0).shape, 6);
  for (int run = 0; run < 3; ++run) {
    session.run(input);
    const nlohmann::json profile = nlohmann::json::parse(session.profile().json);
    ASSERT_TRUE(profile.contains("power")) << "run " << run;
    ASSERT_EQ(profile["power"].size(), 1u) << "run " << run;
    const nlohmann::json& layers = profile["power"][0]["layers"];
    ASSERT_FALSE(layers.empty()) << "run " << run;
    for (const nlohmann::json& l : layers) {
      EXPECT_EQ(l["frames"], 1) << "run " << run << ": layer " << l["layer"] << " counts earlier runs";
    }
  }
}

}  // namespace
}  // namespace co_up::test
