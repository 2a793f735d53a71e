#include "planner/switch_edge_fit.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/error.h"

namespace co_up::planner {
namespace {

constexpr double kConfidence = 0.95;

double median_of_sorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

// Coverage of [x_(k), x_(n+1-k)] (1-based order statistics of n independent estimates) for their
// median: 1 - 2 P(Binomial(n, 1/2) <= k - 1).
double median_interval_coverage(size_t n, size_t k) {
  double tail = 0, choose = 1;  // C(n, i)
  for (size_t i = 0; i + 1 <= k; ++i) {
    tail += choose;
    choose = choose * static_cast<double>(n - i) / static_cast<double>(i + 1);
  }
  return 1 - 2 * tail * std::pow(0.5, static_cast<double>(n));
}

}  // namespace

double fit_switch_edge(const DagCostModel& model, const std::string& alone, double alone_us,
                       const std::vector<std::string>& spread, const std::vector<double>& spread_us,
                       SwitchEdgeShape shape) {
  if (spread.empty() || spread.size() != spread_us.size() || alone_us <= 0) {
    throw InputError("the switch-mode wake-up fit needs one measured order on one processor and as many "
                     "measurements as spread orders");
  }
  DagCostModel m = model;
  m.set_switch_edge_us(0);
  m.set_switch_edge_mb_us(0);
  const double alone_predicted = m.switch_latency_us(Mapping{alone, Mode::kSwitch, {}});
  const double scale = alone_predicted > 0 ? alone_us / alone_predicted : 1.0;
  std::vector<double> fits;
  for (size_t i = 0; i < spread.size(); ++i) {
    const Mapping mapping{spread[i], Mode::kSwitch, {}};
    const double target = spread_us[i] / scale;
    auto predicted = [&](double edge_us) {
      if (shape == SwitchEdgeShape::kPerEdge) {
        m.set_switch_edge_us(edge_us);
      } else {
        m.set_switch_edge_mb_us(edge_us);
      }
      return m.switch_latency_us(mapping);
    };
    double lo = 0, hi = kSwitchEdgeFitLimitUs;
    if (predicted(lo) >= target) {
      fits.push_back(0);
      continue;
    }
    if (predicted(hi) <= target) {
      fits.push_back(hi);
      continue;
    }
    while (hi - lo > 0.1) {
      const double mid = (lo + hi) / 2;
      (predicted(mid) < target ? lo : hi) = mid;
    }
    fits.push_back((lo + hi) / 2);
  }
  std::sort(fits.begin(), fits.end());
  return median_of_sorted(fits);
}

SwitchEdgeEstimate fit_switch_edge_runs(const DagCostModel& model, const std::string& alone,
                                        const std::vector<std::string>& spread,
                                        const std::vector<SwitchRun>& runs, SwitchEdgeShape shape) {
  if (runs.empty()) throw InputError("the switch-mode edge fit needs at least one measured run");
  std::vector<double> estimates;
  for (const SwitchRun& run : runs) {
    estimates.push_back(fit_switch_edge(model, alone, run.alone_us, spread, run.spread_us, shape));
  }
  std::sort(estimates.begin(), estimates.end());
  const size_t n = estimates.size();
  size_t k = 1;
  while (k + 1 <= (n + 1) / 2 && median_interval_coverage(n, k + 1) >= kConfidence) ++k;
  SwitchEdgeEstimate e;
  e.value = median_of_sorted(estimates);
  e.low = estimates[k - 1];
  e.high = estimates[n - k];
  e.confidence = median_interval_coverage(n, k);
  e.runs = n;
  return e;
}

double stored_value(const SwitchEdgeEstimate& e) { return e.significant() ? e.value : 0.0; }

std::string describe(const SwitchEdgeEstimate& e, const std::string& unit) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1);
  if (!e.significant()) text << "no cost stored: ";
  text << e.value << unit << " (" << 100 * e.confidence << " % interval " << e.low << "-" << e.high << " over "
       << e.runs << " run" << (e.runs == 1 ? "" : "s") << ")";
  if (!e.significant()) text << " is not distinguishable from none: the runs differ by less than their noise";
  return text.str();
}

}  // namespace co_up::planner
