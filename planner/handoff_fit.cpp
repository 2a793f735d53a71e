#include "planner/handoff_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace co_up::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Cut positions 1..n-1 (a cut at c starts a new run at layer c), on a grid of about 64 for
// large networks.
std::vector<uint32_t> cut_positions(uint32_t n) {
  const uint32_t step = std::max<uint32_t>(1, (n + 63) / 64);
  std::vector<uint32_t> cuts;
  for (uint32_t c = 1; c < n; c += step) cuts.push_back(c);
  return cuts;
}

// Order with runs [0, cuts[0]), [cuts[0], cuts[1]), ... alternating first, second, first, ...
std::string runs_order(uint32_t n, const std::vector<uint32_t>& cuts, char first, char second) {
  std::string order(n, first);
  uint32_t begin = 0;
  for (size_t r = 0; r <= cuts.size(); ++r) {
    const uint32_t end = r < cuts.size() ? cuts[r] : n;
    std::fill(order.begin() + begin, order.begin() + end, r % 2 == 0 ? first : second);
    begin = end;
  }
  return order;
}

// Per-resource busy time of `order` as base + slope * hand-off (linear in the pair's hand-off).
struct PeriodLine {
  std::vector<double> base, slope;
  double at(double us) const {
    double period = 0;
    for (size_t r = 0; r < base.size(); ++r) period = std::max(period, base[r] + slope[r] * us);
    return period;
  }
};

}  // namespace

std::vector<std::string> handoff_orders(const CostModel& model, char a, char b) {
  const CostModel zero = model.with_handoff(a, b, 0);
  const uint32_t n = zero.layer_count();
  const std::vector<uint32_t> grid = cut_positions(n);
  std::vector<std::string> orders;
  // runs = 2, 3, 4: every increasing choice of runs-1 cuts from the grid, both letter orders.
  for (size_t runs = 2; runs <= 4 && runs <= n; ++runs) {
    std::string best;
    double best_period = kInf;
    std::vector<size_t> pick(runs - 1);
    for (size_t i = 0; i < pick.size(); ++i) pick[i] = i;
    while (pick.empty() || pick.back() < grid.size()) {
      std::vector<uint32_t> cuts;
      for (size_t i : pick) cuts.push_back(grid[i]);
      for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
        std::string order = runs_order(n, cuts, x, y);
        if (!zero.runs(order)) continue;  // a layer where it was declined: cannot run
        const double period = zero.predict({order, Mode::kPipeline, {}}).period_us;
        if (period < best_period) {
          best_period = period;
          best = std::move(order);
        }
      }
      // Next combination (lexicographic) of pick.size() indices below grid.size().
      size_t i = pick.size();
      while (i > 0 && pick[i - 1] == grid.size() - pick.size() + i - 1) --i;
      if (i == 0) break;
      ++pick[i - 1];
      for (size_t k = i; k < pick.size(); ++k) pick[k] = pick[k - 1] + 1;
    }
    if (!best.empty()) orders.push_back(std::move(best));
  }
  return orders;
}

HandoffFit fit_handoff(const CostModel& model, char a, char b, const std::vector<std::string>& orders,
                       const std::vector<double>& measured_period_us) {
  if (orders.size() != measured_period_us.size()) {
    throw InputError("hand-off fit: " + std::to_string(orders.size()) + " orders but " +
                     std::to_string(measured_period_us.size()) + " measured periods");
  }
  for (double p : measured_period_us) {
    if (!(p > 0) || !std::isfinite(p)) throw InputError("hand-off fit: measured periods must be positive");
  }
  if (orders.size() < 2) return {};
  const CostModel zero = model.with_handoff(a, b, 0);
  const CostModel one = model.with_handoff(a, b, 1);
  std::vector<PeriodLine> lines;
  for (const std::string& order : orders) {
    const Prediction p0 = zero.predict({order, Mode::kPipeline, {}});
    const Prediction p1 = one.predict({order, Mode::kPipeline, {}});
    PeriodLine line;
    for (size_t r = 0; r < p0.resources.size(); ++r) {
      line.base.push_back(p0.resources[r].busy_us);
      line.slope.push_back(p1.resources[r].busy_us - p0.resources[r].busy_us);
    }
    lines.push_back(std::move(line));
  }
  const auto error = [&](double us) {
    const double reference = lines[0].at(us);
    double sum = 0;
    for (size_t i = 1; i < lines.size(); ++i) {
      const double d = measured_period_us[i] / measured_period_us[0] - lines[i].at(us) / reference;
      sum += d * d;
    }
    return sum / static_cast<double>(lines.size() - 1);
  };
  // The error is piecewise smooth in us with kinks where the bottleneck changes: a grid finds
  // the basin, a golden-section search inside its neighbouring cells the minimum.
  const double limit = lines[0].at(0);
  constexpr int kSteps = 1000;
  double best_us = 0, best_error = error(0);
  for (int s = 1; s <= kSteps; ++s) {
    const double us = limit * s / kSteps;
    const double e = error(us);
    if (e < best_error) {
      best_error = e;
      best_us = us;
    }
  }
  double lo = std::max(0.0, best_us - limit / kSteps), hi = std::min(limit, best_us + limit / kSteps);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 60 && hi - lo > 1e-9; ++it) {
    const double m1 = hi - ratio * (hi - lo), m2 = lo + ratio * (hi - lo);
    if (error(m1) <= error(m2)) {
      hi = m2;
    } else {
      lo = m1;
    }
  }
  const double refined = (lo + hi) / 2;
  if (error(refined) < best_error) {
    best_us = refined;
    best_error = error(refined);
  }
  return {best_us, std::sqrt(best_error)};
}

}  // namespace co_up::planner
