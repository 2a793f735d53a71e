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

// The factor and the cost per sub-graph together. The two trade against each other along a
// valley (more of one, less of the other), where scanning one number at a time stalls: Gauss-
// Newton steps on the runs' errors instead (the period is close to linear in both: the factor
// scales the busiest processor's layer work, the cost adds its sub-graph count), the slopes by
// finite differences, kept inside the limits (a cost that would go negative stays 0 and only
// the factor moves; a factor that would go below 1 stays 1 and only the cost moves), then a
// scan around the result in 0.001 / 1 us steps. `error` evaluates `m` as it stands; `fit`
// holds the best seen.
template <class Error>
void fit_factor_and_subgraph(DagCostModel& m, const std::vector<PipelineRun>& runs, const Error& error,
                             PipelineCostFit& fit) {
  const auto set = [&](double factor, double subgraph_us) {
    m.set_pipeline_work_factor(factor);
    m.set_pipeline_subgraph_us(subgraph_us);
  };
  const auto consider = [&](double factor, double subgraph_us) {
    set(factor, subgraph_us);
    const double e = error();
    if (e < fit.error) {
      fit.error = e;
      fit.work_factor = factor;
      fit.subgraph_us = subgraph_us;
    }
  };
  constexpr double kFactorStep = 0.01, kSubgraphStep = 5;
  double factor = fit.work_factor, subgraph_us = fit.subgraph_us;
  for (int iteration = 0; iteration < 8; ++iteration) {
    set(factor, subgraph_us);
    const std::vector<double> r = pipeline_period_errors(m, runs, false);
    set(factor + kFactorStep, subgraph_us);
    const std::vector<double> rf = pipeline_period_errors(m, runs, false);
    set(factor, subgraph_us + kSubgraphStep);
    const std::vector<double> rs = pipeline_period_errors(m, runs, false);
    double ff = 0, fs = 0, ss = 0, fr = 0, sr = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      const double jf = (rf[i] - r[i]) / kFactorStep, js = (rs[i] - r[i]) / kSubgraphStep;
      ff += jf * jf;
      fs += jf * js;
      ss += js * js;
      fr += jf * r[i];
      sr += js * r[i];
    }
    double d_factor = 0, d_subgraph = 0;
    const double det = ff * ss - fs * fs;
    if (det > 1e-12 * ff * ss && det > 0) {
      d_factor = -(ss * fr - fs * sr) / det;
      d_subgraph = -(ff * sr - fs * fr) / det;
    }
    if (!(det > 1e-12 * ff * ss && det > 0) || subgraph_us + d_subgraph < 0) {
      d_subgraph = -subgraph_us;  // at the limit: the factor alone
      d_factor = ff > 0 ? -(fr + fs * d_subgraph) / ff : 0;
    }
    if (factor + d_factor < kPipelineWorkFactorMin && ss > 0) {
      d_factor = kPipelineWorkFactorMin - factor;  // at the limit: the cost alone
      d_subgraph = std::max(-subgraph_us, -(sr + fs * d_factor) / ss);
    }
    const double next_factor = std::clamp(factor + d_factor, kPipelineWorkFactorMin, kPipelineWorkFactorMax);
    const double next_subgraph = std::clamp(subgraph_us + d_subgraph, 0.0, kPipelineSubgraphFitLimitUs);
    const bool small = std::abs(next_factor - factor) < 1e-4 && std::abs(next_subgraph - subgraph_us) < 0.1;
    factor = next_factor;
    subgraph_us = next_subgraph;
    consider(factor, subgraph_us);
    if (small) break;
  }
  for (int round = 0; round < 2; ++round) {
    const double f0 = fit.work_factor, s0 = std::round(fit.subgraph_us);
    for (int i = -10; i <= 10; ++i) {
      const double f = f0 + 0.001 * i;
      if (f >= kPipelineWorkFactorMin && f <= kPipelineWorkFactorMax) consider(f, fit.subgraph_us);
    }
    for (int i = -5; i <= 5; ++i) {
      if (s0 + i >= 0 && s0 + i <= kPipelineSubgraphFitLimitUs) consider(fit.work_factor, s0 + i);
    }
  }
  set(fit.work_factor, fit.subgraph_us);
}

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
  const bool with_factor = shape == PipelineCostShape::kWorkFactorAndSubGraph;
  if (with_factor && relative) {
    throw InputError("pipeline cost fit: a work factor needs an absolute fit (relative to the first run it cancels)");
  }
  DagCostModel m = model;
  PipelineCostFit fit;
  fit.subgraph_us = std::max(0.0, m.options().pipeline_subgraph_us);
  fit.edge_us = std::max(0.0, m.options().pipeline_edge_us);
  fit.work_factor = m.options().pipeline_work_factor > 0 ? m.options().pipeline_work_factor : 1.0;
  if (shape != PipelineCostShape::kPerEdge) m.set_pipeline_subgraph_us(fit.subgraph_us = 0);
  if (shape == PipelineCostShape::kPerEdge || shape == PipelineCostShape::kBoth) m.set_pipeline_edge_us(fit.edge_us = 0);
  if (with_factor) m.set_pipeline_work_factor(fit.work_factor = 1);
  // Relative: a few runs of one pair, the first the reference (its error is 0 by definition):
  // least squares, so that every other run counts; so too a pair's few runs fitted absolutely
  // with a factor. Absolute without one: many runs of random mappings, some hit by other load:
  // the median.
  const bool least_squares = relative || with_factor;
  const auto error = [&] {
    const std::vector<double> e = pipeline_period_errors(m, runs, relative);
    if (!least_squares) return median_abs(e);
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
  const auto alternate = [&](auto first, auto second) {
    for (int round = 0; round < 4; ++round) {
      const bool moved_first = first();
      const bool moved_second = second();
      if (!moved_first && !moved_second && round > 0) break;
    }
  };
  if (shape == PipelineCostShape::kPerSubGraph) scan(true);
  if (shape == PipelineCostShape::kPerEdge) scan(false);
  if (shape == PipelineCostShape::kBoth) alternate([&] { return scan(true); }, [&] { return scan(false); });
  if (with_factor) fit_factor_and_subgraph(m, runs, error, fit);
  return fit;
}

SameMomentPipelineFit fit_pipeline_costs_same_moment(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                                     const std::vector<PipelineRun>& references,
                                                     PipelineCostShape shape) {
  const CostModel& base = model.model();
  SameMomentPipelineFit result;
  for (const PipelineRun& r : references) {
    const char p = r.order.empty() ? '\0' : r.order.front();
    if (r.order.empty() || r.order.find_first_not_of(p) != std::string::npos ||
        base.index_of(p) == base.letters().size()) {
      throw InputError("pipeline cost fit: reference run '" + r.order +
                       "' must have every unit on one processor of the profile (" + base.letters() + ")");
    }
    for (const SameMomentSpeed& s : result.speeds) {
      if (s.processor == p) throw InputError(std::string("pipeline cost fit: two reference runs on '") + p + "'");
    }
    result.speeds.push_back({p, 1.0});
  }
  const auto scaled_times = [&] {
    CostModel scaled = base;
    for (const SameMomentSpeed& s : result.speeds) scaled = scaled.with_layer_scale(s.processor, s.layer_scale);
    return scaled;
  };
  // Scales that make the model (factor 1, this cost per sub-graph run) predict each reference's
  // period: the period grows with the scale nearly in proportion (the input copy and the cost
  // per sub-graph run do not scale), so a few fixed-point steps converge.
  const auto calibrate = [&](double subgraph_us) {
    for (int step = 0; step < 8 && !references.empty(); ++step) {
      const CostModel scaled = scaled_times();
      DagCostModel m(scaled, model.dag(), model.options());
      m.set_pipeline_work_factor(1);
      m.set_pipeline_subgraph_us(subgraph_us);
      const std::vector<double> errors = pipeline_period_errors(m, references, false);  // predicted / measured - 1
      bool converged = true;
      for (size_t i = 0; i < errors.size(); ++i) {
        result.speeds[i].layer_scale /= 1 + errors[i];
        converged = converged && std::abs(errors[i]) < 1e-9;
      }
      if (converged) break;
    }
  };
  double subgraph_us = model.options().pipeline_subgraph_us;
  for (int round = 0; round < 2; ++round) {
    calibrate(subgraph_us);
    const CostModel scaled = scaled_times();
    result.costs = fit_pipeline_costs(DagCostModel(scaled, model.dag(), model.options()), runs, shape, false);
    if (references.empty()) break;
    subgraph_us = result.costs.subgraph_us;
  }
  return result;
}

}  // namespace co_up::planner
