// The switch-mode wake-up per cross-processor edge (LayerProfile::switch_edges), fitted from
// measured one-frame latencies. In switch mode a processor waiting for the other's part of the
// frame sleeps or spins; what it loses per edge on top of the measured transfers depends on the
// machine and its load, and a plan that splits layers over two processors has one or two such
// edges per split layer, so the planner needs it measured, not assumed.
#pragma once

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

}  // namespace co_up::planner
