#include "planner/stage_overheads.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace co_up::planner {
namespace {

// The unknowns of one sample ('r' run, 'b' boundary; with the letter), repeats count again.
using Term = std::pair<char, char>;

std::vector<Term> sample_terms(const std::string& order, size_t exit) {
  std::vector<Term> terms;
  for (size_t i = 0; i < order.size(); ++i) {
    const bool starts = i == 0 || order[i] != order[i - 1];
    if (starts && i <= exit) terms.emplace_back('r', order[i]);
    if (starts && i > 0) terms.emplace_back('b', order[i]);
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

}  // namespace

double StageOverheads::run(char p) const {
  const auto it = run_ms.find(p);
  return it == run_ms.end() ? 0.0 : it->second;
}

double StageOverheads::boundary(char p) const {
  const auto it = boundary_ms.find(p);
  return it == boundary_ms.end() ? 0.0 : it->second;
}

std::vector<double> runtime_exit_latency(const StageCosts& costs, const std::string& order,
                                         const StageOverheads& overheads) {
  const size_t m = costs.tau.size();
  if (order.size() != m) {
    throw InputError("runtime stage model: order '" + order + "' needs one letter per stage (" + std::to_string(m) + ")");
  }
  double boundaries = 0;
  for (size_t i = 1; i < m; ++i) {
    if (order[i] != order[i - 1]) boundaries += overheads.boundary(order[i]);
  }
  // Running sum over stages; a sub-graph (consecutive stages on one letter) computes all its
  // stages before any of its exits decides, so an exit inside it costs the whole sub-graph.
  std::vector<double> through(m, 0.0);
  double t = boundaries;
  for (size_t i = 0; i < m; ++i) {
    if (i == 0 || order[i] != order[i - 1]) t += overheads.run(order[i]);
    for (double tau : costs.tau[i]) t += tau;
    for (size_t k = 0; k < i && !costs.transfer.empty(); ++k) {
      if (order[k] == order[i]) continue;  // one processor: no transfer
      for (size_t j = 0; j < costs.reuse[k].size() && j < costs.transfer[k][i].size(); ++j) {
        if (costs.reuse[k][j] == 1) t += costs.transfer[k][i][j];
      }
    }
    through[i] = t;
  }
  std::vector<double> out(m, 0.0);
  for (size_t i = m; i-- > 0;) out[i] = i + 1 < m && order[i + 1] == order[i] ? out[i + 1] : through[i];
  return out;
}

StageOverheads fit_stage_overheads(const std::vector<OverheadSample>& samples) {
  std::vector<Term> names;
  std::vector<std::vector<size_t>> rows;
  for (const OverheadSample& s : samples) {
    if (s.order.empty()) throw InputError("stage overhead fit: a sample has no order");
    if (!(s.weight > 0)) throw InputError("stage overhead fit: sample weights must be positive");
    std::vector<size_t> row;
    for (const Term& t : sample_terms(s.order, s.exit)) {
      auto it = std::find(names.begin(), names.end(), t);
      if (it == names.end()) it = names.insert(names.end(), t);
      row.push_back(static_cast<size_t>(it - names.begin()));
    }
    rows.push_back(row);
  }
  const size_t n = names.size();
  std::vector<bool> fixed_zero(n, false), determined;
  std::vector<double> x(n, 0.0);
  for (size_t round = 0; round <= n; ++round) {
    // Normal equations over the free unknowns (a fixed one is a unit row: x = 0).
    std::vector<double> a(n * n, 0.0), b(n, 0.0);
    for (size_t r = 0; r < rows.size(); ++r) {
      const double y = samples[r].measured_ms - samples[r].compute_ms, w = samples[r].weight;
      for (size_t p : rows[r]) {
        if (fixed_zero[p]) continue;
        b[p] += w * y;
        for (size_t q : rows[r]) {
          if (!fixed_zero[q]) a[p * n + q] += w;
        }
      }
    }
    for (size_t p = 0; p < n; ++p) {
      if (fixed_zero[p]) a[p * n + p] = 1.0;
    }
    x = solve(a, b, n, determined);
    size_t worst = n;
    for (size_t p = 0; p < n; ++p) {
      if (!fixed_zero[p] && x[p] < 0 && (worst == n || x[p] < x[worst])) worst = p;
    }
    if (worst == n) break;
    fixed_zero[worst] = true;
  }
  StageOverheads out;
  for (size_t p = 0; p < n; ++p) {
    if (!determined[p] && !fixed_zero[p]) continue;
    const double v = fixed_zero[p] ? 0.0 : std::max(0.0, x[p]);
    (names[p].first == 'r' ? out.run_ms : out.boundary_ms)[names[p].second] = v;
  }
  return out;
}

}  // namespace co_up::planner
