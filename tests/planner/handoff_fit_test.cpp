// Fitting the hand-off per sub-graph boundary (planner/handoff_fit.h) from pipeline periods.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "core/error.h"
#include "planner/handoff_fit.h"
#include "planner/search.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

LayerProfile two_processor_profile(uint32_t layers, uint64_t seed) {
  SyntheticSpec spec;
  spec.layers = layers;
  spec.processors = 2;
  spec.seed = seed;
  return make_synthetic_profile(spec);
}

TEST(HandoffFit, OrdersHaveTwoThreeAndFourSubgraphsOnThePair) {
  const CostModel model(two_processor_profile(9, 2));
  const std::vector<std::string> orders = handoff_orders(model, 'B', 'L');
  ASSERT_EQ(orders.size(), 3u);
  for (size_t i = 0; i < orders.size(); ++i) {
    EXPECT_EQ(subgraph_count(orders[i]), i + 2) << orders[i];
    EXPECT_EQ(orders[i].find_first_not_of("BL"), std::string::npos) << orders[i];
  }
  // The 2-sub-graph order is the best contiguous split over B and L.
  double best = std::numeric_limits<double>::infinity();
  brute_force(model, Mode::kPipeline, {}, [&](const Mapping& m, const Prediction& p) {
    if (subgraph_count(m.order) == 2) best = std::min(best, p.period_us);
  });
  EXPECT_DOUBLE_EQ(model.predict({orders[0], Mode::kPipeline, {}}).period_us, best);
  EXPECT_EQ(handoff_orders(CostModel(two_processor_profile(3, 2)), 'B', 'L').size(), 2u);
  EXPECT_EQ(handoff_orders(CostModel(two_processor_profile(2, 2)), 'B', 'L').size(), 1u);
  // A large network searches a grid of cuts, still quickly.
  EXPECT_EQ(handoff_orders(CostModel(two_processor_profile(200, 3)), 'B', 'L').size(), 3u);
}

// The pipeline period of a B/L order with hand-off `handoff_us`, written out from the profile's
// numbers without CostModel, so that "measured" periods do not come from the model being fitted:
// each processor is busy with its layers (level 0), the send of each boundary it sends, the
// receive of each it receives, the network input if it runs layer 0, and one hand-off per
// boundary it takes part in; B and L are on different cores, so the period is the larger.
double period_from_profile(const LayerProfile& p, const std::string& order, double handoff_us) {
  std::map<char, double> busy;
  for (size_t i = 0; i < order.size(); ++i) {
    busy[order[i]] += p.find_layer_times(order[i], 0)->median_us.at(i);
    if (i + 1 < order.size() && order[i] != order[i + 1]) {
      const TransferTimes* t = p.find_transfer(order[i], order[i + 1]);
      busy[order[i]] += t->send_us.at(i) + handoff_us;
      busy[order[i + 1]] += t->receive_us.at(i) + handoff_us;
    }
  }
  if (const auto it = p.input_transfer_us.find(order[0]); it != p.input_transfer_us.end()) {
    busy[order[0]] += it->second;
  }
  return std::max(busy['B'], busy['L']);
}

TEST(HandoffFit, RecoversTheHandoffBehindMeasuredPeriods) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const LayerProfile base = two_processor_profile(10, seed);
    ASSERT_NE(base.find_processor('B')->host_cores, base.find_processor('L')->host_cores);
    for (double truth : {0.0, 40.0, 250.0}) {
      const CostModel model(base);  // what co_up profile knows before the step: no hand-off
      const std::vector<std::string> orders = handoff_orders(model, 'B', 'L');
      ASSERT_EQ(orders.size(), 3u);
      // "Measured": the periods the hand-off `truth` gives (computed from the profile by hand,
      // above), all 7 % slower (pipeline stages slowing each other), which the ratios cancel.
      std::vector<double> periods;
      for (const std::string& o : orders) periods.push_back(1.07 * period_from_profile(base, o, truth));
      const HandoffFit fit = fit_handoff(model, 'B', 'L', orders, periods);
      EXPECT_NEAR(fit.us, truth, 1.0 + 0.01 * truth) << "seed " << seed << ", hand-off " << truth;
      EXPECT_LT(fit.residual, 1e-3);
    }
  }
}

TEST(HandoffFit, FasterThanPredictedGivesZeroAndBadInputThrows) {
  const CostModel model(two_processor_profile(8, 5));
  const std::vector<std::string> orders = handoff_orders(model, 'B', 'L');
  std::vector<double> periods;
  for (const std::string& o : orders) periods.push_back(model.predict({o, Mode::kPipeline, {}}).period_us);
  periods[1] *= 0.8;  // more sub-graphs measured faster than predicted: no negative hand-off
  periods[2] *= 0.8;
  EXPECT_EQ(fit_handoff(model, 'B', 'L', orders, periods).us, 0.0);
  EXPECT_EQ(fit_handoff(model, 'B', 'L', {orders[0]}, {periods[0]}).us, 0.0);
  EXPECT_THROW(fit_handoff(model, 'B', 'L', orders, {1.0}), InputError);
  EXPECT_THROW(fit_handoff(model, 'B', 'L', orders, {1.0, 0.0, 1.0}), InputError);
  EXPECT_THROW(fit_handoff(model, 'B', 'G', orders, periods), InputError);
}

}  // namespace
}  // namespace co_up::planner
