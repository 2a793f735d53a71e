// Kuhn-Munkres against exhaustive search over every assignment on small random matrices.
#include "planner/kuhn_munkres.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace co_up::planner {
namespace {

struct Best {
  int assigned = -1;
  double cost = 0;
};

// Every partial injective map of rows to columns: the most rows assigned, then the least cost.
void exhaustive(const std::vector<std::vector<double>>& cost, size_t row, std::vector<bool>& used, int assigned,
                double sum, Best& best) {
  if (row == cost.size()) {
    if (assigned > best.assigned || (assigned == best.assigned && sum < best.cost - 1e-9)) best = {assigned, sum};
    return;
  }
  exhaustive(cost, row + 1, used, assigned, sum, best);  // row left out
  for (size_t c = 0; c < cost[row].size(); ++c) {
    if (used[c] || cost[row][c] == kForbidden) continue;
    used[c] = true;
    exhaustive(cost, row + 1, used, assigned + 1, sum + cost[row][c], best);
    used[c] = false;
  }
}

std::vector<std::vector<double>> random_matrix(std::mt19937& rng, size_t rows, size_t cols, double forbidden_share,
                                               bool integers) {
  std::uniform_real_distribution<double> u(-5.0, 20.0);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<std::vector<double>> m(rows, std::vector<double>(cols));
  for (auto& row : m) {
    for (double& v : row) {
      v = coin(rng) < forbidden_share ? kForbidden : integers ? std::round(u(rng)) : u(rng);
    }
  }
  return m;
}

void check_against_exhaustive(const std::vector<std::vector<double>>& cost) {
  const Assignment a = solve_assignment(cost);
  Best best;
  std::vector<bool> used(cost.empty() ? 0 : cost[0].size(), false);
  exhaustive(cost, 0, used, 0, 0.0, best);
  ASSERT_EQ(a.assigned, best.assigned);
  EXPECT_NEAR(a.cost, best.cost, 1e-9);
  // The returned assignment is what it claims: distinct columns, allowed pairs, the stated cost.
  std::vector<bool> taken(cost[0].size(), false);
  double sum = 0;
  int count = 0;
  for (size_t r = 0; r < cost.size(); ++r) {
    const int c = a.column_of_row[r];
    if (c < 0) continue;
    ASSERT_FALSE(taken[static_cast<size_t>(c)]);
    taken[static_cast<size_t>(c)] = true;
    ASSERT_NE(cost[r][static_cast<size_t>(c)], kForbidden);
    sum += cost[r][static_cast<size_t>(c)];
    ++count;
  }
  EXPECT_EQ(count, a.assigned);
  EXPECT_NEAR(sum, a.cost, 1e-9);
}

TEST(KuhnMunkres, SquareMatricesEqualExhaustiveSearch) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    const size_t n = 1 + seed % 7;  // 1..7
    SCOPED_TRACE("seed " + std::to_string(seed) + ", n " + std::to_string(n));
    check_against_exhaustive(random_matrix(rng, n, n, 0.0, seed % 2 == 0));
  }
}

TEST(KuhnMunkres, ForbiddenPairsAndRectangularWindowsEqualExhaustiveSearch) {
  for (uint32_t seed = 100; seed < 160; ++seed) {
    std::mt19937 rng(seed);
    const size_t rows = 1 + seed % 6, cols = 1 + (seed / 6) % 6;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(rows) + "x" + std::to_string(cols));
    check_against_exhaustive(random_matrix(rng, rows, cols, 0.35, seed % 3 == 0));
  }
}

TEST(KuhnMunkres, KnownSmallCase) {
  // The classic 3x3 example: the optimum 5 takes (0,1), (1,0), (2,2).
  const Assignment a = solve_assignment({{4, 1, 3}, {2, 0, 5}, {3, 2, 2}});
  EXPECT_EQ(a.column_of_row, (std::vector<int>{1, 0, 2}));
  EXPECT_DOUBLE_EQ(a.cost, 5.0);
  // A row with nothing allowed stays unassigned instead of taking a forbidden pair.
  const Assignment b = solve_assignment({{kForbidden, kForbidden}, {1, 2}});
  EXPECT_EQ(b.column_of_row, (std::vector<int>{-1, 0}));
  EXPECT_EQ(b.assigned, 1);
}

TEST(KuhnMunkres, RejectsNaNAndRaggedRows) {
  EXPECT_THROW(solve_assignment({{1.0, std::nan("")}}), std::invalid_argument);
  EXPECT_THROW(solve_assignment({{1.0, 2.0}, {1.0}}), std::invalid_argument);
}

}  // namespace
}  // namespace co_up::planner
