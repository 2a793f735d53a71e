// The cost model with a fitted hand-off (planner/handoff_fit.h) predicting mappings it was not
// fitted on. The truth is not the cost model: a discrete-event simulation of frames flowing
// through sub-graphs (below) whose processors each run one sub-graph at a time, oldest frame
// first, and whose processors on one core share it. Its periods include what the cost model does
// not charge (a processor idling while a stage of another frame is not ready, which non-contiguous
// mappings show), and a common slowdown of the concurrent stages that the fit must not absorb.
// The hand-off is fitted on handoff_orders' runs only; the error is measured on other mappings:
// contiguous splits and non-contiguous mappings of 3 to 6 sub-graphs, on B/L and on B/L/G/N with
// G sharing B's core and N sharing L's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/handoff_fit.h"
#include "planner/random_order.h"
#include "planner/search.h"
#include "planner/synthetic_profile.h"
#include "tests/planner/pipeline_simulator.h"

namespace co_up::planner {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Fits every pair's hand-off the way `co_up profile` does: pair by pair, on handoff_orders of the
// model fitted so far, from simulated ("measured") periods.
CostModel fit_all_pairs(const LayerProfile& profile, const Machine& machine, std::mt19937_64& rng,
                        std::vector<std::string>* fit_orders) {
  CostModel model(profile);
  const std::string letters = model.letters();
  for (size_t i = 0; i < letters.size(); ++i) {
    for (size_t j = i + 1; j < letters.size(); ++j) {
      const std::vector<std::string> orders = handoff_orders(model, letters[i], letters[j]);
      std::vector<double> periods;
      for (const std::string& o : orders) periods.push_back(simulate_period(machine, o, rng));
      model = model.with_handoff(letters[i], letters[j], fit_handoff(model, letters[i], letters[j], orders, periods).us);
      fit_orders->insert(fit_orders->end(), orders.begin(), orders.end());
    }
  }
  return model;
}

// Held-out orders: every contiguous 2-stage split over the first two letters (both ways round),
// and `count` seeded random orders of 3-6 sub-graphs over all letters, none in `exclude`.
std::vector<std::string> held_out_orders(const CostModel& model, int count, uint64_t seed,
                                         const std::vector<std::string>& exclude) {
  const uint32_t n = model.layer_count();
  const std::string& letters = model.letters();
  std::vector<std::string> out;
  auto keep = [&](const std::string& o) {
    if (std::find(exclude.begin(), exclude.end(), o) == exclude.end() &&
        std::find(out.begin(), out.end(), o) == out.end()) {
      out.push_back(o);
    }
  };
  for (uint32_t k = 1; k < n; ++k) {
    keep(std::string(k, letters[0]) + std::string(n - k, letters[1]));
    keep(std::string(k, letters[1]) + std::string(n - k, letters[0]));
  }
  std::mt19937_64 rng(seed);
  for (int added = 0; added < count;) {
    const std::string order = random_order(n, letters, rng);
    const size_t before = out.size();
    keep(order);
    added += out.size() > before ? 1 : 0;
  }
  return out;
}

struct HeldOut {
  double median_error = 0;          // |predicted - simulated| / simulated, held-out orders
  double median_error_3plus = 0;    // the same over orders of 3 or more sub-graphs
  double median_error_no_handoff = 0;  // the 3+ orders again, predicted with every hand-off 0
  size_t orders = 0, orders_3plus = 0;
};

HeldOut held_out_error(const LayerProfile& profile, const Machine& machine, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> fit_orders;
  const CostModel fitted = fit_all_pairs(profile, machine, rng, &fit_orders);
  const CostModel bare(profile);
  std::vector<double> all, plus, plus_bare;
  for (const std::string& o : held_out_orders(fitted, 24, seed * 7 + 1, fit_orders)) {
    const double truth = simulate_period(machine, o, rng);
    const double error = std::abs(fitted.predict({o, Mode::kPipeline, {}}).period_us - truth) / truth;
    all.push_back(error);
    if (subgraph_count(o) >= 3) {
      plus.push_back(error);
      plus_bare.push_back(std::abs(bare.predict({o, Mode::kPipeline, {}}).period_us - truth) / truth);
    }
  }
  const HeldOut h{median(all), median(plus), median(plus_bare), all.size(), plus.size()};
  std::printf("held out: %zu orders, median |error| %.1f %%; %zu of 3+ sub-graphs: %.1f %% (%.1f %% without the hand-off)\n",
              h.orders, 100 * h.median_error, h.orders_3plus, 100 * h.median_error_3plus, 100 * h.median_error_no_handoff);
  return h;
}

LayerProfile synthetic(uint32_t processors, uint64_t seed) {
  SyntheticSpec spec;
  spec.layers = 14;
  spec.processors = processors;
  spec.seed = seed;
  return make_synthetic_profile(spec);  // no hand-off in the profile: it is what gets fitted
}

// The bound: held-out median error under 8 % (measured 4-7 %) (the simulated stages are 5 % slower than their
// profile, runs have 1 % noise, and non-contiguous mappings idle in ways the model does not
// charge). Without the fitted hand-off the same held-out 3+ sub-graph mappings err by far more,
// so the bound fails when the fit is dropped or wrong (checked in the test itself).
constexpr double kHeldOutBound = 0.08;

TEST(HandoffHoldout, TwoProcessorsOnTwoCores) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const LayerProfile profile = synthetic(2, seed);
    Machine machine;
    machine.profile = &profile;
    machine.handoff_us[{'B', 'L'}] = 400;
    const HeldOut h = held_out_error(profile, machine, seed);
    EXPECT_GE(h.orders_3plus, 20u);
    EXPECT_LT(h.median_error, kHeldOutBound) << "seed " << seed;
    EXPECT_LT(h.median_error_3plus, kHeldOutBound) << "seed " << seed;
    EXPECT_GT(h.median_error_no_handoff, 1.4 * kHeldOutBound) << "seed " << seed << ": the bound would not notice a missing hand-off";
  }
}

TEST(HandoffHoldout, FourProcessorsWithSharedCores) {
  for (uint64_t seed = 4; seed <= 5; ++seed) {
    const LayerProfile profile = synthetic(4, seed);
    ASSERT_EQ(core_of(profile, 'G'), core_of(profile, 'B'));
    ASSERT_EQ(core_of(profile, 'N'), core_of(profile, 'L'));
    Machine machine;
    machine.profile = &profile;
    machine.handoff_us = {{{'B', 'L'}, 400}, {{'B', 'G'}, 250}, {{'B', 'N'}, 300},
                          {{'G', 'L'}, 350}, {{'G', 'N'}, 200}, {{'L', 'N'}, 150}};
    const HeldOut h = held_out_error(profile, machine, seed);
    EXPECT_GE(h.orders_3plus, 20u);
    EXPECT_LT(h.median_error, kHeldOutBound) << "seed " << seed;
    EXPECT_LT(h.median_error_3plus, kHeldOutBound) << "seed " << seed;
    EXPECT_GT(h.median_error_no_handoff, 1.4 * kHeldOutBound) << "seed " << seed;
  }
}

// The fitted hand-off itself against the simulated one: the fit sees periods, never the number.
TEST(HandoffHoldout, FittedHandoffIsNearTheSimulatedOne) {
  const LayerProfile profile = synthetic(2, 9);
  Machine machine;
  machine.profile = &profile;
  machine.handoff_us[{'B', 'L'}] = 300;
  std::mt19937_64 rng(9);
  std::vector<std::string> fit_orders;
  const CostModel fitted = fit_all_pairs(profile, machine, rng, &fit_orders);
  EXPECT_NEAR(fitted.handoff_us(fitted.index_of('B'), fitted.index_of('L')), 300, 60);
}

}  // namespace
}  // namespace co_up::planner
