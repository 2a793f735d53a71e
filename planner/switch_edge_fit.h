// The switch-mode cost of a cross-processor edge (LayerProfile::switch_edges per edge,
// LayerProfile::switch_edge_mb per megabyte of its tensor), fitted from measured one-frame
// latencies. In switch mode a processor waiting for the other's part of the frame sleeps or
// spins, and reads what the other core wrote from that core's caches; what that costs on top of
// the measured transfers depends on the machine and its load, and a plan that splits layers over
// two processors has one or two such edges per split layer, so the planner needs it measured,
// not assumed.
//
// On a small network the cost is a few microseconds per edge against frames of a few hundred:
// one disturbed run moves a single ratio several-fold. So the fit takes repeated runs, one
// estimate per run, and reports their median with a distribution-free confidence interval
// (order statistics of the estimates: one outlying run moves neither); a cost whose interval
// reaches 0 is not distinguishable from none.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "planner/dag_cost_model.h"

namespace co_up::planner {

// The largest per-edge cost the fit returns (100 ms): a longer one is reported as this.
inline constexpr double kSwitchEdgeFitLimitUs = 100'000;

// What one fitted number is charged for: per cross-processor edge (DagCostOptions::switch_edge_us)
// or per megabyte of the edge's tensor (DagCostOptions::switch_edge_mb_us), the other one 0.
enum class SwitchEdgeShape { kPerEdge, kPerMegabyte };

// `alone`: an order on one processor, measured `alone_us`; `spread`: orders over the pair,
// measured `spread_us` (same length). The DAG model with no wake-up predicts each; the
// measured/predicted ratio of `alone` rescales the model (the load that slows one run slows
// all), and each spread order's cost (per edge, or per megabyte of the edges' tensors) is the
// value that makes the model's prediction equal its rescaled measurement (bisection: the
// prediction grows with it, 0.1 us resolution, at most kSwitchEdgeFitLimitUs). Returns the
// median over the spread orders, 0 when the model already predicts them slower. Throws
// InputError for empty or mismatched inputs.
double fit_switch_edge(const DagCostModel& model, const std::string& alone, double alone_us,
                       const std::vector<std::string>& spread, const std::vector<double>& spread_us,
                       SwitchEdgeShape shape = SwitchEdgeShape::kPerEdge);

// One run of the orders, measured close together (one interleaved round): the latency of the
// one-processor order and of each spread order.
struct SwitchRun {
  double alone_us = 0;
  std::vector<double> spread_us;
};

// The estimates of independent runs and what they say together.
struct SwitchEdgeEstimate {
  double value = 0;  // median of the per-run estimates
  // A confidence interval of that median from the estimates' order statistics: [k-th smallest,
  // k-th largest] with the largest k whose coverage (binomial, p = 1/2) is at least 95 %;
  // `confidence` is that coverage (below 95 % only with fewer than 6 runs: then min..max).
  double low = 0, high = 0, confidence = 0;
  size_t runs = 0;
  // The interval excludes 0: the runs show a cost, not noise around none.
  bool significant() const { return low > 0; }
};

// What the profile stores for `e`: its value where significant, else 0 (a cost the runs cannot
// tell from none is left out rather than stored as a number that noise made).
double stored_value(const SwitchEdgeEstimate& e);
// `e` in words, `unit` after each number: "57.0 us per MB (95.3 % interval 48.1-66.2 over 9
// runs)", or "no cost stored: 3.1 us per MB (...) is not distinguishable from none ...".
std::string describe(const SwitchEdgeEstimate& e, const std::string& unit);

// fit_switch_edge on each run (its own alone measurement rescales the model), then the median
// and interval over the runs. Throws InputError without runs, or for a run whose spread_us does
// not match `spread`.
SwitchEdgeEstimate fit_switch_edge_runs(const DagCostModel& model, const std::string& alone,
                                        const std::vector<std::string>& spread,
                                        const std::vector<SwitchRun>& runs, SwitchEdgeShape shape);

}  // namespace co_up::planner
