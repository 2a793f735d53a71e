// The pipeline cost fit: measurements made by the DAG model with known costs per sub-graph and
// per edge are fitted back to those costs, from a model that had none; with each processor's
// run alone beside them, the factor on layer times comes back whatever the host's speed.
#include "planner/pipeline_cost_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "planner/synthetic_profile.h"
#include "tests/planner/two_processor_dag.h"

namespace co_up::planner {
namespace {

struct Fixture {
  CostModel model;
  graph::UnitDag chain;
  explicit Fixture(uint64_t seed) : model(make_profile(seed)) {
    std::vector<std::vector<uint32_t>> predecessors = {{}};
    for (uint32_t u = 1; u < 12; ++u) predecessors.push_back({u - 1});
    chain = test::unit_dag_of(std::move(predecessors));
  }
  static LayerProfile make_profile(uint64_t seed) {
    SyntheticSpec spec;
    spec.layers = 12;
    spec.processors = 2;
    spec.shared_hosts = false;
    spec.seed = seed;
    return make_synthetic_profile(spec);
  }
};

const std::vector<std::string> kOrders = {"BBBBBBLLLLLL", "BBBBLLLLBBBB", "BBBLLLBBBLLL",
                                          "BLBLBLBLBLBL", "LBLBLBLBLBLB", "LLLLLLBBBBBB"};

// Each order's period as the model with the given costs predicts a run of `frames`.
std::vector<PipelineRun> measured_by(const Fixture& f, double subgraph_us, double edge_us, uint32_t frames,
                                     double slowdown = 1, double work_factor = 1) {
  DagCostOptions options;
  options.pipeline_subgraph_us = subgraph_us;
  options.pipeline_edge_us = edge_us;
  options.pipeline_work_factor = work_factor;
  options.pipeline_frames = frames;
  const DagCostModel truth(f.model, f.chain, options);
  std::vector<PipelineRun> runs;
  for (const std::string& order : kOrders) {
    runs.push_back({order, frames, slowdown * truth.predict({order, Mode::kPipeline, {}}).period_us});
  }
  return runs;
}

TEST(PipelineCostFit, RecoversTheCostPerSubGraphRun) {
  const Fixture f(3);
  const DagCostModel start(f.model, f.chain);
  const PipelineCostFit fit =
      fit_pipeline_costs(start, measured_by(f, 7, 0, 11), PipelineCostShape::kPerSubGraph, false);
  EXPECT_DOUBLE_EQ(fit.subgraph_us, 7);
  EXPECT_DOUBLE_EQ(fit.edge_us, 0);
  EXPECT_NEAR(fit.error, 0, 1e-12);
}

TEST(PipelineCostFit, RelativeToTheFirstRunACommonSlowdownCancels) {
  const Fixture f(4);
  const DagCostModel start(f.model, f.chain);
  // Every run 10 % slower (both cores at once, or other load): absolute, the per-sub-graph cost
  // takes some of it; relative to the first run the slowdown cancels.
  const std::vector<PipelineRun> slow = measured_by(f, 6, 0, 11, 1.1);
  EXPECT_GT(fit_pipeline_costs(start, slow, PipelineCostShape::kPerSubGraph, false).subgraph_us, 6);
  const PipelineCostFit relative = fit_pipeline_costs(start, slow, PipelineCostShape::kPerSubGraph, true);
  EXPECT_DOUBLE_EQ(relative.subgraph_us, 6);
  EXPECT_NEAR(relative.error, 0, 1e-12);
}

// Layers 7 % slower in a pipeline than profiled (both processors at once) and 4 us per
// sub-graph run: fitted on the periods as measured, both come back. Relative to the first run
// the factor cancels, and a cost per sub-graph alone cannot stand in for it (it grows with the
// sub-graphs, the factor with the work).
TEST(PipelineCostFit, RecoversAWorkFactorBesideTheCostPerSubGraphRun) {
  const Fixture f(6);
  DagCostModel start(f.model, f.chain);
  start.set_pipeline_work_factor(1);
  const std::vector<PipelineRun> runs = measured_by(f, 4, 0, 11, 1, 1.07);
  const PipelineCostFit fit = fit_pipeline_costs(start, runs, PipelineCostShape::kWorkFactorAndSubGraph, false);
  EXPECT_NEAR(fit.work_factor, 1.07, 0.002);
  EXPECT_NEAR(fit.subgraph_us, 4, 1);
  EXPECT_LT(fit.error, 0.002);
  const PipelineCostFit alone = fit_pipeline_costs(start, runs, PipelineCostShape::kPerSubGraph, false);
  EXPECT_GT(alone.error, 10 * fit.error);
  EXPECT_THROW(fit_pipeline_costs(start, runs, PipelineCostShape::kWorkFactorAndSubGraph, true), InputError);
}

// Runs 5 % faster than the layer times and 4 us per sub-graph run predict: the factor stays 1
// (the other processor's work never speeds layers up), and the cost per sub-graph run alone
// takes what it can of the difference.
TEST(PipelineCostFit, TheWorkFactorStaysAtLeastOne) {
  const Fixture f(6);
  DagCostModel start(f.model, f.chain);
  start.set_pipeline_work_factor(1);
  const std::vector<PipelineRun> runs = measured_by(f, 4, 0, 11, 0.95);
  const PipelineCostFit fit = fit_pipeline_costs(start, runs, PipelineCostShape::kWorkFactorAndSubGraph, false);
  EXPECT_DOUBLE_EQ(fit.work_factor, 1);
  EXPECT_LT(fit.subgraph_us, 4);
  // The best cost with the factor at 1: no cost per sub-graph from 0 to the limit fits better.
  DagCostModel at_one = start;
  const auto rms = [&](double subgraph_us) {
    at_one.set_pipeline_subgraph_us(subgraph_us);
    double sum = 0;
    for (double e : pipeline_period_errors(at_one, runs, false)) sum += e * e;
    return std::sqrt(sum / static_cast<double>(runs.size()));
  };
  for (double us = 0; us <= 20; us += 1) EXPECT_GE(rms(us), fit.error - 1e-12) << us;
}

// Fitting both numbers never fits worse than the cost per sub-graph alone (it starts there).
TEST(PipelineCostFit, BothNumbersFitAtLeastAsWellAsOne) {
  const Fixture f(5);
  const DagCostModel start(f.model, f.chain);
  const std::vector<PipelineRun> runs = measured_by(f, 9, 25, 11);
  const PipelineCostFit one = fit_pipeline_costs(start, runs, PipelineCostShape::kPerSubGraph, true);
  const PipelineCostFit both = fit_pipeline_costs(start, runs, PipelineCostShape::kBoth, true);
  EXPECT_LE(both.error, one.error);
  EXPECT_DOUBLE_EQ(one.edge_us, 0);
}

// The pipeline runs of a host whose layers ran `b_scale` / `l_scale` times as long as the
// profile's layer step measured them (the host's speed drifted in between), with the given
// co-run factor and cost per sub-graph run; and beside them each processor's whole network alone
// (factor 1: nothing else computes), the references.
struct DriftedRuns {
  std::vector<PipelineRun> runs, references;
};
DriftedRuns measured_after_drift(const Fixture& f, double b_scale, double l_scale, double subgraph_us,
                                 double work_factor) {
  constexpr uint32_t kFrames = 11;
  const CostModel times = f.model.with_layer_scale('B', b_scale).with_layer_scale('L', l_scale);
  DagCostOptions options;
  options.pipeline_subgraph_us = subgraph_us;
  options.pipeline_edge_us = 0;
  options.pipeline_work_factor = work_factor;
  options.pipeline_frames = kFrames;
  const DagCostModel truth(times, f.chain, options);
  DriftedRuns d;
  for (const std::string& order : kOrders) d.runs.push_back({order, kFrames, truth.predict({order, Mode::kPipeline, {}}).period_us});
  options.pipeline_work_factor = 1;
  const DagCostModel alone(times, f.chain, options);
  for (const char p : {'B', 'L'}) {
    const std::string order(12, p);
    d.references.push_back({order, kFrames, alone.predict({order, Mode::kPipeline, {}}).period_us});
  }
  return d;
}

DagCostModel start_without_costs(const Fixture& f) {
  DagCostModel start(f.model, f.chain);
  start.set_pipeline_subgraph_us(0);
  start.set_pipeline_edge_us(0);
  start.set_pipeline_work_factor(1);
  return start;
}

// The host ran 5 % slower while the pipelines ran than in the layer step, and layers 3 % slower
// again beside the other processor's work: against the references the fit finds the 3 %, where
// against the layer step's times it took both (about 8 %).
TEST(PipelineCostFit, SameMomentReferencesSeparateTheHostsDriftFromTheCoRunFactor) {
  const Fixture f(6);
  const DagCostModel start = start_without_costs(f);
  const DriftedRuns d = measured_after_drift(f, 1.05, 1.05, 4, 1.03);
  const SameMomentPipelineFit fit =
      fit_pipeline_costs_same_moment(start, d.runs, d.references, PipelineCostShape::kWorkFactorAndSubGraph);
  EXPECT_NEAR(fit.costs.work_factor, 1.03, 0.002);
  EXPECT_NEAR(fit.costs.subgraph_us, 4, 1);
  EXPECT_LT(fit.costs.error, 0.002);
  ASSERT_EQ(fit.speeds.size(), 2u);
  EXPECT_EQ(fit.speeds[0].processor, 'B');
  EXPECT_EQ(fit.speeds[1].processor, 'L');
  for (const SameMomentSpeed& s : fit.speeds) EXPECT_NEAR(s.layer_scale, 1.05, 0.002) << s.processor;
  const PipelineCostFit layer_step = fit_pipeline_costs(start, d.runs, PipelineCostShape::kWorkFactorAndSubGraph, false);
  EXPECT_GT(layer_step.work_factor, 1.07);
}

// Each processor drifts its own way (one slower, one faster): each gets its own scale.
TEST(PipelineCostFit, SameMomentReferencesScaleEachProcessorOnItsOwn) {
  const Fixture f(7);
  const DriftedRuns d = measured_after_drift(f, 1.04, 0.97, 6, 1.06);
  const SameMomentPipelineFit fit = fit_pipeline_costs_same_moment(start_without_costs(f), d.runs, d.references,
                                                                   PipelineCostShape::kWorkFactorAndSubGraph);
  EXPECT_NEAR(fit.costs.work_factor, 1.06, 0.002);
  EXPECT_NEAR(fit.costs.subgraph_us, 6, 1);
  ASSERT_EQ(fit.speeds.size(), 2u);
  EXPECT_NEAR(fit.speeds[0].layer_scale, 1.04, 0.002);
  EXPECT_NEAR(fit.speeds[1].layer_scale, 0.97, 0.002);
}

// Without references the fit is fit_pipeline_costs's; a reference must be one processor's, once.
TEST(PipelineCostFit, SameMomentWithoutReferencesIsThePlainFitAndBadReferencesAreInputErrors) {
  const Fixture f(6);
  const DagCostModel start = start_without_costs(f);
  const DriftedRuns d = measured_after_drift(f, 1.05, 1.05, 4, 1.03);
  const SameMomentPipelineFit none =
      fit_pipeline_costs_same_moment(start, d.runs, {}, PipelineCostShape::kWorkFactorAndSubGraph);
  const PipelineCostFit plain = fit_pipeline_costs(start, d.runs, PipelineCostShape::kWorkFactorAndSubGraph, false);
  EXPECT_TRUE(none.speeds.empty());
  EXPECT_DOUBLE_EQ(none.costs.work_factor, plain.work_factor);
  EXPECT_DOUBLE_EQ(none.costs.subgraph_us, plain.subgraph_us);
  const auto fit_with = [&](std::vector<PipelineRun> references) {
    return fit_pipeline_costs_same_moment(start, d.runs, references, PipelineCostShape::kWorkFactorAndSubGraph);
  };
  EXPECT_THROW(fit_with({{"BBBBBBLLLLLL", 11, 100}}), InputError);
  EXPECT_THROW(fit_with({{std::string(12, 'X'), 11, 100}}), InputError);
  EXPECT_THROW(fit_with({d.references[0], d.references[0]}), InputError);
  EXPECT_THROW(fit_with({{std::string(12, 'B'), 11, 0}}), InputError);
}

TEST(PipelineCostFit, BadRunsAreInputErrors) {
  const Fixture f(3);
  const DagCostModel start(f.model, f.chain);
  EXPECT_THROW(fit_pipeline_costs(start, {}, PipelineCostShape::kBoth, false), InputError);
  EXPECT_THROW(fit_pipeline_costs(start, {{"BBBBBBLLLLLL", 1, 100}}, PipelineCostShape::kBoth, false), InputError);
  EXPECT_THROW(fit_pipeline_costs(start, {{"BBBBBBLLLLLL", 10, 0}}, PipelineCostShape::kBoth, false), InputError);
}

}  // namespace
}  // namespace co_up::planner
