// Layer splits as planning choices (Para-Pipe's hybrid with the CSDF method's data parallelism):
// a network profiled with --split=L:P (graph::split_output_channels) has, per split layer, P
// consecutive units "<layer>#1".."#P", each a slice of the layer's output channels. With
// --units=branches the Concat that joins them (and the rest of the layer) is a unit of its own,
// "<layer>#concat", right after them: giving the parts different letters runs them at once on
// several processors (one frame, switch mode). With --units=ops or layers the Concat is in the
// last part's unit, so that part waits for all the others (a sub-graph starts when all its inputs
// are there) and spreading the parts gains nothing: the DAG model sees that. Giving all parts one
// letter is the unsplit layer plus a Concat. When the parts are on several processors the
// executor runs each part and the Concat unit as sub-graphs of their own (graph/split_units.h).
// Which layers to split is a cost question: a spread split saves
// part of the layer's time and costs a transfer and, in switch mode, a wake-up per
// cross-processor edge (planner/dag_cost_model.h, LayerProfile::switch_edges), all from the profile.
//
// A group's choices are every assignment of letters to its units (the parts and the Concat
// unit): n^(parts + 1) with n = the model's letters (n^parts without a Concat unit); choice c gives
// the group's k-th unit letters[(c / n^k) % n]. Choice 0 is every unit on letters[0].
//
// plan_splits: from `base` (one letter per unit; the units outside groups keep theirs), the
// choice per group that minimises the DAG model's switch latency (Mode::kSwitch) or pipeline
// period (Mode::kPipeline). Exact when the product of the groups' choice counts <= exhaustive_limit:
// every combination, so the best order among all that differ from `base` only in the groups'
// units; ties keep `base`, then the first in mixed-radix order (the last group the fastest digit). Otherwise
// coordinate descent: groups by their fastest time, largest first; each group's best choice with
// the others fixed, kept when strictly better; repeated until a pass changes nothing (at most
// `max_passes`); a group with more than `group_choice_limit` choices (a layer cut into many parts)
// is searched one unit at a time instead. Deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/split_units.h"
#include "planner/dag_cost_model.h"
#include "planner/search.h"

namespace co_up::planner {

using SplitGroup = graph::SplitUnitGroup;

// graph::find_split_units over the profile's unit names; empty for a profile without --split.
std::vector<SplitGroup> split_groups(const CostModel& model);

// n^(units of the group), as a double: a layer cut into many parts has more choices than a size_t holds.
double split_choice_count(const SplitGroup& g, size_t letters);
// `order` with group `g`'s units set as choice `choice` says.
std::string apply_split_choice(std::string order, const SplitGroup& g, size_t choice, const std::string& letters);

struct SplitPlanOptions {
  Mode mode = Mode::kSwitch;
  std::vector<int> levels;  // empty: the fastest
  double exhaustive_limit = 65'536;
  int max_passes = 8;
  double group_choice_limit = 4096;
};

struct SplitPlanResult {
  Candidate best;             // source "split-exact" or "split-descent"
  bool exact = false;
  uint64_t evaluated = 0;     // model evaluations
  size_t spread_groups = 0;   // groups whose parts are on several processors in `best`
};

// Throws InputError when `base` does not have one letter per unit, or names a letter the model
// does not have.
SplitPlanResult plan_splits(const DagCostModel& model, const std::string& base, const SplitPlanOptions& options = {});

}  // namespace co_up::planner
