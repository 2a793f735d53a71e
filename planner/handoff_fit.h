// The hand-off cost of a sub-graph boundary (planner/layer_profile.h, HandoffTime), fitted from
// measured pipeline runs.
//
// Why measured this way: what a pipeline loses per extra stage is not a cost of moving bytes
// (those are the profile's transfers) but of handing frames over and of one processor switching
// between stages of different frames: publish and wake-up, a claim under the executor's lock,
// caches refilled with the other stage's weights, idle gaps while a stage waits for the other
// processor. None of it shows in per-layer or per-transfer events, so `co_up profile` runs whole
// pipelines with 2, 3 and 4 sub-graphs over a processor pair (handoff_orders) and fits the one
// number per pair that makes the cost model's period ratios match the measured ones
// (fit_handoff). Ratios to the 2-sub-graph run, not absolute periods: a pipeline's stages run
// concurrently and slow each other (shared caches, memory) by a factor that is common to all
// three runs and cancels, as does the host's drift between runs.
#pragma once

#include <string>
#include <vector>

#include "planner/cost_model.h"

namespace co_up::planner {

// Orders over processors `a` and `b` only, best predicted pipeline period first among their
// shape, with the pair's hand-off taken as 0: a contiguous 2-stage split, then the best
// X^i Y^j X^k (3 sub-graphs) and X^i Y^j X^k Y^l (4 sub-graphs) with X, Y either way round.
// Networks of fewer than 3 (4) layers give fewer orders, and so do layers one of them declined
// (no order places one there: CostModel::runs). Levels: 0 (as found). For n > 64 layers the cuts are searched on a grid of about 64 positions (keeps it well under a second).
std::vector<std::string> handoff_orders(const CostModel& model, char a, char b);

struct HandoffFit {
  double us = 0;        // the fitted hand-off, >= 0
  double residual = 0;  // root mean square of (measured - predicted) period ratio at `us`
};

// Fits the hand-off between `a` and `b`: orders[0] is the reference (handoff_orders' first),
// measured_period_us[i] the measured pipeline period of orders[i]. Minimises the squared
// differences between measured and predicted period ratios orders[i] / orders[0] over
// us in [0, the reference's predicted period]. Fewer than two orders: 0 (nothing to compare).
// Throws InputError for mismatched sizes, non-positive periods or unknown letters.
HandoffFit fit_handoff(const CostModel& model, char a, char b, const std::vector<std::string>& orders,
                       const std::vector<double>& measured_period_us);

}  // namespace co_up::planner
