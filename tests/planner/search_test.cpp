// Searches against brute-force enumeration on small synthetic profiles, NSGA-II's front, baselines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "planner/search.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

struct Best {
  double period = std::numeric_limits<double>::infinity();
  double latency = std::numeric_limits<double>::infinity();
};

// Exact optima by enumeration: contiguous pipelines (the DP's space) and any order (switch).
Best brute(const CostModel& model, const std::vector<int>& levels) {
  Best best;
  brute_force(model, Mode::kPipeline, levels, [&](const Mapping& m, const Prediction& p) {
    if (is_contiguous(m.order)) best.period = std::min(best.period, p.period_us);
  });
  brute_force(model, Mode::kSwitch, levels, [&](const Mapping&, const Prediction& p) {
    best.latency = std::min(best.latency, p.latency_ms);
  });
  return best;
}

std::vector<SyntheticSpec> small_specs() {
  std::vector<SyntheticSpec> specs;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    for (int variant = 0; variant < 4; ++variant) {
      SyntheticSpec s;
      s.seed = seed;
      s.processors = variant < 2 ? 3 : 4;
      s.layers = variant < 2 ? 7 : 6;
      s.shared_hosts = variant % 2 == 0;
      s.transfers = seed != 3;  // one seed without transfer costs
      s.levels = variant == 3 ? 2 : 0;
      s.handoff_us = seed % 2 == 0 ? 150 : 0;  // hand-offs in the brute force too
      specs.push_back(s);
    }
  }
  return specs;
}

std::string describe(const SyntheticSpec& s) {
  return "seed " + std::to_string(s.seed) + ", " + std::to_string(s.processors) + " processors, " +
         std::to_string(s.layers) + " layers, shared " + std::to_string(s.shared_hosts) + ", levels " +
         std::to_string(s.levels) + ", hand-off " + std::to_string(s.handoff_us);
}

TEST(Search, PipelineDpAndShortestPathEqualBruteForce) {
  for (const SyntheticSpec& spec : small_specs()) {
    const CostModel model(make_synthetic_profile(spec));
    const std::vector<int> levels = model.fastest_levels();
    const Best best = brute(model, levels);
    const Candidate dp = pipeline_dp(model);
    EXPECT_TRUE(is_contiguous(dp.mapping.order)) << describe(spec) << ": " << dp.mapping.order;
    EXPECT_NEAR(dp.prediction.period_us, best.period, 1e-9 * best.period) << describe(spec);
    const Candidate sp = shortest_path_latency(model);
    EXPECT_EQ(sp.mapping.mode, Mode::kSwitch);
    EXPECT_NEAR(sp.prediction.latency_ms, best.latency, 1e-9 * best.latency) << describe(spec);
    // Refinement leaves the contiguous space but never makes the bottleneck worse.
    const Candidate refined = refine_pipeline(model, dp);
    EXPECT_LE(refined.prediction.period_us, dp.prediction.period_us * (1 + 1e-12)) << describe(spec);
  }
}

TEST(Search, DpAtEveryLevelSettingEqualsBruteForce) {
  SyntheticSpec spec;
  spec.layers = 5;
  spec.processors = 3;
  spec.levels = 3;
  spec.seed = 11;
  const CostModel model(make_synthetic_profile(spec));
  for (int b = 1; b <= 3; ++b) {
    for (int l = 1; l <= 3; ++l) {
      const std::vector<int> levels{b, l, 3};  // domains B, L, G
      ASSERT_EQ(model.domains().size(), 3u);
      const Best best = brute(model, levels);
      EXPECT_NEAR(pipeline_dp(model, levels).prediction.period_us, best.period, 1e-9 * best.period);
      EXPECT_NEAR(shortest_path_latency(model, levels).prediction.latency_ms, best.latency, 1e-9 * best.latency);
    }
  }
}

TEST(Search, PerSubsetDpGivesTheBestOfEachProcessorSet) {
  SyntheticSpec spec;
  spec.layers = 6;
  spec.processors = 3;
  spec.seed = 7;
  const CostModel model(make_synthetic_profile(spec));
  const std::vector<int> levels = model.fastest_levels();
  std::map<std::string, double> best;  // sorted letter set -> least period
  brute_force(model, Mode::kPipeline, levels, [&](const Mapping& m, const Prediction& p) {
    if (!is_contiguous(m.order)) return;
    std::string set = m.order;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    auto [it, inserted] = best.emplace(set, p.period_us);
    if (!inserted) it->second = std::min(it->second, p.period_us);
  });
  const std::vector<Candidate> subsets = pipeline_dp_per_subset(model);
  EXPECT_EQ(subsets.size(), best.size());
  EXPECT_DOUBLE_EQ(subsets.front().prediction.period_us, pipeline_dp(model).prediction.period_us);
  for (const Candidate& c : subsets) {
    std::string set = c.mapping.order;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    ASSERT_TRUE(best.count(set)) << set;
    EXPECT_NEAR(c.prediction.period_us, best[set], 1e-9 * best[set]) << set;
  }
}

TEST(Search, RefinementFindsNonContiguousOrders) {
  // B is fast at layers 0-1 and 4, L at 2-3: BBLLB beats every contiguous split.
  LayerProfile p;
  p.network.graph = "t";
  p.network.layer_count = 5;
  p.processors = {{'B', "b", "cpu", "", 'B', {0}, "", {}, {}, {}}, {'L', "l", "cpu", "", 'L', {1}, "", {}, {}, {}}};
  p.layer_times = {{'B', 0, {10, 10, 100, 100, 10}, {}}, {'L', 0, {100, 100, 10, 10, 100}, {}}};
  const CostModel model(p);
  const Candidate dp = pipeline_dp(model);
  const Candidate refined = refine_pipeline(model, dp);
  EXPECT_EQ(refined.mapping.order, "BBLLB");
  EXPECT_DOUBLE_EQ(refined.prediction.period_us, 30);
  EXPECT_GT(dp.prediction.period_us, 30);
  EXPECT_EQ(refined.source, "refined");
}

// B is fast at layers 0-1 and 4, L at 2-3 (as above). Contiguous splits: BBLLL / BBBLL,
// period 120 + h with hand-off h; BBLLB: 30 + 2h (B has both of its boundaries).
LayerProfile sandwich_profile(double handoff_us) {
  LayerProfile p;
  p.network.graph = "t";
  p.network.layer_count = 5;
  p.processors = {{'B', "b", "cpu", "", 'B', {0}, "", {}, {}, {}}, {'L', "l", "cpu", "", 'L', {1}, "", {}, {}, {}}};
  p.layer_times = {{'B', 0, {10, 10, 100, 100, 10}, {}}, {'L', 0, {100, 100, 10, 10, 100}, {}}};
  if (handoff_us > 0) p.set_handoff('B', 'L', handoff_us);
  return p;
}

// The best order over every order (brute force), by period then latency.
std::string brute_best_pipeline(const CostModel& model) {
  std::string best;
  double period = std::numeric_limits<double>::infinity();
  brute_force(model, Mode::kPipeline, {}, [&](const Mapping& m, const Prediction& p) {
    if (p.period_us < period) {
      period = p.period_us;
      best = m.order;
    }
  });
  return best;
}

TEST(Search, HandoffCostChangesTheChoiceToFewerSubgraphs) {
  // No hand-off: the 3-sub-graph sandwich is 4x faster than any contiguous split.
  const CostModel free(sandwich_profile(0));
  EXPECT_EQ(brute_best_pipeline(free), "BBLLB");
  EXPECT_EQ(plan(free, Objective::kThroughput, 1).ranked.at(0).mapping.order, "BBLLB");
  // 95 us per boundary side: BBLLB 220 us, the contiguous splits 215 us (BBLLL, BBBLL; B only
  // 230). Every search agrees with the brute force.
  const CostModel costly(sandwich_profile(95));
  const std::string best = brute_best_pipeline(costly);
  EXPECT_TRUE(is_contiguous(best)) << best;
  EXPECT_EQ(subgraph_count(best), 2u);
  const Candidate dp = pipeline_dp(costly);
  EXPECT_DOUBLE_EQ(dp.prediction.period_us, 215);
  EXPECT_DOUBLE_EQ(refine_pipeline(costly, dp).prediction.period_us, 215);
  const PlanResult planned = plan(costly, Objective::kThroughput, 3);
  EXPECT_DOUBLE_EQ(planned.ranked.at(0).prediction.period_us, 215);
  EXPECT_EQ(subgraph_count(planned.ranked.at(0).mapping.order), 2u);
  EXPECT_EQ(planned.preference_note, "");  // the fastest is also the fewest
}

TEST(Search, MoreSubgraphsMustBeatTheErrorMargin) {
  // 84 us: BBLLB 198 us, contiguous 204 us: the sandwich is predicted 3 % faster, inside the 5 %
  // margin, so the refinement and the plan keep 2 sub-graphs; with margin 0 they take it.
  const CostModel model(sandwich_profile(84));
  EXPECT_EQ(brute_best_pipeline(model), "BBLLB");
  const Candidate dp = pipeline_dp(model);
  EXPECT_DOUBLE_EQ(dp.prediction.period_us, 204);
  const Candidate kept = refine_pipeline(model, dp);
  EXPECT_EQ(kept.mapping.order, dp.mapping.order);
  EXPECT_EQ(kept.source, "dp");
  EXPECT_EQ(refine_pipeline(model, dp, 100, 0.0).mapping.order, "BBLLB");
  const PlanResult planned = plan(model, Objective::kThroughput, 3);
  EXPECT_EQ(subgraph_count(planned.ranked.at(0).mapping.order), 2u);
  EXPECT_THAT(planned.preference_note, testing::HasSubstr("BBLLB (3 sub-graphs, predicted 3.0 % faster)"));
  // The sandwich still ranks, right after the mappings it did not beat by the margin.
  const bool listed = std::any_of(planned.ranked.begin(), planned.ranked.end(),
                                  [](const Candidate& c) { return c.mapping.order == "BBLLB"; });
  EXPECT_TRUE(listed);
  EXPECT_EQ(plan(model, Objective::kThroughput, 1, 1, 0.0).ranked.at(0).mapping.order, "BBLLB");
  // Far beyond the margin (no hand-off): the sandwich wins again, with no note.
  EXPECT_EQ(plan(CostModel(sandwich_profile(0)), Objective::kThroughput, 1).preference_note, "");
  EXPECT_EQ(subgraph_count("BBLLB"), 3u);
  EXPECT_EQ(subgraph_count("B"), 1u);
  EXPECT_EQ(subgraph_count(""), 0u);
}

TEST(Search, NonDominatedSortAndCrowding) {
  const std::vector<std::vector<double>> points = {{1, 5}, {2, 2}, {5, 1}, {3, 3}, {4, 4}, {2, 2}};
  const auto fronts = non_dominated_sort(points);
  ASSERT_EQ(fronts.size(), 3u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{0, 1, 2, 5}));
  EXPECT_EQ(fronts[1], (std::vector<size_t>{3}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{4}));
  const auto distance = crowding_distance(points, fronts[0]);
  EXPECT_TRUE(std::isinf(distance[0]));
  EXPECT_TRUE(std::isinf(distance[2]));
  EXPECT_FALSE(std::isinf(distance[1]) && std::isinf(distance[3]));
  EXPECT_TRUE(dominates({1, 1}, {1, 2}));
  EXPECT_FALSE(dominates({1, 2}, {1, 2}));
  EXPECT_FALSE(dominates({0, 3}, {1, 2}));
}

void expect_front_contains_optima(const CostModel& model, bool energy) {
  const Candidate dp = pipeline_dp(model);
  const Candidate sp = shortest_path_latency(model);
  const Mapping sp_pipeline{sp.mapping.order, Mode::kPipeline, sp.mapping.levels};
  Nsga2Options options;
  options.seed = 5;
  options.population = 40;
  options.generations = 60;
  options.use_energy = energy;
  const std::vector<Candidate> front = nsga2(model, {dp.mapping, sp_pipeline}, options);
  ASSERT_FALSE(front.empty());
  const bool use_energy = energy && model.has_energy();
  for (size_t a = 0; a < front.size(); ++a) {
    for (size_t b = 0; b < front.size(); ++b) {
      EXPECT_FALSE(dominates(objectives(front[a].prediction, use_energy), objectives(front[b].prediction, use_energy)))
          << front[a].mapping.order << " dominates " << front[b].mapping.order;
    }
  }
  double best_period = std::numeric_limits<double>::infinity(), best_latency = best_period;
  for (const Candidate& c : front) {
    best_period = std::min(best_period, c.prediction.period_us);
    best_latency = std::min(best_latency, c.prediction.latency_ms);
  }
  // Times fall with frequency in the synthetic profiles, so the fastest levels are optimal: the
  // least latency over all orders is the shortest path's, which NSGA-II keeps. The DP's period
  // is the best over contiguous orders; NSGA-II may beat it with a non-contiguous one.
  EXPECT_NEAR(best_latency, sp.prediction.latency_ms, 1e-9 * best_latency);
  EXPECT_LE(best_period, dp.prediction.period_us * (1 + 1e-12));
  // Each seed is on the front or weakly dominated by a point of it.
  for (const Mapping& seed : {dp.mapping, sp_pipeline}) {
    const std::vector<double> s = objectives(model.predict(seed), use_energy);
    const bool covered = std::any_of(front.begin(), front.end(), [&](const Candidate& c) {
      const std::vector<double> f = objectives(c.prediction, use_energy);
      return f == s || dominates(f, s);
    });
    EXPECT_TRUE(covered) << seed.order;
  }

  const std::vector<Candidate> again = nsga2(model, {dp.mapping, sp_pipeline}, options);
  ASSERT_EQ(again.size(), front.size()) << "deterministic for a seed";
  for (size_t i = 0; i < front.size(); ++i) EXPECT_EQ(again[i].mapping, front[i].mapping);
}

TEST(Search, Nsga2FrontIsNonDominatedAndKeepsTheSeededOptima) {
  SyntheticSpec spec;
  spec.layers = 12;
  spec.processors = 4;
  spec.levels = 4;
  spec.seed = 3;
  expect_front_contains_optima(CostModel(make_synthetic_profile(spec)), false);
  spec.power = true;
  spec.seed = 4;
  expect_front_contains_optima(CostModel(make_synthetic_profile(spec)), true);
}

TEST(Search, BaselinesHeftAndSingleProcessor) {
  LayerProfile p;
  p.network.graph = "t";
  p.network.layer_count = 3;
  p.processors = {{'B', "b", "cpu", "", 'B', {0}, "", {}, {}, {}}, {'L', "l", "cpu", "", 'L', {1}, "", {}, {}, {}}};
  p.layer_times = {{'B', 0, {10, 100, 10}, {}}, {'L', 0, {20, 20, 20}, {}}};
  const CostModel model(p);
  // Earliest finish: layer 0 on B (10 < 20), layer 1 on L (30 < 110), layer 2 on B (40 < 50).
  const Candidate h = heft(model, Mode::kSwitch);
  EXPECT_EQ(h.mapping.order, "BLB");
  EXPECT_DOUBLE_EQ(h.prediction.latency_ms, 0.040);
  const Candidate single = best_single_processor(model, Mode::kSwitch);
  EXPECT_EQ(single.mapping.order, "LLL");
  EXPECT_DOUBLE_EQ(single.prediction.latency_ms, 0.060);
}

TEST(Search, BruteForceVisitsEveryOrder) {
  SyntheticSpec spec;
  spec.layers = 4;
  spec.processors = 3;
  const CostModel model(make_synthetic_profile(spec));
  std::set<std::string> orders;
  brute_force(model, Mode::kSwitch, {}, [&](const Mapping& m, const Prediction&) { orders.insert(m.order); });
  EXPECT_EQ(orders.size(), 81u);
  EXPECT_TRUE(is_contiguous("BBLLG"));
  EXPECT_FALSE(is_contiguous("BBLB"));
  EXPECT_TRUE(is_contiguous("B"));
}

TEST(Search, PlanRanksByTheObjective) {
  SyntheticSpec spec;
  spec.layers = 10;
  spec.processors = 3;
  spec.levels = 2;
  const CostModel model(make_synthetic_profile(spec));
  const PlanResult t = plan(model, Objective::kThroughput, 3);
  ASSERT_EQ(t.ranked.size(), 3u);
  // Within the sub-graph margin of the best (planner/search.h), and never with more sub-graphs
  // than a faster one unless beyond the margin.
  const double margin = 1 + kSubgraphGainMargin;
  EXPECT_LE(t.ranked[0].prediction.period_us, pipeline_dp(model).prediction.period_us * margin);
  EXPECT_LE(t.ranked[0].prediction.period_us, t.ranked[1].prediction.period_us * margin);
  EXPECT_LE(t.ranked[0].prediction.period_us, t.single_processor.prediction.period_us);
  const PlanResult exact = plan(model, Objective::kThroughput, 3, 1, 0.0);
  EXPECT_LE(exact.ranked[0].prediction.period_us, pipeline_dp(model).prediction.period_us * (1 + 1e-12));
  EXPECT_LE(exact.ranked[0].prediction.period_us, exact.ranked[1].prediction.period_us);
  const PlanResult l = plan(model, Objective::kLatency, 2);
  EXPECT_EQ(l.ranked[0].mapping.mode, Mode::kSwitch);
  EXPECT_NEAR(l.ranked[0].prediction.latency_ms, shortest_path_latency(model).prediction.latency_ms, 1e-12);
  EXPECT_THROW(plan(model, Objective::kEnergy, 3), InputError);  // no power data
  spec.power = true;
  const CostModel powered(make_synthetic_profile(spec));
  const PlanResult e = plan(powered, Objective::kEnergy, 4);
  ASSERT_FALSE(e.ranked.empty());
  for (size_t i = 1; i < e.ranked.size(); ++i) {
    EXPECT_LE(e.ranked[i - 1].prediction.energy_mj_per_frame, e.ranked[i].prediction.energy_mj_per_frame);
  }
  EXPECT_LE(plan(powered, Objective::kPareto, 4).ranked.size(), 4u);
}

}  // namespace
}  // namespace co_up::planner
