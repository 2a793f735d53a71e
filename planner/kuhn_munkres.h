// The linear assignment problem, solved exactly by the Kuhn-Munkres (Hungarian) algorithm in
// O(n^3): Hetero2Pipe's contention-window re-arrangement assigns low-contention requests to the
// places where two high-contention ones would otherwise run at once (planner/workload/).
//
// cost[r][c] is the cost of giving row r column c; rows and columns may differ in number (the
// smaller side is matched completely). kForbidden (infinity) marks a pair that must not be
// assigned: such a row is left unassigned when no allowed column remains for it.
// Threading: pure functions.
#pragma once

#include <limits>
#include <vector>

namespace co_up::planner {

inline constexpr double kForbidden = std::numeric_limits<double>::infinity();

struct Assignment {
  std::vector<int> column_of_row;  // -1: row unassigned (more rows than columns, or forbidden)
  double cost = 0;                 // sum over assigned rows of cost[r][column_of_row[r]]
  int assigned = 0;                // rows with a column
};

// Minimum total cost among assignments that assign as many rows as possible without a forbidden
// pair. Costs must be finite or kForbidden, and not NaN; rows must have equal length. Throws
// std::invalid_argument otherwise.
Assignment solve_assignment(const std::vector<std::vector<double>>& cost);

}  // namespace co_up::planner
