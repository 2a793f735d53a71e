// fit_stage_overheads is a non-negative least-squares fit (Lawson-Hanson): its solution against
// brute force over every set of unknowns held at zero, on small random problems and on one where
// fixing the most negative unknown at zero and refitting (a greedy active set) is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "planner/stage_overheads.h"

namespace co_up::planner {
namespace {

constexpr char kLetters[] = {'B', 'L', 'G'};

// Three stages of one layer each, no transfers: compute is just the layers.
StageCosts costs() {
  StageCosts c;
  c.tau = {{0.01}, {0.02}, {0.04}};
  c.reuse = {{0}, {0}, {0}};
  return c;
}

// Unknown u: 0-2 run(B, L, G), 3-5 boundary(B, L, G), 6-8 next_stage(B, L, G).
constexpr size_t kUnknowns = 9;

std::map<char, double> StageOverheads::*costs_of(size_t u) {
  return u < 3 ? &StageOverheads::run_ms : u < 6 ? &StageOverheads::boundary_ms : &StageOverheads::next_stage_ms;
}

StageOverheads unit(size_t u) {
  StageOverheads o;
  (o.*costs_of(u))[kLetters[u % 3]] = 1.0;
  return o;
}

struct Problem {
  std::vector<OverheadSample> samples;
  std::vector<std::vector<double>> a;  // per sample, the coefficient of each unknown
  std::vector<double> y, w;            // measured - compute, weight
};

void add(Problem& p, const std::string& order, size_t exit, double y, double w) {
  const std::vector<double> compute = runtime_exit_latency(costs(), order, StageOverheads{});
  std::vector<double> row(kUnknowns);
  for (size_t u = 0; u < kUnknowns; ++u) row[u] = runtime_exit_latency(costs(), order, unit(u))[exit] - compute[exit];
  p.samples.push_back({order, exit, compute[exit] + y, compute[exit], w});
  p.a.push_back(row);
  p.y.push_back(y);
  p.w.push_back(w);
}

double objective(const Problem& p, const std::vector<double>& x) {
  double sum = 0;
  for (size_t r = 0; r < p.a.size(); ++r) {
    double e = -p.y[r];
    for (size_t u = 0; u < kUnknowns; ++u) e += p.a[r][u] * x[u];
    sum += p.w[r] * e * e;
  }
  return sum;
}

// Least squares on the unknowns in `free` (the others 0); false when singular.
bool solve_on(const Problem& p, unsigned free, std::vector<double>& x) {
  std::vector<size_t> idx;
  for (size_t u = 0; u < kUnknowns; ++u)
    if (free & (1u << u)) idx.push_back(u);
  const size_t n = idx.size();
  std::vector<std::vector<double>> g(n, std::vector<double>(n + 1, 0.0));
  for (size_t r = 0; r < p.a.size(); ++r)
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) g[i][j] += p.w[r] * p.a[r][idx[i]] * p.a[r][idx[j]];
      g[i][n] += p.w[r] * p.a[r][idx[i]] * p.y[r];
    }
  for (size_t c = 0; c < n; ++c) {
    size_t best = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(g[r][c]) > std::fabs(g[best][c])) best = r;
    if (std::fabs(g[best][c]) < 1e-9) return false;
    std::swap(g[c], g[best]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = g[r][c] / g[c][c];
      for (size_t k = c; k <= n; ++k) g[r][k] -= f * g[c][k];
    }
  }
  x.assign(kUnknowns, 0.0);
  for (size_t i = 0; i < n; ++i) x[idx[i]] = g[i][n] / g[i][i];
  return true;
}

// The unknowns some sample depends on (the others stay out of the fit: absent, not zero).
unsigned used(const Problem& p) {
  unsigned mask = 0;
  for (const auto& row : p.a)
    for (size_t u = 0; u < kUnknowns; ++u)
      if (row[u] != 0) mask |= 1u << u;
  return mask;
}

// The non-negative least-squares solution by enumeration of the free subsets of the used
// unknowns; false when those are not all determined (their full set is singular).
bool brute_force(const Problem& p, std::vector<double>& best) {
  std::vector<double> x;
  const unsigned all = used(p);
  if (!solve_on(p, all, x)) return false;
  double best_obj = INFINITY;
  for (unsigned free = 0; free <= all; ++free) {
    if ((free & ~all) != 0) continue;
    if (!solve_on(p, free, x)) continue;
    bool feasible = true;
    for (double v : x) feasible = feasible && v >= -1e-12;
    if (!feasible) continue;
    const double obj = objective(p, x);
    if (obj < best_obj) {
      best_obj = obj;
      best = x;
    }
  }
  return true;
}

std::vector<double> fitted(const Problem& p) {
  const StageOverheads fit = fit_stage_overheads(p.samples);
  const unsigned all = used(p);
  std::vector<double> x(kUnknowns, 0.0);
  for (size_t u = 0; u < kUnknowns; ++u) {
    const auto& m = fit.*costs_of(u);
    const auto it = m.find(kLetters[u % 3]);
    if ((all & (1u << u)) == 0) {
      EXPECT_EQ(it, m.end()) << "unknown " << u << " fitted although no sample depends on it";
      continue;
    }
    EXPECT_NE(it, m.end()) << "unknown " << u << " left out although determined";
    x[u] = it == m.end() ? NAN : it->second;
  }
  return x;
}

TEST(StageOverheadsNnls, EqualsBruteForceOnSmallRandomProblems) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> letter(0, 2), exit(0, 2), count(4, 9);
  std::uniform_real_distribution<double> y(-1.0, 3.0), w(0.5, 4.0);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Problem p;
    const int samples = count(rng);
    for (int s = 0; s < samples; ++s) {
      std::string order;
      for (int i = 0; i < 3; ++i) order += kLetters[letter(rng)];
      add(p, order, static_cast<size_t>(exit(rng)), y(rng), w(rng));
    }
    std::vector<double> want;
    if (!brute_force(p, want)) continue;  // not every unknown determined
    ++checked;
    const std::vector<double> got = fitted(p);
    for (size_t u = 0; u < kUnknowns; ++u) ASSERT_NEAR(got[u], want[u], 1e-7) << "trial " << trial << " unknown " << u;
  }
  EXPECT_GE(checked, 40);
}

TEST(StageOverheadsNnls, CorrelatedUnknownsWhereTheMostNegativeIsNotTheOneAtZero) {
  Problem p;
#include "stage_overheads_nnls_case.inc"
  std::vector<double> want;
  ASSERT_TRUE(brute_force(p, want));
  const std::vector<double> got = fitted(p);
  for (size_t u = 0; u < kUnknowns; ++u) EXPECT_NEAR(got[u], want[u], 1e-7) << "unknown " << u;
}

}  // namespace
}  // namespace co_up::planner
