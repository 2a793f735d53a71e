#include "cli/measured_tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "graph/parallel_regions.h"
#include "planner/split_plan.h"
#include "profiler/report.h"

namespace co_up::cli {
namespace {

using planner::Mapping;
using planner::Mode;

std::string key(const Mapping& m) { return m.order + "/" + mode_name(m.mode); }

bool dominates(const Measurement& a, const Measurement& b) {
  return a.throughput_fps >= b.throughput_fps && a.latency_ms <= b.latency_ms &&
         (a.throughput_fps > b.throughput_fps || a.latency_ms < b.latency_ms);
}

std::string fixed(double value, const char* format) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

double TuneGoal::score(double fps, double ms) const {
  if (has_target()) {
    double s = std::numeric_limits<double>::infinity();
    if (target_fps > 0) s = std::min(s, fps / target_fps);
    if (target_ms > 0) s = std::min(s, target_ms / ms);
    return s;
  }
  return objective == planner::Objective::kLatency ? 1.0 / ms : fps;
}

std::vector<Neighbour> neighbour_mappings(const planner::DagCostModel& model, const Mapping& mapping) {
  const planner::CostModel& cost = model.model();
  const std::string& letters = cost.letters();
  std::vector<Neighbour> out;
  std::set<std::string> seen{key(mapping)};
  const auto add = [&](Mapping m, std::string move) {
    if (!cost.runs(m.order) || !seen.insert(key(m)).second) return;
    out.push_back({std::move(m), std::move(move)});
  };
  for (Mode mode : {Mode::kSwitch, Mode::kPipeline, Mode::kOverlap}) {
    if (mode == mapping.mode) continue;
    Mapping m = mapping;
    m.mode = mode;
    add(m, std::string("mode ") + mode_name(mode));
  }
  const std::vector<planner::SplitGroup> groups = planner::split_groups(cost);
  for (const planner::SplitGroup& g : groups) {
    Mapping spread = mapping;
    for (uint32_t i = 0; i < g.parts; ++i) spread.order[g.first + i] = letters[i % letters.size()];
    add(spread, "split " + g.layer + " spread");
    for (char letter : letters) {
      Mapping one = mapping;
      for (uint32_t i = 0; i < g.parts; ++i) one.order[g.first + i] = letter;
      add(one, "split " + g.layer + " on " + std::string(1, letter));
    }
  }
  const std::vector<graph::DagRegion> regions = graph::find_unit_regions(model.dag());
  for (size_t r = 0; r < regions.size(); ++r) {
    for (size_t b = 0; b < regions[r].branches.size(); ++b) {
      for (char letter : letters) {
        Mapping m = mapping;
        for (uint32_t u : regions[r].branches[b]) m.order[u] = letter;
        add(m, "region " + std::to_string(r + 1) + " branch " + std::to_string(b + 1) + " on " + std::string(1, letter));
      }
    }
  }
  for (size_t u = 0; u < mapping.order.size(); ++u) {
    for (char letter : letters) {
      if (letter == mapping.order[u]) continue;
      Mapping m = mapping;
      m.order[u] = letter;
      add(m, "unit " + std::to_string(u) + " on " + std::string(1, letter));
    }
  }
  return out;
}

TuneResult tune_mappings(const planner::DagCostModel& model, const std::vector<planner::Candidate>& starts,
                         const TuneGoal& goal, const TuneSettings& settings, const MappingRunner& run,
                         std::ostream* progress) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point begin = Clock::now();
  const Clock::time_point deadline =
      begin + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(settings.seconds, 0.0)));
  TuneResult result;
  std::map<std::string, size_t> index;             // key -> measured
  std::set<std::string> failed;                    // runs that threw: never again
  std::map<size_t, std::vector<Neighbour>> queue;  // a parent's ranked neighbours not yet measured
  std::mt19937_64 rng(settings.seed);
  const size_t reps = static_cast<size_t>(std::max(settings.reps, 1));

  const auto score = [&](const Measurement& m) { return goal.score(m.throughput_fps, m.latency_ms); };
  const auto update_front = [&] {
    std::vector<size_t> ok;
    for (size_t i = 0; i < result.measured.size(); ++i) {
      if (!result.measured[i].fps.empty()) ok.push_back(i);
    }
    result.front.clear();
    if (goal.objective == planner::Objective::kPareto) {
      for (size_t i : ok) {
        const bool dominated = std::any_of(ok.begin(), ok.end(), [&](size_t j) {
          return dominates(result.measured[j].measured, result.measured[i].measured);
        });
        if (!dominated) result.front.push_back(i);
      }
      std::stable_sort(result.front.begin(), result.front.end(), [&](size_t a, size_t b) {
        return result.measured[a].measured.throughput_fps > result.measured[b].measured.throughput_fps;
      });
    } else {
      result.front = ok;
      std::stable_sort(result.front.begin(), result.front.end(), [&](size_t a, size_t b) {
        return score(result.measured[a].measured) > score(result.measured[b].measured);
      });
    }
  };
  const auto out_of_budget = [&]() -> bool {
    if (Clock::now() >= deadline) {
      result.stopped = "the time budget is spent";
      return true;
    }
    if (index.size() + failed.size() >= settings.max_candidates) {
      result.stopped = "the candidate limit is reached";
      return true;
    }
    return false;
  };
  // Runs `members` (indices into result.measured) `reps` rounds, rotated each round.
  const auto measure = [&](const std::vector<size_t>& members) {
    for (size_t r = 0; r < reps; ++r) {
      for (size_t k = 0; k < members.size(); ++k) {
        TunedMapping& t = result.measured[members[(k + r) % members.size()]];
        if (failed.count(key(t.candidate.mapping)) != 0) continue;
        try {
          const Measurement m = run(t.candidate.mapping);
          t.fps.push_back(m.throughput_fps);
          t.ms.push_back(m.latency_ms);
        } catch (const std::exception& e) {
          failed.insert(key(t.candidate.mapping));
          t.fps.clear();
          t.ms.clear();
          t.move += " (failed: " + std::string(e.what()) + ")";
        }
        ++result.runs;
      }
    }
    for (size_t i : members) {
      TunedMapping& t = result.measured[i];
      if (!t.fps.empty()) t.measured = {profiler::median(t.fps), profiler::median(t.ms)};
    }
    update_front();
  };
  const auto add = [&](const planner::Candidate& c, const std::string& move) {
    index[key(c.mapping)] = result.measured.size();
    TunedMapping t;
    t.candidate = c;
    t.move = move;
    result.measured.push_back(std::move(t));
    return result.measured.size() - 1;
  };

  // The starting points: the front's, or the best few (with a target: those predicted nearest).
  std::vector<planner::Candidate> first;
  std::set<std::string> distinct;
  for (const planner::Candidate& c : starts) {
    if (!distinct.insert(key(c.mapping)).second) continue;
    planner::Candidate p = c;
    p.prediction = model.predict(c.mapping);
    first.push_back(p);
  }
  if (goal.objective != planner::Objective::kPareto || goal.has_target()) {
    std::stable_sort(first.begin(), first.end(), [&](const planner::Candidate& a, const planner::Candidate& b) {
      return goal.score(a.prediction.throughput_fps, a.prediction.latency_ms) >
             goal.score(b.prediction.throughput_fps, b.prediction.latency_ms);
    });
    if (first.size() > settings.starts) first.resize(settings.starts);
  }
  for (size_t at = 0; at < first.size();) {
    if (out_of_budget()) break;
    std::vector<size_t> batch;
    for (; at < first.size() && batch.size() < settings.batch + 1 && index.size() < settings.max_candidates; ++at) {
      batch.push_back(add(first[at], "model"));
    }
    measure(batch);
    if (progress != nullptr) *progress << "tune: measured " << index.size() << " of the model's " << first.size() << " start points\n";
  }

  while (result.stopped.empty() && !out_of_budget()) {
    // The parent: on the front (Pareto) or among the best few, least expanded, then best.
    std::vector<size_t> eligible = result.front;
    if (goal.objective != planner::Objective::kPareto || goal.has_target()) {
      std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
        return score(result.measured[a].measured) > score(result.measured[b].measured);
      });
      if (eligible.size() > settings.starts) eligible.resize(settings.starts);
    }
    size_t parent = result.measured.size();
    for (size_t i : eligible) {
      const auto q = queue.find(i);
      if (q != queue.end() && q->second.empty()) continue;  // nothing left to try
      if (parent == result.measured.size() || result.measured[i].expansions < result.measured[parent].expansions) parent = i;
    }
    if (parent == result.measured.size()) {
      result.stopped = "every point kept has had all its neighbours measured";
      break;
    }
    if (queue.count(parent) == 0) {
      const Mapping& pm = result.measured[parent].candidate.mapping;
      const planner::Prediction pp = result.measured[parent].candidate.prediction;
      std::vector<std::pair<double, Neighbour>> ranked;
      for (Neighbour& n : neighbour_mappings(model, pm)) {
        planner::Prediction p;
        try {
          p = model.predict(n.mapping);
        } catch (const std::exception&) {
          continue;
        }
        if (!std::isfinite(p.latency_ms) || !(p.throughput_fps > 0)) continue;
        const double s = goal.objective == planner::Objective::kPareto && !goal.has_target()
                             ? std::min(p.throughput_fps / pp.throughput_fps, pp.latency_ms / p.latency_ms)
                             : goal.score(p.throughput_fps, p.latency_ms);
        ranked.emplace_back(s, std::move(n));
      }
      std::shuffle(ranked.begin(), ranked.end(), rng);  // ties in a seeded order
      std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      std::vector<Neighbour>& q = queue[parent];
      for (auto it = ranked.rbegin(); it != ranked.rend(); ++it) q.push_back(std::move(it->second));  // best at the back
    }
    std::vector<Neighbour>& q = queue[parent];
    std::vector<size_t> batch{parent};
    while (!q.empty() && batch.size() < settings.batch + 1 && index.size() + failed.size() < settings.max_candidates) {
      Neighbour n = std::move(q.back());
      q.pop_back();
      if (index.count(key(n.mapping)) != 0) continue;
      planner::Candidate c;
      c.mapping = n.mapping;
      c.prediction = model.predict(n.mapping);
      c.source = "tuned";
      batch.push_back(add(c, n.move));
    }
    ++result.measured[parent].expansions;
    if (batch.size() == 1) continue;  // its queue held only mappings measured already
    measure(batch);
    if (progress != nullptr) {
      *progress << "tune: " << index.size() << " measured, " << result.runs << " runs, "
                << fixed(std::chrono::duration<double>(Clock::now() - begin).count(), "%.0f") << " s; front of "
                << result.front.size() << "\n";
    }
  }
  if (result.stopped.empty()) result.stopped = "the time budget is spent";
  result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return result;
}

void print_tuned(std::ostream& out, const planner::CostModel& model, const TuneGoal& goal, const TuneResult& result) {
  out << "\ntuned (measured on this machine, now: " << result.measured.size() << " mappings, " << result.runs
      << " runs in " << fixed(result.seconds, "%.0f") << " s; stopped: " << result.stopped << ")\n";
  if (result.front.empty()) {
    out << "nothing measured: the model's plans above stand\n";
    return;
  }
  out << (goal.objective == planner::Objective::kPareto ? "measured Pareto front" : "best measured")
      << " (medians of each mapping's runs; predicted beside; these are measurements of this machine at this "
         "time, not of another one or a quieter moment)\n";
  size_t best_target = result.front.front();
  if (goal.has_target()) {
    for (size_t i : result.front) {
      const Measurement& m = result.measured[i].measured;
      const Measurement& b = result.measured[best_target].measured;
      if (goal.score(m.throughput_fps, m.latency_ms) > goal.score(b.throughput_fps, b.latency_ms)) best_target = i;
    }
  }
  constexpr size_t kMostPrinted = 20;
  for (size_t k = 0; k < result.front.size() && k < kMostPrinted; ++k) {
    const TunedMapping& t = result.measured[result.front[k]];
    out << fixed(static_cast<double>(k + 1), "%3.0f. ") << fixed(t.measured.throughput_fps, "%9.2f fps")
        << fixed(t.measured.latency_ms, "  %9.3f ms") << "  (predicted" << fixed(t.candidate.prediction.throughput_fps, " %.2f fps")
        << fixed(t.candidate.prediction.latency_ms, ", %.3f ms") << "; " << t.fps.size() << " runs) [" << t.move << "]"
        << (goal.has_target() && result.front[k] == best_target ? "  <- nearest the target" : "") << "\n"
        << "      " << planner::command_line(model, t.candidate.mapping) << "\n";
  }
}

}  // namespace co_up::cli
