#include "planner/pipeline_cost_fit.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace co_up::planner {
namespace {

double median_abs(std::vector<double> values) {
  if (values.empty()) return 0;
  for (double& v : values) v = std::abs(v);
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The coarse grid: 5 us steps to 100 us, then 25 us steps to `limit` (a scan then refines
// around its best in 1 us steps).
double coarse_step(double us) { return us < 100 ? 5 : 25; }

}  // namespace

std::vector<double> pipeline_period_errors(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                           bool relative) {
  if (runs.empty()) throw InputError("the pipeline cost fit needs at least one measured run");
  // One model per frame count (the option is fixed at construction).
  std::map<uint32_t, DagCostModel> by_frames;
  std::vector<double> ratio;  // predicted / measured
  for (const PipelineRun& r : runs) {
    if (r.frames < 2 || !(r.period_us > 0) || !std::isfinite(r.period_us)) {
      throw InputError("pipeline cost fit: run '" + r.order + "' needs at least 2 frames and a positive period");
    }
    auto it = by_frames.find(r.frames);
    if (it == by_frames.end()) {
      DagCostOptions options = model.options();
      options.pipeline_frames = r.frames;
      it = by_frames.emplace(r.frames, DagCostModel(model.model(), model.dag(), options)).first;
    }
    const Prediction p = it->second.predict(Mapping{r.order, Mode::kPipeline, {}});
    ratio.push_back(p.period_us / r.period_us);
  }
  std::vector<double> errors;
  for (double x : ratio) errors.push_back((relative ? x / ratio[0] : x) - 1);
  return errors;
}

PipelineCostFit fit_pipeline_costs(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                   PipelineCostShape shape, bool relative) {
  DagCostModel m = model;
  PipelineCostFit fit;
  fit.subgraph_us = std::max(0.0, m.options().pipeline_subgraph_us);
  fit.edge_us = std::max(0.0, m.options().pipeline_edge_us);
  if (shape != PipelineCostShape::kPerEdge) m.set_pipeline_subgraph_us(fit.subgraph_us = 0);
  if (shape != PipelineCostShape::kPerSubGraph) m.set_pipeline_edge_us(fit.edge_us = 0);
  // Relative: a few runs of one pair, the first the reference (its error is 0 by definition):
  // least squares, so that every other run counts. Absolute: many runs of random mappings,
  // some hit by other load: the median.
  const auto error = [&] {
    const std::vector<double> e = pipeline_period_errors(m, runs, relative);
    if (!relative) return median_abs(e);
    double sum = 0;
    for (double x : e) sum += x * x;
    return std::sqrt(sum / static_cast<double>(e.size()));
  };
  fit.error = error();
  // One number along its grid, the other held; returns whether it moved.
  const auto scan = [&](bool subgraph) {
    double& value = subgraph ? fit.subgraph_us : fit.edge_us;
    const double before = value;
    const auto try_value = [&](double us) {
      subgraph ? m.set_pipeline_subgraph_us(us) : m.set_pipeline_edge_us(us);
      const double e = error();
      if (e < fit.error) {
        fit.error = e;
        value = us;
      }
    };
    const double limit = subgraph ? kPipelineSubgraphFitLimitUs : kPipelineEdgeFitLimitUs;
    for (double us = 0; us <= limit; us += coarse_step(us)) try_value(us);
    const double centre = value;
    for (double us = std::max(0.0, centre - coarse_step(centre)); us <= centre + coarse_step(centre) && us <= limit;
         us += 1) {
      try_value(us);
    }
    subgraph ? m.set_pipeline_subgraph_us(value) : m.set_pipeline_edge_us(value);
    return value != before;
  };
  if (shape == PipelineCostShape::kPerSubGraph) scan(true);
  if (shape == PipelineCostShape::kPerEdge) scan(false);
  if (shape == PipelineCostShape::kBoth) {
    for (int round = 0; round < 4; ++round) {
      const bool moved_subgraph = scan(true);
      const bool moved_edge = scan(false);
      if (!moved_subgraph && !moved_edge && round > 0) break;
    }
  }
  return fit;
}

}  // namespace co_up::planner
