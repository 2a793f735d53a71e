#include "planner/switch_edge_fit.h"

#include <algorithm>

#include "core/error.h"

namespace co_up::planner {

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
  const size_t n = fits.size();
  return n % 2 == 1 ? fits[n / 2] : (fits[n / 2 - 1] + fits[n / 2]) / 2;
}

}  // namespace co_up::planner
