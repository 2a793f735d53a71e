#include "planner/stage_overheads.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace co_up::planner {
namespace {

// The unknowns of one sample ('r' run, 'b' boundary, 's' next stage on the same letter, 'c' compute
// scale; with the letter) and their coefficients; repeats count again.
using Term = std::pair<char, char>;

std::vector<std::pair<Term, double>> sample_terms(const OverheadSample& s) {
  std::vector<std::pair<Term, double>> terms;
  // A frame that stops at `exit` runs (and crosses into) only the stages up to it.
  for (size_t i = 0; i < s.order.size() && i <= s.exit; ++i) {
    terms.push_back({{'r', s.order[i]}, 1.0});
    if (i > 0) terms.push_back({{s.order[i] != s.order[i - 1] ? 'b' : 's', s.order[i]}, 1.0});
  }
  for (const auto& [p, ms] : s.compute_by_processor) {
    if (ms > 0) terms.push_back({{'c', p}, ms});
  }
  return terms;
}

// Solves a x = b (n x n, row-major) by Gaussian elimination with partial pivoting; a singular
// column leaves its unknown at 0 (the samples do not determine it).
std::vector<double> solve(std::vector<double> a, std::vector<double> b, size_t n, std::vector<bool>& determined) {
  std::vector<double> x(n, 0.0);
  std::vector<size_t> pivot_col;
  size_t row = 0;
  determined.assign(n, false);
  for (size_t col = 0; col < n && row < n; ++col) {
    size_t best = row;
    for (size_t r = row + 1; r < n; ++r) {
      if (std::fabs(a[r * n + col]) > std::fabs(a[best * n + col])) best = r;
    }
    if (std::fabs(a[best * n + col]) < 1e-12) continue;
    for (size_t c = 0; c < n; ++c) std::swap(a[row * n + c], a[best * n + c]);
    std::swap(b[row], b[best]);
    for (size_t r = 0; r < n; ++r) {
      if (r == row) continue;
      const double f = a[r * n + col] / a[row * n + col];
      if (f == 0) continue;
      for (size_t c = 0; c < n; ++c) a[r * n + c] -= f * a[row * n + c];
      b[r] -= f * b[row];
    }
    pivot_col.push_back(col);
    ++row;
  }
  for (size_t r = 0; r < pivot_col.size(); ++r) {
    const size_t col = pivot_col[r];
    // A pivot row that still mixes in free columns is not determined on its own.
    bool alone = true;
    for (size_t c = 0; c < n; ++c) alone = alone && (c == col || std::fabs(a[r * n + c]) < 1e-9);
    x[col] = b[r] / a[r * n + col];
    determined[col] = alone;
  }
  return x;
}

// Non-negative least squares on the normal equations g x = h (n x n, g positive semi-definite),
// by Lawson and Hanson's active-set method: the passive set grows by the unknown whose gradient
// most wants it positive; the least squares on the passive set, when it makes one of them
// non-positive, is approached only as far as the first one reaches 0, which leaves the set.
// Small dense problems: n is the processors' run and boundary costs.
std::vector<double> nnls(const std::vector<double>& g, const std::vector<double>& h, size_t n) {
  std::vector<double> x(n, 0.0), w(n);
  std::vector<bool> passive(n, false), excluded(n, false);
  double scale = 0;
  for (double v : g) scale = std::max(scale, std::fabs(v));
  for (double v : h) scale = std::max(scale, std::fabs(v));
  const auto passive_least_squares = [&] {
    std::vector<double> a(n * n, 0.0), b(n, 0.0);
    for (size_t p = 0; p < n; ++p) {
      if (!passive[p]) {
        a[p * n + p] = 1.0;  // x_p = 0
        continue;
      }
      b[p] = h[p];
      for (size_t q = 0; q < n; ++q) {
        if (passive[q]) a[p * n + q] = g[p * n + q];
      }
    }
    std::vector<bool> unused;
    return solve(a, b, n, unused);
  };
  for (size_t outer = 0; outer < 4 * n + 4; ++outer) {
    double x_max = 0;
    for (double v : x) x_max = std::max(x_max, std::fabs(v));
    const double tol = 1e-10 * scale * (1.0 + x_max);
    for (size_t p = 0; p < n; ++p) {
      w[p] = h[p];
      for (size_t q = 0; q < n; ++q) w[p] -= g[p * n + q] * x[q];
    }
    size_t t = n;
    for (size_t p = 0; p < n; ++p) {
      if (!passive[p] && !excluded[p] && w[p] > tol && (t == n || w[p] > w[t])) t = p;
    }
    if (t == n) break;  // optimal: no zero unknown's gradient points into the feasible side
    passive[t] = true;
    bool moved = true;
    for (size_t inner = 0; inner <= n; ++inner) {
      const std::vector<double> z = passive_least_squares();
      if (inner == 0 && !(z[t] > 0)) {
        // Only rounding lets an unknown whose column depends on the passive ones look helpful
        // (its gradient is 0 at the passive optimum): keep it out until x moves.
        passive[t] = false;
        excluded[t] = true;
        moved = false;
        break;
      }
      double alpha = 1.0;
      for (size_t p = 0; p < n; ++p) {
        if (passive[p] && !(z[p] > 0)) alpha = std::min(alpha, x[p] / (x[p] - z[p]));
      }
      for (size_t p = 0; p < n; ++p) {
        if (passive[p]) x[p] += alpha * (z[p] - x[p]);
      }
      if (alpha >= 1.0) break;  // every passive unknown positive: x is the passive set's optimum
      for (size_t p = 0; p < n; ++p) {
        if (passive[p] && (!(z[p] > 0) && x[p] <= 1e-14 * (1.0 + x_max))) {
          passive[p] = false;
          x[p] = 0.0;
        }
      }
    }
    if (moved) std::fill(excluded.begin(), excluded.end(), false);
  }
  return x;
}

}  // namespace

double StageOverheads::run(char p) const {
  const auto it = run_ms.find(p);
  return it == run_ms.end() ? 0.0 : it->second;
}

double StageOverheads::boundary(char p) const {
  const auto it = boundary_ms.find(p);
  return it == boundary_ms.end() ? 0.0 : it->second;
}

double StageOverheads::next_stage(char p) const {
  const auto it = next_stage_ms.find(p);
  return it == next_stage_ms.end() ? 0.0 : it->second;
}

double StageOverheads::scale(char p) const {
  const auto it = compute_scale.find(p);
  return it == compute_scale.end() ? 1.0 : it->second;
}

std::vector<double> runtime_exit_latency(const StageCosts& costs, const std::string& order,
                                         const StageOverheads& overheads) {
  const size_t m = costs.tau.size();
  if (order.size() != m) {
    throw InputError("runtime stage model: order '" + order + "' needs one letter per stage (" + std::to_string(m) + ")");
  }
  // Running sum over stages; every stage is a sub-graph of its own (the partition cuts after
  // each exit, also between stages on one letter), so a frame that stops at exit k pays for
  // stages up to k only. A boundary or the step to the next stage on the same processor is paid
  // by the frames that go on past it only.
  std::vector<double> through(m, 0.0);
  double t = 0;
  for (size_t i = 0; i < m; ++i) {
    if (i > 0) t += order[i] != order[i - 1] ? overheads.boundary(order[i]) : overheads.next_stage(order[i]);
    t += overheads.run(order[i]);
    for (double tau : costs.tau[i]) t += overheads.scale(order[i]) * tau;
    for (size_t k = 0; k < i && !costs.transfer.empty(); ++k) {
      if (order[k] == order[i]) continue;  // one processor: no transfer
      for (size_t j = 0; j < costs.reuse[k].size() && j < costs.transfer[k][i].size(); ++j) {
        if (costs.reuse[k][j] == 1) t += costs.transfer[k][i][j];
      }
    }
    through[i] = t;
  }
  return through;
}

StageOverheads fit_stage_overheads(const std::vector<OverheadSample>& samples) {
  std::vector<Term> names;
  std::vector<std::vector<std::pair<size_t, double>>> rows;
  for (const OverheadSample& s : samples) {
    if (s.order.empty()) throw InputError("stage overhead fit: a sample has no order");
    if (!(s.weight > 0)) throw InputError("stage overhead fit: sample weights must be positive");
    std::vector<std::pair<size_t, double>> row;
    for (const auto& [t, coefficient] : sample_terms(s)) {
      auto it = std::find(names.begin(), names.end(), t);
      if (it == names.end()) it = names.insert(names.end(), t);
      row.emplace_back(static_cast<size_t>(it - names.begin()), coefficient);
    }
    rows.push_back(row);
  }
  const size_t n = names.size();
  // A compute scale above the bound is held at it (its unknown then known, kMaxComputeScale - 1)
  // and the other unknowns are fitted again without it, until no scale exceeds the bound.
  std::vector<bool> held(n, false);
  std::map<char, double> unbounded;
  std::vector<bool> determined;
  std::vector<double> x;
  for (;;) {
    // Normal equations g x = h of the weighted least squares over the free unknowns.
    std::vector<double> g(n * n, 0.0), h(n, 0.0);
    for (size_t r = 0; r < rows.size(); ++r) {
      // The compute scale's unknown is its excess over 1 (>= 0 like the others): the profiled compute
      // is a floor. Below it the fit could trade a processor's compute for its dispatch cost, and on
      // noisy runs it did (a scale of 0, the stages' compute dropped).
      double y = samples[r].measured_ms - samples[r].compute_ms;
      const double w = samples[r].weight;
      for (const auto& [p, a] : rows[r]) {
        if (held[p]) y -= a * (kMaxComputeScale - 1.0);
      }
      for (const auto& [p, a] : rows[r]) {
        if (held[p]) continue;
        h[p] += w * a * y;
        for (const auto& [q, b] : rows[r]) {
          if (!held[q]) g[p * n + q] += w * a * b;
        }
      }
    }
    // Which unknowns the samples determine at all (the constraint does not change that; for
    // those the non-negative optimum is unique, as the fitted values are). A held unknown's
    // row and column are 0: solve() leaves it undetermined, nnls() at 0.
    solve(g, h, n, determined);
    x = nnls(g, h, n);
    bool again = false;
    for (size_t p = 0; p < n; ++p) {
      if (held[p] || names[p].first != 'c' || !determined[p] || x[p] <= kMaxComputeScale - 1.0) continue;
      held[p] = true;
      unbounded[names[p].second] = x[p] + 1.0;
      again = true;
    }
    if (!again) break;
  }
  StageOverheads out;
  out.unbounded_compute_scale = unbounded;
  for (size_t p = 0; p < n; ++p) {
    if (held[p]) {
      out.compute_scale[names[p].second] = kMaxComputeScale;
      continue;
    }
    if (!determined[p]) continue;
    auto& costs = names[p].first == 'r'   ? out.run_ms
                  : names[p].first == 'b' ? out.boundary_ms
                  : names[p].first == 'c' ? out.compute_scale
                                          : out.next_stage_ms;
    costs[names[p].second] = std::max(0.0, x[p]) + (names[p].first == 'c' ? 1.0 : 0.0);
  }
  return out;
}

}  // namespace co_up::planner
