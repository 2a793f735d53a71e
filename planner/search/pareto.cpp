#include "planner/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "planner/search/search_support.h"

namespace co_up::planner {
namespace {

// +1: a dominates b; -1: b dominates a; 0: neither. One pass over the objectives.
int compare_dominance(const std::vector<double>& a, const std::vector<double>& b) {
  bool a_better = false, b_better = false;
  for (size_t k = 0; k < a.size(); ++k) {
    a_better = a_better || a[k] < b[k];
    b_better = b_better || b[k] < a[k];
  }
  return a_better == b_better ? 0 : a_better ? 1 : -1;
}

}  // namespace

std::vector<double> objectives(const Prediction& p, bool use_energy) {
  std::vector<double> o{p.period_us, p.latency_ms};
  if (use_energy) o.push_back(std::isnan(p.energy_mj_per_frame) ? kInf : p.energy_mj_per_frame);
  return o;
}

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool strictly = false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k] > b[k]) return false;
    if (a[k] < b[k]) strictly = true;
  }
  return strictly;
}

std::vector<std::vector<size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points) {
  const size_t n = points.size();
  std::vector<std::vector<size_t>> dominated(n);  // S_p: points p dominates
  std::vector<size_t> count(n, 0);                // n_p: points dominating p
  std::vector<std::vector<size_t>> fronts(1);
  for (size_t p = 0; p < n; ++p) {
    for (size_t q = p + 1; q < n; ++q) {
      const int c = compare_dominance(points[p], points[q]);
      if (c > 0) {
        dominated[p].push_back(q);
        ++count[q];
      } else if (c < 0) {
        dominated[q].push_back(p);
        ++count[p];
      }
    }
  }
  for (size_t p = 0; p < n; ++p) {
    if (count[p] == 0) fronts[0].push_back(p);
  }
  while (!fronts.back().empty()) {
    std::vector<size_t> next;
    for (size_t p : fronts.back()) {
      for (size_t q : dominated[p]) {
        if (--count[q] == 0) next.push_back(q);
      }
    }
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(next));
  }
  fronts.pop_back();
  return fronts;
}

std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points,
                                      const std::vector<size_t>& front) {
  std::vector<double> distance(front.size(), 0.0);
  if (front.empty()) return distance;
  const size_t m = points[front[0]].size();
  std::vector<size_t> idx(front.size());
  for (size_t k = 0; k < m; ++k) {
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return points[front[a]][k] < points[front[b]][k];
    });
    const double lo = points[front[idx.front()]][k];
    const double hi = points[front[idx.back()]][k];
    distance[idx.front()] = kInf;
    distance[idx.back()] = kInf;
    if (!(hi > lo) || !std::isfinite(hi - lo)) continue;
    for (size_t i = 1; i + 1 < idx.size(); ++i) {
      distance[idx[i]] += (points[front[idx[i + 1]]][k] - points[front[idx[i - 1]]][k]) / (hi - lo);
    }
  }
  return distance;
}

}  // namespace co_up::planner
