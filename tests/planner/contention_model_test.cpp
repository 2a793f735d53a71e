// The co-execution slowdown regression: ridge recovers known coefficients, the held-out split
// keeps fitted and held-out co-runs apart, and the error is computed on the held-out ones only.
#include "planner/contention_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "core/error.h"

namespace co_up::planner {
namespace {

// Samples for processor pairs (B,G), (G,B), (B,L), (L,B) whose slowdown is exactly
// feature_row . truth[pair] (features normalised by the largest values generated), plus noise.
struct Synthetic {
  std::vector<CoRunSample> samples;
  std::map<std::pair<char, char>, std::vector<double>> truth;
};

Synthetic synthetic(uint32_t seed, int coruns_per_pair, double noise) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> traffic(50, 4000), compute(100, 20000), gauss_free(-1, 1);
  Synthetic s;
  s.truth[{'B', 'G'}] = {0.30, 0.10, 0.40, 0.20, 0.05};
  s.truth[{'G', 'B'}] = {0.25, 0.05, 0.30, 0.10, 0.02};
  s.truth[{'B', 'L'}] = {0.02, 0.01, 0.08, 0.03, 0.01};
  s.truth[{'L', 'B'}] = {0.03, 0.02, 0.06, 0.02, 0.00};
  int corun = 0;
  for (const auto& [p, q] : std::vector<std::pair<char, char>>{{'B', 'G'}, {'B', 'L'}}) {
    for (int i = 0; i < coruns_per_pair; ++i, ++corun) {
      const ContentionFeatures fa{traffic(rng), compute(rng)}, fb{traffic(rng), compute(rng)};
      const std::string a = "net" + std::to_string(i % 5), b = "net" + std::to_string((i + 2) % 5);
      s.samples.push_back({corun, a, b, p, q, fa, fb, 1000.0, 0.0});
      s.samples.push_back({corun, b, a, q, p, fb, fa, 2000.0, 0.0});
    }
  }
  // Scales as the model computes them, then the targets.
  double ts = 1, cs = 1;
  for (const CoRunSample& c : s.samples) {
    ts = std::max({ts, c.victim_features.traffic, c.aggressor_features.traffic});
    cs = std::max({cs, c.victim_features.compute, c.aggressor_features.compute});
  }
  for (CoRunSample& c : s.samples) {
    const double tv = c.victim_features.traffic / ts, ta = c.aggressor_features.traffic / ts;
    const std::vector<double> x = {1, tv, ta, tv * ta, c.aggressor_features.compute / cs};
    const std::vector<double>& w = s.truth.at({c.victim_processor, c.aggressor_processor});
    double y = 0;
    for (size_t k = 0; k < 5; ++k) y += w[k] * x[k];
    c.corun_us = c.solo_us * (1 + y + noise * gauss_free(rng));
  }
  return s;
}

TEST(RidgeFit, SolvesAnExactSystemAndShrinksWithAlpha) {
  // y = 2 + 3 x exactly.
  const std::vector<std::vector<double>> x = {{1, 0}, {1, 1}, {1, 2}, {1, 3}};
  const std::vector<double> y = {2, 5, 8, 11};
  const std::vector<double> w = ridge_fit(x, y, 0.0);
  EXPECT_NEAR(w[0], 2, 1e-9);
  EXPECT_NEAR(w[1], 3, 1e-9);
  const std::vector<double> shrunk = ridge_fit(x, y, 10.0, 1);
  EXPECT_LT(std::abs(shrunk[1]), 3.0);
  EXPECT_THROW(ridge_fit({{1, 1}, {1, 1}}, {1, 2}, 0.0), std::invalid_argument);  // collinear, no alpha
}

TEST(ContentionModel, RecoversKnownCoefficientsPerProcessorPair) {
  const Synthetic s = synthetic(7, 40, 0.0);
  const ContentionModel m = ContentionModel::fit(s.samples, 1e-9);
  for (const auto& [pair, w] : s.truth) {
    ASSERT_TRUE(m.has_pair(pair.first, pair.second));
    const std::vector<double>& fitted = m.weights().at(pair);
    for (size_t k = 0; k < w.size(); ++k) EXPECT_NEAR(fitted[k], w[k], 1e-5) << pair.first << pair.second << " w" << k;
  }
  EXPECT_FALSE(m.has_pair('L', 'G'));
  EXPECT_THROW(m.predict('L', 'G', {}, {}), std::out_of_range);
}

TEST(ContentionModel, HeldOutErrorUsesOnlyCoRunsLeftOutOfTheFit) {
  const Synthetic s = synthetic(11, 12, 0.02);
  const auto [fitted, held] = split_held_out(s.samples, 3);
  ASSERT_FALSE(held.empty());
  std::set<int> fitted_ids, held_ids;
  for (const CoRunSample& c : fitted) fitted_ids.insert(c.corun);
  for (const CoRunSample& c : held) held_ids.insert(c.corun);
  for (int id : held_ids) EXPECT_EQ(fitted_ids.count(id), 0u) << "co-run " << id << " both fitted and held out";
  EXPECT_EQ(fitted.size() + held.size(), s.samples.size());
  // Both directions of a co-run stay together: every held-out id appears twice.
  EXPECT_EQ(held.size(), 2 * held_ids.size());

  const ContentionModel m = ContentionModel::fit(fitted);
  const HeldOutError e = held_out_error(m, held);
  EXPECT_EQ(e.samples, held.size());
  double manual = 0;
  for (const CoRunSample& c : held) {
    manual += std::abs(m.predict(c.victim_processor, c.aggressor_processor, c.victim_features, c.aggressor_features) -
                       c.slowdown()) * 100;
  }
  EXPECT_NEAR(e.mean_abs_points, manual / static_cast<double>(held.size()), 1e-9);
  // Noise of +-2 points around a linear truth: the held-out error stays of that size.
  EXPECT_GT(e.mean_abs_points, 0.0);
  EXPECT_LT(e.mean_abs_points, 5.0);
}

TEST(ContentionModel, PairMeanBaselineErrorIsComputedOnTheHeldOutCoRuns) {
  // Fitted: B|L slowdowns 0.1 and 0.3 (mean 0.2); held out: 0.5 -> 30 points off.
  std::vector<CoRunSample> fitted = {{0, "a", "b", 'B', 'L', {}, {}, 100, 110}, {1, "a", "c", 'B', 'L', {}, {}, 100, 130}};
  const std::vector<CoRunSample> held = {{2, "b", "c", 'B', 'L', {}, {}, 100, 150}, {3, "b", "c", 'L', 'G', {}, {}, 100, 150}};
  const HeldOutError e = held_out_error_of_pair_mean(fitted, held);
  EXPECT_EQ(e.samples, 1u);  // L|G has no fitted co-run: no prediction
  EXPECT_NEAR(e.mean_abs_points, 30.0, 1e-9);
  EXPECT_NEAR(e.mean_abs_time_pct, 20.0, 1e-9);  // predicted 120 us against 150
}

TEST(ContentionModel, JsonRoundTripAndOneLineErrors) {
  const Synthetic s = synthetic(3, 10, 0.0);
  const ContentionModel m = ContentionModel::fit(s.samples);
  const ContentionModel back = ContentionModel::from_json(m.to_json(), "p.json");
  const CoRunSample& c = s.samples[3];
  EXPECT_DOUBLE_EQ(back.predict(c.victim_processor, c.aggressor_processor, c.victim_features, c.aggressor_features),
                   m.predict(c.victim_processor, c.aggressor_processor, c.victim_features, c.aggressor_features));
  EXPECT_EQ(samples_from_json(samples_to_json(s.samples), "p.json").size(), s.samples.size());
  nlohmann::json bad = m.to_json();
  bad["pairs"][0]["weights"] = {1, 2};
  try {
    ContentionModel::from_json(bad, "p.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "p.json: contention.pairs[0].weights must have 5 numbers");
  }
}

}  // namespace
}  // namespace co_up::planner
