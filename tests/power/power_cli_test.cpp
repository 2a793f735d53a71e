// The real co_up binary against a simulated sysfs tree: --list-frequencies, DVFS writes restored
// after a normal run, after SIGINT and after an error mid-run, and one clear message per bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/plugins/spawn_process.h"
#include "tests/power/sim_sysfs.h"

namespace co_up {
namespace {

using ::testing::HasSubstr;
using test::get;
using test::SimSysfs;
namespace fs = std::filesystem;

using test::Exit;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t spawn(const std::vector<std::string>& args, const fs::path& dir) {
  return test::spawn_process(CO_UP_BINARY, args, dir);
}
Exit finish(pid_t pid, const fs::path& dir) { return test::finish_process(pid, dir); }
Exit run(const std::vector<std::string>& args, const fs::path& dir) { return finish(spawn(args, dir), dir); }

class PowerCliTest : public ::testing::Test {
 protected:
  PowerCliTest() : sim_("cli") {
    sim_.add_standard();
    platform_ = sim_.write_platform().string();
  }
  std::vector<std::string> alexnet(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--graph=alexnet", "--image-size=64", "--platform=" + platform_,
                                     "--sysfs-root=" + sim_.root().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  void expect_restored() {
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "schedutil");
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy1/scaling_min_freq"), "408000");
    EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy1/scaling_max_freq"), "1008000");
    EXPECT_EQ(get(sim_ / "class/devfreq/gpu/governor"), "simple_ondemand");
  }
  void expect_usage_error(const Exit& e, const std::string& text) {
    EXPECT_EQ(e.code, 2) << e;
    EXPECT_THAT(e.err, HasSubstr(text)) << e;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  }
  SimSysfs sim_;
  std::string platform_;
};

TEST_F(PowerCliTest, ListFrequenciesFromPlatformAndFromDetectedHost) {
  Exit e = run({"--platform=" + platform_, "--list-frequencies"}, sim_.root());
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("1800 MHz  1200 mV"));
  SimSysfs host("host");
  host.add_policy(0, "0", true, "800000 1600000 2400000", "800000", "2400000");
  e = run({"--sysfs-root=" + host.root().string(), "--list-frequencies"}, host.root());
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("policy0"));
  EXPECT_THAT(e.out, HasSubstr("2400 MHz"));
}

TEST_F(PowerCliTest, PerSubGraphLevelsSetAtSetupAndRestoredAtExit) {
  const fs::path profile = sim_.root() / "profile.json";
  const Exit e = run(alexnet({"--order=BBBBLLLL", "--frequency={3-2}", "--n=2",
                              "--profile-out=" + profile.string()}),
                     sim_.root());
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_EQ(e.err, "");
  expect_restored();
  const auto j = nlohmann::json::parse(slurp(profile));
  ASSERT_EQ(j["dvfs"].size(), 2u);
  EXPECT_EQ(j["dvfs"][0]["layer"], "setup");
  EXPECT_EQ(j["dvfs"][0]["khz"], 1200000);
  EXPECT_GT(j["dvfs"][1]["apply_ns"].get<int64_t>(), 0);
}

TEST_F(PowerCliTest, PerLayerSwitchModeRecordsIssueAndApply) {
  const fs::path profile = sim_.root() / "profile.json";
  const Exit e = run(alexnet({"--order=BBBBLLLL", "--mode=switch", "--frequency=4-4-1-1-3-3-2-2",
                              "--n=2", "--profile-out=" + profile.string()}),
                     sim_.root());
  EXPECT_EQ(e.code, 0) << e;
  expect_restored();
  const auto j = nlohmann::json::parse(slurp(profile));
  // Per frame: B->3, B->0, L->2, L->1 (the first frame's L->2 follows frame 0's L->1: a change).
  EXPECT_EQ(j["dvfs"].size(), 8u);
  // Each request is issued on its processor's thread at the start of the layer that changes the
  // level: inside its own frame (switch mode: frames do not overlap), in layer order, and a request
  // that was applied was applied after it was issued (one that was superseded never was).
  const std::vector<std::tuple<std::string, int, int>> want = {  // processor, layer, level (1-based)
      {"B", 0, 4}, {"B", 2, 1}, {"L", 4, 3}, {"L", 6, 2}};
  const auto& starts = j["frames"]["start_ns"];
  const auto& ends = j["frames"]["end_ns"];
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(ends.size(), 2u);
  int64_t previous = 0;
  for (size_t i = 0; i < j["dvfs"].size(); ++i) {
    const auto& d = j["dvfs"][i];
    const uint64_t frame = i / want.size();
    const auto& [processor, layer, level] = want[i % want.size()];
    EXPECT_EQ(d["frame"], frame) << d;
    EXPECT_EQ(d["processor"], processor) << d;
    EXPECT_EQ(d["layer"], layer) << d;
    EXPECT_EQ(d["level"], level) << d;
    const int64_t issue = d["issue_ns"].get<int64_t>();
    EXPECT_GE(issue, starts[frame].get<int64_t>()) << "issued before its frame started: " << d;
    EXPECT_LE(issue, ends[frame].get<int64_t>()) << "issued after its frame ended: " << d;
    EXPECT_GT(issue, previous) << "issued out of layer order: " << d;
    previous = issue;
    if (d["superseded"].get<bool>()) {
      EXPECT_EQ(d["apply_ns"], 0) << d;
    } else {
      EXPECT_GE(d["apply_ns"].get<int64_t>(), issue) << d;
    }
  }
}

TEST_F(PowerCliTest, SigintRestoresGovernors) {
  const pid_t pid = spawn(alexnet({"--frequency=max", "--n=100000000"}), sim_.root());
  // G is set last at setup: once its frequency is there, B and L are set too.
  const auto gpu = sim_ / "class/devfreq/gpu/userspace/set_freq";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (get(gpu) != "800000000" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(get(gpu), "800000000");
  EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy0/scaling_governor"), "userspace");
  EXPECT_EQ(get(sim_ / "devices/system/cpu/cpufreq/policy1/scaling_min_freq"), "1008000");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pid, SIGINT);
  const Exit e = finish(pid, sim_.root());
  EXPECT_EQ(e.code, 130) << e;
  expect_restored();
}

TEST_F(PowerCliTest, ErrorMidRunStrictFailsAndRestores) {
  // L's layers run first and set L fine; B's scaling_setspeed is unwritable, first written at
  // layer 4, mid-run, after the governor was already switched to userspace.
  sim_.make_unwritable("devices/system/cpu/cpufreq/policy0/scaling_setspeed");
  const Exit e = run(alexnet({"--order=LLLLBBBB", "--mode=switch", "--frequency=3-3-3-3-4-4-4-4", "--n=3"}),
                     sim_.root());
  EXPECT_EQ(e.code, 1) << e;
  EXPECT_THAT(e.err, HasSubstr("policy0/scaling_setspeed: EISDIR"));
  EXPECT_THAT(e.err, HasSubstr("--dvfs=best-effort"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  expect_restored();
}

TEST_F(PowerCliTest, UnwritableStrictFailsBestEffortWarnsOnceAndRuns) {
  sim_.make_unwritable("devices/system/cpu/cpufreq/policy0/scaling_setspeed");
  Exit e = run(alexnet({"--frequency=max", "--n=1"}), sim_.root());
  EXPECT_EQ(e.code, 1) << e;
  EXPECT_THAT(e.err, HasSubstr("failed to write 1800000 to "));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  expect_restored();
  e = run(alexnet({"--frequency=max", "--n=1", "--dvfs=best-effort"}), sim_.root());
  EXPECT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.err, HasSubstr("co_up: warning: failed to write 1800000"));
  EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << e;
  expect_restored();
}

TEST_F(PowerCliTest, BadInputsOneClearMessageEach) {
  expect_usage_error(run(alexnet({"--order=BBBBLLLL", "--frequency={10-2}"}), sim_.root()),
                     "asks level 10 for 'B'");
  expect_usage_error(run(alexnet({"--order=BBBBLLLL", "--frequency=2-2-2"}), sim_.root()),
                     "3 tokens for 8 layers");
  expect_usage_error(run(alexnet({"--order=BBBBLLLL", "--frequency=2-3-2-2-1-1-1-1"}), sim_.root()),
                     "in pipeline mode a processor runs at one level");
  expect_usage_error(run(alexnet({"--dvfs=sometimes"}), sim_.root()), "--dvfs='sometimes'");
  const std::string gpio_platform =
      sim_.write_platform(R"(, "gpio": {"chip": "/nonexistent/gpiochip7", "lines": [3]})").string();
  expect_usage_error(run({"--graph=alexnet", "--image-size=64", "--platform=" + gpio_platform,
                          "--gpio-tags=all", "--n=1"},
                         sim_.root()),
                     "cannot open GPIO chip '/nonexistent/gpiochip7'");
  expect_restored();
}

TEST_F(PowerCliTest, PowerReportCsvAndTraceFromASimulatedSensor) {
  test::put(sim_ / "class/hwmon/hwmon0/power1_input", "2500000");
  const std::string platform =
      sim_.write_platform(R"(, "sensors": [{"name": "board", "kind": "power", "path": "class/hwmon/hwmon0/power1_input", "scale": 0.001}])")
          .string();
  const fs::path csv = sim_.root() / "power.csv", trace = sim_.root() / "trace.json";
  const Exit e = run({"--graph=alexnet", "--image-size=64", "--platform=" + platform,
                      "--sysfs-root=" + sim_.root().string(), "--n=3", "--power-csv=" + csv.string(),
                      "--trace-out=" + trace.string()},
                     sim_.root());
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("power per layer (sensors)"));
  EXPECT_THAT(slurp(csv), HasSubstr("t_ns,board_mW\n"));
  EXPECT_THAT(slurp(csv), HasSubstr(",2500.000\n"));
  const auto j = nlohmann::json::parse(slurp(trace));
  EXPECT_GT(j["traceEvents"].size(), 24u);
}

TEST_F(PowerCliTest, PowerModelEstimateIsLabelled) {
  const fs::path profile = sim_.root() / "profile.json";
  const Exit e = run(alexnet({"--order=BBBBLLLL", "--n=2", "--power", "--profile-out=" + profile.string()}),
                     sim_.root());
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("ESTIMATED"));
  const auto j = nlohmann::json::parse(slurp(profile));
  ASSERT_EQ(j["power"].size(), 1u);
  EXPECT_EQ(j["power"][0]["source"], "estimated");
  EXPECT_EQ(j["power"][0]["layers"][0]["estimated"], true);
}

// The profile JSON carries the per-layer power summary (what a planner reads as measured power).
TEST_F(PowerCliTest, ProfileJsonCarriesPerLayerPowerFromSensors) {
  test::put(sim_ / "class/hwmon/hwmon0/power1_input", "2500000");
  const std::string platform =
      sim_.write_platform(R"(, "sensors": [{"name": "board", "kind": "power", "path": "class/hwmon/hwmon0/power1_input", "scale": 0.001}])")
          .string();
  const fs::path profile = sim_.root() / "profile.json";
  const Exit e = run({"--graph=alexnet", "--image-size=64", "--platform=" + platform, "--order=BBBBLLLL",
                      "--sysfs-root=" + sim_.root().string(), "--n=3", "--power", "--profile-out=" + profile.string()},
                     sim_.root());
  ASSERT_EQ(e.code, 0) << e;
  const auto j = nlohmann::json::parse(slurp(profile));
  ASSERT_EQ(j["power"].size(), 1u);
  const auto& power = j["power"][0];
  EXPECT_EQ(power["source"], "sensors");
  ASSERT_EQ(power["layers"].size(), 8u);
  double sum = 0;
  for (size_t l = 0; l < 8; ++l) {
    const auto& layer = power["layers"][l];
    EXPECT_EQ(layer["layer"], l);
    EXPECT_EQ(layer["processor"], l < 4 ? "B" : "L");
    EXPECT_EQ(layer["frames"], 3);
    EXPECT_NEAR(layer["power_mw"].get<double>(), 2500.0, 1.0);
    EXPECT_NEAR(layer["energy_mj"].get<double>(), 2.5 * layer["time_ms"].get<double>(), 0.01);
    sum += layer["energy_mj"].get<double>();
  }
  EXPECT_NEAR(power["energy_per_frame_mj"].get<double>(), sum, 1e-6);
  // Without --power there is no "power" entry.
  const Exit plain = run({"--graph=alexnet", "--image-size=64", "--platform=" + platform, "--n=1",
                          "--sysfs-root=" + sim_.root().string(), "--profile-out=" + profile.string()},
                         sim_.root());
  ASSERT_EQ(plain.code, 0) << plain;
  EXPECT_FALSE(nlohmann::json::parse(slurp(profile)).contains("power"));
}

// The external meter is aligned by the GPIO tags; what can be checked on a host without a GPIO
// chip is that its options fail early, with one line each (the meter itself: tests/power/meter_test.cpp).
TEST_F(PowerCliTest, MeterOptionsOneClearMessageEach) {
  const fs::path log = sim_.root() / "meter.csv";
  test::put(log, "0,1,100");
  expect_usage_error(run(alexnet({"--meter-log=" + log.string(), "--n=1"}), sim_.root()),
                     "--meter-log needs --gpio-tags");
  expect_usage_error(run(alexnet({"--meter=/dev/ttyACM9", "--n=1"}), sim_.root()), "--meter needs --gpio-tags");
  expect_usage_error(run(alexnet({"--meter-window=soon"}), sim_.root()), "--meter-window='soon' must be milliseconds");
  const std::string gpio_platform =
      sim_.write_platform(R"(, "gpio": {"chip": "/nonexistent/gpiochip7", "lines": [3]})").string();
  expect_usage_error(run({"--graph=alexnet", "--image-size=64", "--platform=" + gpio_platform, "--gpio-tags=all",
                          "--meter=/dev/ttyACM9", "--meter-log=" + log.string()},
                         sim_.root()),
                     "--meter and --meter-log both given");
  expect_usage_error(run({"--graph=alexnet", "--image-size=64", "--platform=" + gpio_platform, "--gpio-tags=all",
                          "--meter-log=" + log.string(), "--n=1"},
                         sim_.root()),
                     "cannot open GPIO chip '/nonexistent/gpiochip7'");
}

}  // namespace
}  // namespace co_up
