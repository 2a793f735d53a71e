#include "planner/modulo_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace co_up::planner {
namespace {

// Times closer than this are equal (microseconds): sums of profiled times differ in the last bits.
constexpr double kSlack = 1e-6;

// `x` modulo `ii`, in [0, ii).
double wrap(double x, double ii) {
  const double r = std::fmod(x, ii);
  return r < 0 ? r + ii : r;
}

}  // namespace

double modulo_min_ii_us(const std::vector<SubGraphCost>& subgraphs, size_t processors) {
  std::vector<double> busy(processors, 0.0);
  double longest = 0;
  for (const SubGraphCost& s : subgraphs) {
    busy.at(s.processor) += s.corun_us;
    longest = std::max(longest, s.corun_us);
  }
  return std::max(longest, busy.empty() ? 0.0 : *std::max_element(busy.begin(), busy.end()));
}

std::optional<ModuloSchedule> modulo_schedule(const std::vector<SubGraphCost>& subgraphs, size_t processors,
                                              double ii_us) {
  if (!(ii_us > 0) || ii_us + kSlack < modulo_min_ii_us(subgraphs, processors)) return std::nullopt;
  const size_t count = subgraphs.size();
  ModuloSchedule out;
  out.ii_us = ii_us;
  out.start_us.assign(count, 0.0);
  // Per processor: the placed intervals, (start modulo ii_us, length).
  std::vector<std::vector<std::pair<double, double>>> taken(processors);
  // Whether [t, t + d) modulo ii_us meets a placed interval of processor p.
  const auto collides = [&](size_t p, double t, double d) {
    for (const auto& [a, len] : taken[p]) {
      const double x = wrap(a - t, ii_us);  // where it starts, relative to t
      if (x < d - kSlack) return true;             // it starts inside ours
      if (x + len > ii_us + kSlack) return true;  // it wraps round over our start
    }
    return false;
  };
  for (size_t s = 0; s < count; ++s) {
    const SubGraphCost& c = subgraphs[s];
    const double d = c.corun_us;
    double earliest = 0, latest = std::numeric_limits<double>::infinity();
    for (uint32_t src : c.sources) earliest = std::max(earliest, out.start_us.at(src) + subgraphs[src].corun_us);
    for (uint32_t g : c.guards) {
      if (g >= s) continue;  // placed later: its own bounds check the pair
      earliest = std::max(earliest, out.start_us[g] + subgraphs[g].corun_us - ii_us);
      latest = std::min(latest, out.start_us[g] + ii_us - d);
    }
    // Candidates: the earliest start, and every placed interval's end after it (one cycle on).
    std::vector<double> candidates{earliest};
    for (const auto& [a, len] : taken[c.processor]) candidates.push_back(earliest + wrap(a + len - earliest, ii_us));
    std::sort(candidates.begin(), candidates.end());
    bool placed = false;
    for (double t : candidates) {
      if (t > latest + kSlack) break;
      if (collides(c.processor, t, d)) continue;
      out.start_us[s] = t;
      taken[c.processor].push_back({wrap(t, ii_us), d});
      placed = true;
      break;
    }
    if (!placed) return std::nullopt;
    out.length_us = std::max(out.length_us, out.start_us[s] + d);
  }
  out.order.assign(processors, {});
  std::vector<std::vector<std::pair<double, uint32_t>>> by_phase(processors);
  for (size_t s = 0; s < count; ++s) {
    by_phase[subgraphs[s].processor].push_back({wrap(out.start_us[s], ii_us), static_cast<uint32_t>(s)});
  }
  for (size_t p = 0; p < processors; ++p) {
    std::sort(by_phase[p].begin(), by_phase[p].end());
    for (const auto& [phase, s] : by_phase[p]) {
      // The phase says where in the cycle it starts, the lag which frame's it is then.
      const auto lag = static_cast<uint32_t>(std::floor((out.start_us[s] + kSlack) / ii_us));
      out.order[p].push_back({s, lag});
    }
  }
  return out;
}

std::vector<ModuloSchedule> modulo_schedule_front(const std::vector<SubGraphCost>& subgraphs, size_t processors,
                                                  double max_ii_us, double step) {
  std::vector<ModuloSchedule> front;
  const double from = modulo_min_ii_us(subgraphs, processors);
  if (!(step > 0) || !(from > 0)) return front;
  for (double ii = from; ii <= max_ii_us * (1 + kSlack); ii *= 1 + step) {
    std::optional<ModuloSchedule> s = modulo_schedule(subgraphs, processors, ii);
    if (s && (front.empty() || s->length_us < front.back().length_us - kSlack)) front.push_back(std::move(*s));
  }
  return front;
}

}  // namespace co_up::planner
