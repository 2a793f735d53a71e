#include "planner/kuhn_munkres.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace co_up::planner {
namespace {

// The O(n^3) Hungarian algorithm with potentials (rows u, columns v) on a square matrix whose
// rows 1..n are matched to columns 1..n; index 0 is the virtual column of the shortest
// augmenting path. a[i][j] is finite everywhere.
std::vector<int> hungarian_square(const std::vector<std::vector<double>>& a) {
  const size_t n = a.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0), v(n + 1, 0);
  std::vector<size_t> p(n + 1, 0), way(n + 1, 0);  // p[j]: row matched to column j (0: none)
  for (size_t i = 1; i <= n; ++i) {
    p[0] = i;
    size_t j0 = 0;
    std::vector<double> minv(n + 1, inf);
    std::vector<bool> used(n + 1, false);
    do {
      used[j0] = true;
      const size_t i0 = p[j0];
      double delta = inf;
      size_t j1 = 0;
      for (size_t j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double cur = a[i0 - 1][j - 1] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (size_t j = 0; j <= n; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {  // flip the augmenting path
      const size_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> column_of_row(n, -1);
  for (size_t j = 1; j <= n; ++j) {
    if (p[j] != 0) column_of_row[p[j] - 1] = static_cast<int>(j - 1);
  }
  return column_of_row;
}

}  // namespace

Assignment solve_assignment(const std::vector<std::vector<double>>& cost) {
  Assignment result;
  const size_t rows = cost.size();
  if (rows == 0) return result;
  const size_t cols = cost[0].size();
  double largest = 0;
  for (const std::vector<double>& row : cost) {
    if (row.size() != cols) throw std::invalid_argument("assignment cost rows differ in length");
    for (double c : row) {
      if (std::isnan(c) || c == -kForbidden) throw std::invalid_argument("assignment cost is NaN or -inf");
      if (c != kForbidden) largest = std::max(largest, std::abs(c));
    }
  }
  result.column_of_row.assign(rows, -1);
  if (cols == 0) return result;
  // Square it: padding pairs cost 0 (a row matched to a padding column is unassigned); a
  // forbidden pair costs more than any assignment avoiding all of them could (big > n * range),
  // so the optimum uses as few forbidden pairs as possible, and those are then dropped.
  const size_t n = std::max(rows, cols);
  const double big = (largest + 1) * static_cast<double>(2 * n + 1);
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) a[r][c] = cost[r][c] == kForbidden ? big : cost[r][c];
  }
  // Padding only ever pairs the surplus side, so every real row (or column) still gets a real
  // partner, and costs may be negative.
  const std::vector<int> match = hungarian_square(a);
  for (size_t r = 0; r < rows; ++r) {
    const int c = match[r];
    if (c < 0 || static_cast<size_t>(c) >= cols || cost[r][static_cast<size_t>(c)] == kForbidden) continue;
    result.column_of_row[r] = c;
    result.cost += cost[r][static_cast<size_t>(c)];
    ++result.assigned;
  }
  return result;
}

}  // namespace co_up::planner
