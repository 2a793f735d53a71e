// Helpers the mapping searches share (planner/search/*.cpp); not part of the planner's API.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "planner/search.h"

namespace co_up::planner {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// `levels`, or the model's fastest when empty; InputError when it does not fit the model.
std::vector<int> resolve_levels(const CostModel& model, std::vector<int> levels);
// The normalised mapping with its prediction, attributed to `source`.
Candidate make_candidate(const CostModel& model, Mapping mapping, std::string source);
// Strictly better in the mode's primary objective, ties broken by the other one.
bool better(const Prediction& a, const Prediction& b, Mode mode);
// Whether `more` (more sub-graphs than `fewer`) is predicted faster by more than `margin`.
bool worth_more_subgraphs(const Prediction& more, const Prediction& fewer, double margin);
// Order and levels as one string: mappings that differ only in mode share a key.
std::string genome_key(const Mapping& m);

}  // namespace co_up::planner
