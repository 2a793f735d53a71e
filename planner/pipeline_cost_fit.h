// What a pipeline costs beyond its layers and copies (DagCostOptions::pipeline_subgraph_us and
// pipeline_edge_us), fitted from measured pipeline runs against the DAG cost model's own
// simulation of those runs.
//
// Why against the simulation: a pipeline of N frames all admitted at once is not its steady
// state (the first frame ends late, queueing grows with the frame's index), and a period taken
// from the chain model's busiest resource mistakes that for a cost per boundary (it pulled the
// profile's hand-off to 0 on short runs). The DAG model simulates the very run measured, so
// what is left between it and the measurement is what the executor costs per sub-graph run
// (its thread takes the scheduling lock, claims, commits and wakes the other thread: work of
// that processor) and per cross-processor edge (the reader learning of a frame: a delay).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/dag_cost_model.h"

namespace co_up::planner {

// One measured pipeline run: `frames` frames all admitted at once (as `co_up run --n=N`), the
// period as profiler::summarize takes it: (end of the last - end of the first) / (frames - 1).
struct PipelineRun {
  std::string order;
  uint32_t frames = 0;
  double period_us = 0;
};

// Which numbers a fit may move (the others stay as `model` has them: set them to 0 (1 for the
// factor) first for a model with nothing else). kWorkFactorAndSubGraph: the factor on layer
// times and the cost per sub-graph run together, for absolute fits only (relative to the first
// run, a factor common to all runs cancels).
enum class PipelineCostShape { kPerSubGraph, kPerEdge, kBoth, kWorkFactorAndSubGraph };

struct PipelineCostFit {
  double subgraph_us = 0;   // per sub-graph run, work of its processor
  double edge_us = 0;       // per cross-processor edge, a delay
  double work_factor = 1;   // on every layer time (DagCostOptions::pipeline_work_factor)
  double error = 0;         // the fit's error at these values (see fit_pipeline_costs)
};

// The largest values the fit tries (a per-sub-graph cost of 2 ms would be a scheduling stall,
// not a cost of the executor; a factor above 1.5, a profile whose layers ran beside other work).
// The factor is at least 1, as DagCostModel takes it: the other processor's work slows layers
// and never speeds them up. Below 1, the fit took for the factor what the runs alone put into
// the layer scales (fit_pipeline_costs_same_moment): the test fixture's profiles fitted x0.96 and
// x0.97 that way, and predicted every pipeline of it 4-7 % too fast.
inline constexpr double kPipelineSubgraphFitLimitUs = 1000;
inline constexpr double kPipelineEdgeFitLimitUs = 3000;
inline constexpr double kPipelineWorkFactorMin = 1.0, kPipelineWorkFactorMax = 1.5;

// The relative error of each run's predicted period by `model` (pipeline_frames set per run).
// `relative`: each against the first run's (measured / predicted of runs[0] rescales the rest:
// both cores running at once slow each other by a factor the profile's one-processor layer
// times lack, common to all of a pair's runs), else absolute.
std::vector<double> pipeline_period_errors(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                           bool relative);

// Minimises the error of the predicted periods (pipeline_period_errors) over the shape's
// numbers: absolute, the median |relative error| (many runs, some hit by other load), except
// for kWorkFactorAndSubGraph; relative, and kWorkFactorAndSubGraph, the root mean square of the
// errors (a pair's few runs, each of which must count). Costs along a grid (5 us steps to
// 100 us, then 25 us), refined in 1 us steps around its best, kBoth's two alternately until
// neither moves (at most 4 rounds); kWorkFactorAndSubGraph by Gauss-Newton steps from 1 and
// 0 us (the two trade against each other along a valley where scanning one at a time stalls),
// inside [kPipelineWorkFactorMin, kPipelineWorkFactorMax] and the cost's limit, then scanned in
// 0.001 and 1 us steps around the result. The other options of `model` are kept.
// Throws InputError for no runs, fewer than 2 frames, a non-positive period, or a relative
// kWorkFactorAndSubGraph fit.
PipelineCostFit fit_pipeline_costs(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                   PipelineCostShape shape, bool relative);

// A processor's speed while the pipeline runs were measured, against the layer times the model
// has (measured earlier, in their own step): its reference run, the whole network on it alone in
// the same pipeline machinery and frame count, interleaved with the pipeline runs.
struct SameMomentSpeed {
  char processor = 0;
  // The model's layer times of `processor` x this predict its reference run's period (with the
  // fit's cost per sub-graph run; > 1: it ran slower than in the layer step).
  double layer_scale = 1;
};

struct SameMomentPipelineFit {
  PipelineCostFit costs;  // work_factor: the slowdown beside the other processor's work alone
  std::vector<SameMomentSpeed> speeds;  // one per reference, in their order
};

// fit_pipeline_costs (absolute) against layer times rescaled to the moment of the runs: per
// processor of `references` (each the order all on one processor, measured as `runs` were and
// interleaved with them; at most one per processor) its layer times are scaled so that the model
// (work factor 1: nothing else computes) predicts the reference's period; processors without one
// keep the model's times. The factor then says how much slower a layer runs while the other
// processor works, not how much faster or slower the host was than when the layer times were
// measured (a fit against those took both: one profile cannot tell them apart). The scale and
// the cost per sub-graph run (which the references pay once per frame) are fitted in turn,
// twice. No references: fit_pipeline_costs as it is. Throws InputError as fit_pipeline_costs
// does, and for a reference on several processors, an unknown letter, or two on one processor.
SameMomentPipelineFit fit_pipeline_costs_same_moment(const DagCostModel& model, const std::vector<PipelineRun>& runs,
                                                     const std::vector<PipelineRun>& references,
                                                     PipelineCostShape shape);

}  // namespace co_up::planner
