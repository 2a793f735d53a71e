// The Session owns power wiring: a DVFS level asked for through the C++ API, the C API and the
// co_up command line is the same set of writes to a simulated sysfs tree (tests/power/sim_sysfs.h),
// held while the Session is open and restored when it closes; the outputs are the same bitwise.
// An error of the power wiring crosses every boundary with the command line's message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"
#include "tests/api/c_api_run.h"
#include "tests/api/run_co_up.h"
#include "tests/plugins/run_command.h"
#include "tests/power/sim_sysfs.h"

namespace co_up::test {
namespace {

using ::testing::HasSubstr;

constexpr const char* kPolicy0 = "devices/system/cpu/cpufreq/policy0/";
constexpr const char* kPolicy1 = "devices/system/cpu/cpufreq/policy1/";

// B on policy0 (userspace governor available), L on policy1 (min/max clamp only): the two DVFS
// drivers' ways of holding a level. One core each, the cpu-reference backend.
struct PowerWorld {
  ApiWorld api;
  SimSysfs sim{"api"};
  std::filesystem::path platform;
  std::filesystem::path state_dir;

  PowerWorld() {
    sim.add_standard();
    platform = api.scratch.write("power_platform.json", R"({"name": "sim-api", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000]}},
      {"letter": "L", "kind": "cpu", "backend": "cpu-reference", "cores": [1], "threads": 1,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy1",
                "frequencies_khz": [408000, 600000, 1008000]}}]})");
    state_dir = api.scratch / "state";
  }

  // The options every client is given, by the command line's names.
  std::vector<std::pair<std::string, std::string>> settings(const std::string& order,
                                                            const std::string& frequency) const {
    std::vector<std::pair<std::string, std::string>> s = {
        {"platform", platform.string()}, {"plugins", api.plugins.string()},
        {"image-size", std::to_string(kImageSize)}, {"sysfs-root", sim.root().string()},
        {"state-dir", state_dir.string()}};
    if (!order.empty()) s.emplace_back("order", order);  // empty: every layer on B
    if (!frequency.empty()) s.emplace_back("frequency", frequency);  // empty: levels as found
    return s;
  }
  SessionOptions options(const std::string& order, const std::string& frequency) const {
    SessionOptions o;
    for (const auto& [key, value] : settings(order, frequency)) o.set(key, value);
    return o;
  }

  // What the tree holds now, of the files a level changes.
  std::map<std::string, std::string> levels() const {
    std::map<std::string, std::string> files;
    for (const char* policy : {kPolicy0, kPolicy1}) {
      for (const char* file : {"scaling_governor", "scaling_min_freq", "scaling_max_freq", "scaling_setspeed"}) {
        const std::string rel = std::string(policy) + file;
        files[rel] = get(sim / rel);
      }
    }
    return files;
  }
};

// B for the first half, L for the rest: two sub-graphs, "{3-2}" gives B level 3, L level 2.
std::string two_stage_order(size_t layers) {
  std::string order(layers, 'B');
  for (size_t i = layers / 2; i < layers; ++i) order[i] = 'L';
  return order;
}

const std::map<std::string, std::string> kUntouched = {
    {std::string(kPolicy0) + "scaling_governor", "schedutil"},
    {std::string(kPolicy0) + "scaling_min_freq", "408000"},
    {std::string(kPolicy0) + "scaling_max_freq", "1800000"},
    {std::string(kPolicy0) + "scaling_setspeed", "<unsupported>"},
    {std::string(kPolicy1) + "scaling_governor", "schedutil"},
    {std::string(kPolicy1) + "scaling_min_freq", "408000"},
    {std::string(kPolicy1) + "scaling_max_freq", "1008000"},
    {std::string(kPolicy1) + "scaling_setspeed", ""}};

// After the Session: governors and limits as they were. scaling_setspeed keeps the last speed
// written (the kernel ignores it under other governors, and reads "<unsupported>" back), so the
// restore does not write it.
const std::map<std::string, std::string> kRestored = [] {
  std::map<std::string, std::string> files = kUntouched;
  files[std::string(kPolicy0) + "scaling_setspeed"] = "1200000";
  return files;
}();

// Level 3 of B (1.2 GHz) through the userspace governor; level 2 of L (600 MHz) by clamping
// min and max to it, its governor left alone.
const std::map<std::string, std::string> kHeld = {
    {std::string(kPolicy0) + "scaling_governor", "userspace"},
    {std::string(kPolicy0) + "scaling_min_freq", "408000"},
    {std::string(kPolicy0) + "scaling_max_freq", "1800000"},
    {std::string(kPolicy0) + "scaling_setspeed", "1200000"},
    {std::string(kPolicy1) + "scaling_governor", "schedutil"},
    {std::string(kPolicy1) + "scaling_min_freq", "600000"},
    {std::string(kPolicy1) + "scaling_max_freq", "600000"},
    {std::string(kPolicy1) + "scaling_setspeed", ""}};

co_up_session* open_c(const PowerWorld& world, const std::string& order, const std::string& frequency,
                      std::pair<co_up_error_code, std::string>* out_error = nullptr) {
  co_up_options* options = nullptr;
  EXPECT_EQ(co_up_options_create(&options), nullptr);
  for (const auto& [key, value] : world.settings(order, frequency)) {
    EXPECT_EQ(co_up_options_set(options, key.c_str(), value.c_str()), nullptr) << key;
  }
  co_up_session* session = nullptr;
  co_up_error* error = co_up_session_open_zoo(kNetwork, options, &session);
  co_up_options_release(options);
  if (error != nullptr) {
    if (out_error != nullptr) *out_error = {co_up_error_code_of(error), co_up_error_message(error)};
    if (out_error == nullptr) {
      ADD_FAILURE() << co_up_error_message(error);
    }
    co_up_error_release(error);
  }
  return session;
}

CommandResult run_cli(const PowerWorld& world, const std::string& order, const std::string& frequency,
                      const std::vector<std::string>& extra) {
  std::vector<std::string> words = {"--n=1"};
  for (const auto& [key, value] : world.settings(order, frequency)) words.push_back("--" + key + "=" + value);
  words.insert(words.end(), extra.begin(), extra.end());
  return run_co_up(world.api.scratch.path(), words);
}

TEST(ApiPower, AFrequencyLevelIsTheSameWritesAndOutputsThroughEveryClient) {
  const PowerWorld world;
  ASSERT_EQ(world.levels(), kUntouched);
  const size_t layers = Session::open_zoo(kNetwork, world.api.options("")).order().size();
  const std::string order = two_stage_order(layers);
  const std::string frequency = "{3-2}";

  std::vector<Tensor> cpp_outputs;
  Tensor input;
  {
    Session session = Session::open_zoo(kNetwork, world.options(order, frequency));
    EXPECT_EQ(world.levels(), kHeld) << "C++ API: the levels are set when the Session opens";
    input = random_input(session.inputs().at(0).shape, 7);
    cpp_outputs = session.run(input);
    EXPECT_EQ(world.levels(), kHeld);
    // The profile names the setup writes, as the command line's does.
    const std::string json = session.profile().json;
    EXPECT_THAT(json, HasSubstr("\"khz\": 1200000"));
    EXPECT_THAT(json, HasSubstr("\"khz\": 600000"));
  }
  EXPECT_EQ(world.levels(), kRestored) << "C++ API: restored when the Session is destroyed";

  co_up_session* c_session = open_c(world, order, frequency);
  ASSERT_NE(c_session, nullptr);
  EXPECT_EQ(world.levels(), kHeld) << "C API";
  const std::vector<Tensor> c_outputs = run_through_c_api(c_session, input);
  co_up_session_release(c_session);
  EXPECT_EQ(world.levels(), kRestored) << "C API: restored on release";

  const std::filesystem::path in = world.api.scratch / "power_in.npy";
  const std::filesystem::path out = world.api.scratch / "power_out.npy";
  const std::filesystem::path profile = world.api.scratch / "power_profile.json";
  write_npy(in, input);
  const CommandResult r = run_cli(world, order, frequency,
                                  {"--input=" + in.string(), "--output=" + out.string(),
                                   "--profile-out=" + profile.string()});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.err, "") << r;
  EXPECT_EQ(world.levels(), kRestored) << "command line: restored at exit";

  ASSERT_EQ(cpp_outputs.size(), 1u);
  ASSERT_EQ(c_outputs.size(), 1u);
  EXPECT_TRUE(bitwise_equal(cpp_outputs[0], c_outputs[0]));
  EXPECT_TRUE(bitwise_equal(cpp_outputs[0], read_npy(out)));
}

// --power through the API: every run's profile carries the per-layer power summary the command
// line's profile JSON has (estimated from the platform's power model: no sensors here).
TEST(ApiPower, PowerOptionPutsThePerLayerSummaryInTheProfile) {
  PowerWorld world;
  world.platform = world.api.scratch.write("model_platform.json", R"({"name": "sim-model", "processors": [
      {"letter": "B", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1,
       "dvfs": {"driver": "cpufreq", "node": "devices/system/cpu/cpufreq/policy0",
                "frequencies_khz": [408000, 816000, 1200000, 1800000], "voltages_mv": [800, 850, 950, 1200]},
       "power_model": {"alpha": 1.0, "beta": 0.1}}]})");
  Session session = Session::open_zoo(kNetwork, world.options("", "max").set("power", "1"));
  session.run(random_input(session.inputs().at(0).shape, 3));
  const std::string json = session.profile().json;
  EXPECT_THAT(json, HasSubstr("\"power\""));
  EXPECT_THAT(json, HasSubstr("\"source\": \"estimated\""));
  Session without = Session::open_zoo(kNetwork, world.options("", ""));
  without.run(random_input(without.inputs().at(0).shape, 3));
  EXPECT_THAT(without.profile().json, ::testing::Not(HasSubstr("\"power\"")));
}

// Strict DVFS, B's scaling_setspeed unwritable: the Session does not open, and says why in the
// command line's words; nothing it changed stays changed.
TEST(ApiPower, AFailedLevelWriteIsOneMessageEverywhereAndRestores) {
  PowerWorld world;
  world.sim.make_unwritable(std::string(kPolicy0) + "scaling_setspeed");
  const std::string order = "";  // every layer on B
  std::string message;
  try {
    Session::open_zoo(kNetwork, world.options(order, "max"));
    ADD_FAILURE() << "the Session opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    message = e.what();
  }
  EXPECT_THAT(message, HasSubstr("failed to write 1800000 to " + (world.sim.root() / kPolicy0).string() +
                                 "scaling_setspeed: EISDIR"));
  EXPECT_THAT(message, HasSubstr("(run as root or use --dvfs=best-effort)"));
  EXPECT_EQ(get(world.sim / (std::string(kPolicy0) + "scaling_governor")), "schedutil");

  std::pair<co_up_error_code, std::string> c_error{};
  EXPECT_EQ(open_c(world, order, "max", &c_error), nullptr);
  EXPECT_EQ(c_error.first, CO_UP_ERROR_RUNTIME);
  EXPECT_EQ(c_error.second, message);
  EXPECT_EQ(get(world.sim / (std::string(kPolicy0) + "scaling_governor")), "schedutil");

  const CommandResult r = run_cli(world, order, "max", {});
  EXPECT_EQ(r.exit_code, 1) << r;
  EXPECT_EQ(r.err, "co_up: failed: " + message + "\n");
  EXPECT_EQ(get(world.sim / (std::string(kPolicy0) + "scaling_governor")), "schedutil");
}

// GPIO tags on a platform without GPIO lines: an input error, before anything is changed.
TEST(ApiPower, GpioTagsWithoutLinesIsOneInputErrorEverywhere) {
  const PowerWorld world;
  std::string message;
  try {
    Session::open_zoo(kNetwork, world.options("", "max").set("gpio-tags", "all"));
    ADD_FAILURE() << "the Session opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    message = e.what();
  }
  EXPECT_EQ(message, "--gpio-tags is set but platform 'sim-api' has no \"gpio\" section (chip and lines)");
  EXPECT_EQ(world.levels(), kUntouched);

  co_up_options* options = nullptr;
  ASSERT_EQ(co_up_options_create(&options), nullptr);
  for (const auto& [key, value] : world.settings("", "max")) co_up_options_set(options, key.c_str(), value.c_str());
  EXPECT_EQ(co_up_options_set(options, "gpio-tags", "all"), nullptr);
  co_up_session* session = nullptr;
  co_up_error* error = co_up_session_open_zoo(kNetwork, options, &session);
  co_up_options_release(options);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
  EXPECT_EQ(std::string(co_up_error_message(error)), message);
  co_up_error_release(error);

  const CommandResult r = run_cli(world, "", "max", {"--gpio-tags=all"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(r.err, "co_up: error: " + message + "\n");
  EXPECT_EQ(world.levels(), kUntouched);
}

}  // namespace
}  // namespace co_up::test
