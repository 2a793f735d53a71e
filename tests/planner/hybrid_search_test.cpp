// Hybrid para/pipe search: exact (equal to brute force over every order) on random small DAG
// profiles, in both modes and several seeds; structured genes on a larger DAG; plans reproducible
// per seed; the "hybrid" registration; constraints nobody reaches are one input error.
#include "planner/hybrid_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "planner/hybrid_plan.h"
#include "planner/search_algorithm.h"
#include "planner/synthetic_profile.h"

namespace co_up::planner {
namespace {

using ::testing::HasSubstr;

// Random DAG over `units` units: each unit after the first reads 1-3 earlier units.
graph::UnitDag random_dag(uint32_t units, uint64_t seed) {
  std::mt19937_64 random(seed);
  graph::UnitDag dag;
  dag.predecessors.resize(units);
  for (uint32_t u = 1; u < units; ++u) {
    const uint32_t reads = 1 + static_cast<uint32_t>(random() % 3);
    for (uint32_t k = 0; k < reads; ++k) {
      const uint32_t q = static_cast<uint32_t>(random() % u);
      auto& p = dag.predecessors[u];
      if (std::find(p.begin(), p.end(), q) == p.end()) p.push_back(q);
    }
    std::sort(dag.predecessors[u].begin(), dag.predecessors[u].end());
  }
  dag.outputs.assign(units, false);
  dag.outputs.back() = true;
  dag.inputs.assign(units, false);
  dag.inputs.front() = true;
  return dag;
}

LayerProfile random_profile(uint32_t units, uint32_t processors, uint64_t seed) {
  SyntheticSpec spec;
  spec.layers = units;
  spec.processors = processors;
  spec.seed = seed;
  spec.shared_hosts = false;
  spec.handoff_us = 30;
  return make_synthetic_profile(spec);
}

double brute_force_best(const DagCostModel& model, Mode mode, std::string* best_order) {
  const CostModel& m = model.model();
  const std::string& letters = m.letters();
  const uint32_t n = m.layer_count();
  double best = INFINITY;
  std::vector<size_t> digits(n, 0);
  const auto total = static_cast<size_t>(std::pow(letters.size(), n));
  for (size_t code = 0; code < total; ++code) {
    std::string order(n, ' ');
    size_t c = code;
    for (uint32_t u = 0; u < n; ++u, c /= letters.size()) order[u] = letters[c % letters.size()];
    const Mapping mapping{order, mode, {}};
    const double v = mode == Mode::kSwitch ? model.switch_latency_us(mapping) : model.pipeline_period_us(mapping);
    if (v < best) {
      best = v;
      *best_order = order;
    }
  }
  return best;
}

class ExactSearch : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ExactSearch, EqualsBruteForceInBothModes) {
  const uint64_t seed = GetParam();
  const uint32_t units = 6 + static_cast<uint32_t>(seed % 3);
  const uint32_t processors = seed % 2 == 0 ? 2 : 3;
  const CostModel cost(random_profile(units, processors, seed));
  const DagCostModel model(cost, random_dag(units, seed * 7 + 1));
  for (Mode mode : {Mode::kSwitch, Mode::kPipeline}) {
    std::string brute_order;
    const double brute = brute_force_best(model, mode, &brute_order);
    HybridSearchOptions options;
    options.mode = mode;
    options.seed = seed;
    const HybridSearchResult r = hybrid_search(model, options);
    EXPECT_TRUE(r.exact);
    EXPECT_TRUE(r.every_order);
    const Mapping& found = r.best.mapping;
    const double value = mode == Mode::kSwitch ? model.switch_latency_us(found) : model.pipeline_period_us(found);
    EXPECT_NEAR(value, brute, 1e-9 * brute) << mode_name(mode) << " found " << found.order << ", brute force "
                                             << brute_order;
    // Switch: the prediction is the searched latency. Pipeline: the search bounds the busiest
    // resource; the prediction simulates the run (DagCostModel::predict).
    if (mode == Mode::kSwitch) EXPECT_NEAR(r.best.prediction.latency_ms * 1000, brute, 1e-9 * brute);
    if (mode == Mode::kPipeline) EXPECT_EQ(r.best.prediction.period_us, model.predict(found).period_us);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ExactSearch, ::testing::Values(1, 2, 3, 4, 5, 6));

// Two inception-like modules: 0 -> {1, 2 -> 3, 4} -> 5 -> {6, 7} -> 8.
graph::UnitDag two_modules() {
  graph::UnitDag dag;
  dag.predecessors = {{}, {0}, {0}, {2}, {0}, {1, 3, 4}, {5}, {5}, {6, 7}};
  dag.outputs.assign(9, false);
  dag.outputs.back() = true;
  dag.inputs.assign(9, false);
  dag.inputs.front() = true;
  return dag;
}

TEST(HybridGenes, AboveTheLimitBranchesAreGenes) {
  EXPECT_EQ(hybrid_genes(two_modules(), 2, 1e6).size(), 9u);
  EXPECT_EQ(hybrid_genes(two_modules(), 2, 100),
            (std::vector<std::vector<uint32_t>>{{0}, {1}, {2, 3}, {4}, {5}, {6}, {7}, {8}}));
}

TEST(HybridSearch, StructuredSearchIsExactInItsSpace) {
  const CostModel cost(random_profile(9, 2, 11));
  const DagCostModel model(cost, two_modules());
  HybridSearchOptions options;
  options.exhaustive_limit = 100;  // genes: branches
  const HybridSearchResult r = hybrid_search(model, options);
  EXPECT_TRUE(r.exact);
  EXPECT_FALSE(r.every_order);
  EXPECT_EQ(r.best.mapping.order[2], r.best.mapping.order[3]);  // one branch, one processor
  // Brute force over the 2^8 gene assignments.
  double best = INFINITY;
  const auto genes = hybrid_genes(two_modules(), 2, 100);
  for (size_t code = 0; code < (size_t{1} << genes.size()); ++code) {
    std::string order(9, 'B');
    for (size_t g = 0; g < genes.size(); ++g) {
      for (uint32_t u : genes[g]) order[u] = (code >> g) & 1 ? 'L' : 'B';
    }
    best = std::min(best, model.switch_latency_us({order, Mode::kSwitch, {}}));
  }
  EXPECT_NEAR(model.switch_latency_us(r.best.mapping), best, 1e-9 * best);
}

TEST(HybridSearch, ABudgetTooSmallSaysItIsNotExact) {
  const CostModel cost(random_profile(8, 3, 4));
  const DagCostModel model(cost, random_dag(8, 9));
  HybridSearchOptions options;
  options.node_budget = 0;  // not even the root
  const HybridSearchResult r = hybrid_search(model, options);
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.best.source, "hybrid-bnb (budget)");
}

TEST(HybridPlan, ReproduciblePerSeedAndRankedByTheObjective) {
  const CostModel cost(random_profile(9, 2, 21));
  const DagCostModel model(cost, two_modules());
  for (Objective objective : {Objective::kLatency, Objective::kThroughput, Objective::kPareto}) {
    HybridPlanOptions options;
    options.seed = 3;
    const PlanResult a = plan_hybrid(model, objective, 5, options);
    const PlanResult b = plan_hybrid(model, objective, 5, options);
    ASSERT_FALSE(a.ranked.empty());
    ASSERT_EQ(a.ranked.size(), b.ranked.size());
    for (size_t i = 0; i < a.ranked.size(); ++i) {
      EXPECT_EQ(a.ranked[i].mapping, b.ranked[i].mapping);
      EXPECT_EQ(a.ranked[i].source, b.ranked[i].source);
    }
    for (size_t i = 1; i < a.ranked.size(); ++i) {
      const Prediction& x = a.ranked[i - 1].prediction;
      const Prediction& y = a.ranked[i].prediction;
      if (objective == Objective::kLatency) { EXPECT_LE(x.latency_ms, y.latency_ms); }
      if (objective == Objective::kThroughput) { EXPECT_LE(x.period_us, y.period_us); }
      if (objective == Objective::kPareto) {  // a front (no energy data): more throughput, more latency
        EXPECT_GE(x.throughput_fps, y.throughput_fps);
        EXPECT_GE(x.latency_ms, y.latency_ms);
      }
    }
    // Nothing beats the search's own best for the objective.
    if (objective == Objective::kLatency) {
      EXPECT_LE(a.ranked[0].prediction.latency_ms, a.single_processor.prediction.latency_ms);
    }
  }
}

TEST(HybridPlan, AnUnreachableConstraintIsOneInputError) {
  const CostModel cost(random_profile(9, 2, 21));
  const DagCostModel model(cost, two_modules());
  HybridPlanOptions options;
  options.min_fps = 1e9;
  try {
    plan_hybrid(model, Objective::kThroughput, 5, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no plan reaches --min-fps=1e+09: the closest predicts "));
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  options.min_fps = 0;
  options.max_latency_ms = 1e-6;
  EXPECT_THROW(plan_hybrid(model, Objective::kLatency, 5, options), InputError);
  options.max_latency_ms = 1e6;  // everything reaches it
  EXPECT_FALSE(plan_hybrid(model, Objective::kLatency, 5, options).ranked.empty());
}

TEST(HybridSearch, IsRegisteredAsHybrid) {
  const CostModel cost(random_profile(9, 2, 21));
  const graph::UnitDag dag = two_modules();
  SearchInput input{&cost, Mode::kSwitch};
  input.dag = &dag;
  const std::vector<Candidate> found = run_search("hybrid", input);
  ASSERT_EQ(found.size(), 1u);
  const DagCostModel model(cost, dag);
  HybridSearchOptions options;
  EXPECT_EQ(found[0].mapping, hybrid_search(model, options).best.mapping);
  // Without a DAG: a chain, where it is the exact switch-mode optimum like shortest-path.
  SearchInput chain{&cost, Mode::kSwitch};
  EXPECT_NEAR(run_search("hybrid", chain).front().prediction.latency_ms,
              run_search("shortest-path", chain).front().prediction.latency_ms, 1e-9);
}

}  // namespace
}  // namespace co_up::planner
