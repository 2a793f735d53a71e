// Layer times per intra-op thread count: kept through the profile file, picked per processor for
// the cost model (level 0 replaced, DVFS levels scaled), refused with one line where unmeasured.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "planner/cost_model.h"
#include "planner/layer_profile.h"
#include "planner/synthetic_profile.h"
#include "planner/thread_times.h"

namespace co_up::planner {
namespace {

// Two processors, 4 layers, DVFS tables of 3 levels; B measured at 1 and 2 threads.
LayerProfile profile_with_threads() {
  SyntheticSpec spec;
  spec.layers = 4;
  spec.processors = 2;
  spec.levels = 3;
  LayerProfile p = make_synthetic_profile(spec);
  // Level 0 (as found) too, as `co_up profile` always measures it: the clocks at the top level.
  for (char letter : {'B', 'L'}) {
    LayerTimes found = *p.find_layer_times(letter, 3);
    found.level = 0;
    p.layer_times.push_back(found);
  }
  const LayerTimes& base = *p.find_layer_times('B', 0);
  ThreadLayerTimes one{'B', 1, base.median_us, base.mad_us};
  ThreadLayerTimes two{'B', 2, {}, {}};
  for (double us : base.median_us) two.median_us.push_back(us * 0.6);
  two.mad_us.assign(base.median_us.size(), 1.5);
  p.thread_times = {one, two};
  return p;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(ThreadTimes, SurviveTheProfileFile) {
  const LayerProfile p = profile_with_threads();
  const LayerProfile back = parse_layer_profile(layer_profile_json(p), "round trip");
  ASSERT_EQ(back.thread_times.size(), 2u);
  EXPECT_EQ(back.thread_times[1].processor, 'B');
  EXPECT_EQ(back.thread_times[1].threads, 2);
  EXPECT_EQ(back.thread_times[1].median_us, p.thread_times[1].median_us);
  EXPECT_EQ(back.thread_times[1].mad_us, p.thread_times[1].mad_us);
  EXPECT_EQ(measured_thread_counts(back, 'B'), (std::vector<int>{1, 2}));
  EXPECT_TRUE(measured_thread_counts(back, 'L').empty());
  // A profile without them writes no key (older readers see the file they know).
  LayerProfile plain = p;
  plain.thread_times.clear();
  EXPECT_EQ(layer_profile_json(plain).find("thread_layer_times"), std::string::npos);
}

TEST(ThreadTimes, BadEntriesAreOneLineErrors) {
  const nlohmann::json good = nlohmann::json::parse(layer_profile_json(profile_with_threads()));
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json text = good;
    text["thread_layer_times"][1][key] = value;
    return text.dump();
  };
  EXPECT_EQ(error_of([&] { parse_layer_profile(with("processor", "X"), "f"); }),
            "profile 'f': key 'thread_layer_times[1].processor' is \"X\", not a processor of the profile (BL)");
  EXPECT_EQ(error_of([&] { parse_layer_profile(with("threads", 1), "f"); }),
            "profile 'f': key 'thread_layer_times[1]' repeats processor 'B' at 1 thread(s)");
  EXPECT_EQ(error_of([&] { parse_layer_profile(with("median_us", nlohmann::json::array({1.0})), "f"); }),
            "profile 'f': key 'thread_layer_times[1].median_us' must be an array of 4 times (network.layer_count)");
  const std::string zero = error_of([&] { parse_layer_profile(with("threads", 0), "f"); });
  EXPECT_NE(zero.find("thread_layer_times[1].threads"), std::string::npos) << zero;
  EXPECT_EQ(zero.find('\n'), std::string::npos) << zero;
}

TEST(ThreadTimes, PlanWithAThreadCountUsesItsTimes) {
  const LayerProfile p = profile_with_threads();
  const LayerProfile two = with_thread_counts(p, {{'B', 2}});
  const LayerTimes& base = *p.find_layer_times('B', 0);
  const LayerTimes& picked = *two.find_layer_times('B', 0);
  for (size_t i = 0; i < base.median_us.size(); ++i) {
    EXPECT_DOUBLE_EQ(picked.median_us[i], base.median_us[i] * 0.6) << "layer " << i;
    EXPECT_DOUBLE_EQ(picked.mad_us[i], 1.5);
    // A DVFS level keeps its own clock and gains the same per-layer speed-up.
    EXPECT_DOUBLE_EQ(two.find_layer_times('B', 2)->median_us[i], p.find_layer_times('B', 2)->median_us[i] * 0.6);
  }
  EXPECT_EQ(two.find_layer_times('L', 0)->median_us, p.find_layer_times('L', 0)->median_us);
  // The cost model sees it: all-B switch latency loses 0.4x of B's layer times.
  const Mapping all_b{std::string(4, 'B'), Mode::kSwitch, {}};
  double layers_ms = 0;
  for (double us : base.median_us) layers_ms += us / 1000.0;
  EXPECT_NEAR(CostModel(p).predict(all_b).latency_ms - CostModel(two).predict(all_b).latency_ms,
              0.4 * layers_ms, 1e-9);
  // No choice: the profile as it is.
  EXPECT_EQ(with_thread_counts(p, {}).find_layer_times('B', 0)->median_us, base.median_us);
}

TEST(ThreadTimes, UnmeasuredThreadCountsAreOneLineErrors) {
  const LayerProfile p = profile_with_threads();
  EXPECT_EQ(error_of([&] { with_thread_counts(p, {{'B', 3}}); }),
            "the profile has no layer times of 'B' at 3 thread(s) (measured: 1, 2); co_up profile "
            "measures 1..cores threads of a cluster of several cores");
  EXPECT_EQ(error_of([&] { with_thread_counts(p, {{'L', 2}}); }),
            "the profile has no layer times of 'L' at 2 thread(s) (measured: none); co_up profile "
            "measures 1..cores threads of a cluster of several cores");
  // A one-core cluster's times are its one-thread times: nothing to pick, nothing to refuse.
  LayerProfile single = p;
  single.processors[1].host_cores = {1};
  EXPECT_EQ(with_thread_counts(single, {{'L', 1}}).find_layer_times('L', 0)->median_us,
            p.find_layer_times('L', 0)->median_us);
  EXPECT_EQ(error_of([&] { with_thread_counts(p, {{'Z', 1}}); }),
            "intra-op threads for 'Z', but the profile has no processor 'Z' (it has BL)");
}

}  // namespace
}  // namespace co_up::planner
