#include "cli/measured_tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>

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

double TuneGoal::score(const Measurement& measured, const Gains& gains) const {
  const auto nearest = [](double fps_ratio, double latency_ratio, double fps_target, double latency_target) {
    double s = std::numeric_limits<double>::infinity();
    if (fps_target > 0) s = std::min(s, fps_ratio / fps_target);
    if (latency_target > 0) s = std::min(s, latency_ratio / latency_target);
    return s;
  };
  if (has_relative_target()) return nearest(gains.fps, gains.latency, target_fps_gain, target_latency_gain);
  if (has_target()) {  // target_ms / ms against 1
    return nearest(measured.throughput_fps, target_ms / measured.latency_ms, target_fps, target_ms > 0 ? 1 : 0);
  }
  const bool latency = objective == planner::Objective::kLatency;
  if (gains.fps > 0) return latency ? gains.latency : gains.fps;
  return latency ? 1.0 / measured.latency_ms : measured.throughput_fps;
}

void MeasuredRuns::summarize() {
  if (fps.empty()) return;
  median = {profiler::median(fps), profiler::median(ms)};
  if (!fps_gain.empty()) gains = {profiler::median(fps_gain), profiler::median(latency_gain)};
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
  if (goal.has_relative_target() && !settings.reference) {
    throw std::invalid_argument("a relative tuning target (gains over a reference) needs a reference mapping");
  }
  const Clock::time_point begin = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - begin).count(); };
  TuneResult result;
  std::map<std::string, size_t> index;             // key -> measured
  std::set<std::string> failed;                    // runs that threw: never again
  std::map<size_t, std::vector<Neighbour>> queue;  // a parent's ranked neighbours not yet measured
  std::mt19937_64 rng(settings.seed);
  const size_t reps = static_cast<size_t>(std::max(settings.reps, 1));
  const size_t confirm_reps = static_cast<size_t>(std::max(settings.confirm_reps, 0));
  const bool has_reference = settings.reference.has_value();
  // Ranked by a score (a target, latency, throughput), or a front without one.
  const bool scored = goal.objective != planner::Objective::kPareto || goal.has_target();

  const planner::Prediction reference_prediction =
      has_reference ? model.predict(*settings.reference) : planner::Prediction{};
  const auto predicted_score = [&](const planner::Prediction& p) {
    const Gains g = has_reference ? Gains{p.throughput_fps / reference_prediction.throughput_fps,
                                          reference_prediction.latency_ms / p.latency_ms}
                                  : Gains{};
    return goal.score({p.throughput_fps, p.latency_ms}, g);
  };
  const auto score = [&](const MeasuredRuns& r) { return goal.score(r.median, r.gains); };
  // What the front compares: with a reference its in-batch ratios (as a throughput and a latency
  // relative to the reference's), else the absolute medians.
  const auto standing = [&](const MeasuredRuns& r) {
    return has_reference ? Measurement{r.gains.fps, 1.0 / r.gains.latency} : r.median;
  };
  const auto update_front = [&] {
    std::vector<size_t> ok;
    for (size_t i = 0; i < result.measured.size(); ++i) {
      if (!result.measured[i].search.empty()) ok.push_back(i);
    }
    result.front.clear();
    if (goal.objective == planner::Objective::kPareto) {
      for (size_t i : ok) {
        const bool dominated = std::any_of(ok.begin(), ok.end(), [&](size_t j) {
          return dominates(standing(result.measured[j].search), standing(result.measured[i].search));
        });
        if (!dominated) result.front.push_back(i);
      }
      std::stable_sort(result.front.begin(), result.front.end(), [&](size_t a, size_t b) {
        return standing(result.measured[a].search).throughput_fps > standing(result.measured[b].search).throughput_fps;
      });
    } else {
      result.front = ok;
      std::stable_sort(result.front.begin(), result.front.end(), [&](size_t a, size_t b) {
        return score(result.measured[a].search) > score(result.measured[b].search);
      });
    }
  };
  // The confirmation's runs, kept back from the budget at the mean run time so far.
  const double confirmation_runs = static_cast<double>(settings.confirm * confirm_reps * (has_reference ? 2 : 1));
  const auto out_of_budget = [&]() -> bool {
    const double spent = elapsed();
    const double reserve = result.runs > 0 ? confirmation_runs * spent / static_cast<double>(result.runs) : 0;
    if (spent + reserve >= settings.seconds) {
      result.stopped = "the time budget is spent";
      return true;
    }
    if (index.size() + failed.size() >= settings.max_candidates) {
      result.stopped = "the candidate limit is reached";
      return true;
    }
    return false;
  };
  const auto run_reference = [&] {
    const Measurement m = run(*settings.reference);  // a reference that fails ends the tuning
    ++result.runs;
    result.reference.fps.push_back(m.throughput_fps);
    result.reference.ms.push_back(m.latency_ms);
    return m;
  };
  // One run of `t`; false when it threw (then it is never run again).
  const auto run_mapping = [&](TunedMapping& t, MeasuredRuns& into, Measurement& m) {
    ++result.runs;
    try {
      m = run(t.candidate.mapping);
    } catch (const std::exception& e) {
      failed.insert(key(t.candidate.mapping));
      into = {};
      t.move += " (failed: " + std::string(e.what()) + ")";
      return false;
    }
    into.fps.push_back(m.throughput_fps);
    into.ms.push_back(m.latency_ms);
    return true;
  };
  // Runs `members` (indices into result.measured) and the reference `reps` rounds, rotated each
  // round; each member's runs also as ratios against the reference's median in this batch.
  const auto measure = [&](const std::vector<size_t>& members) {
    const size_t kReference = result.measured.size();
    std::vector<size_t> rotation = members;
    if (has_reference) rotation.push_back(kReference);
    std::vector<size_t> first_run;
    for (size_t i : members) first_run.push_back(result.measured[i].search.fps.size());
    std::vector<double> reference_fps, reference_ms;
    for (size_t r = 0; r < reps; ++r) {
      for (size_t k = 0; k < rotation.size(); ++k) {
        const size_t i = rotation[(k + r) % rotation.size()];
        if (i == kReference) {
          const Measurement m = run_reference();
          reference_fps.push_back(m.throughput_fps);
          reference_ms.push_back(m.latency_ms);
          continue;
        }
        TunedMapping& t = result.measured[i];
        Measurement m;
        if (failed.count(key(t.candidate.mapping)) == 0) run_mapping(t, t.search, m);
      }
    }
    if (has_reference) {
      const double fps = profiler::median(reference_fps), ms = profiler::median(reference_ms);
      for (size_t k = 0; k < members.size(); ++k) {
        MeasuredRuns& runs = result.measured[members[k]].search;
        for (size_t j = first_run[k]; j < runs.fps.size(); ++j) {
          runs.fps_gain.push_back(runs.fps[j] / fps);
          runs.latency_gain.push_back(ms / runs.ms[j]);
        }
      }
    }
    for (size_t i : members) result.measured[i].search.summarize();
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
  if (scored) {
    std::stable_sort(first.begin(), first.end(), [&](const planner::Candidate& a, const planner::Candidate& b) {
      return predicted_score(a.prediction) > predicted_score(b.prediction);
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
    if (scored) {
      std::stable_sort(eligible.begin(), eligible.end(), [&](size_t a, size_t b) {
        return score(result.measured[a].search) > score(result.measured[b].search);
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
        const double s = scored ? predicted_score(p)
                                : std::min(p.throughput_fps / pp.throughput_fps, pp.latency_ms / p.latency_ms);
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
      *progress << "tune: " << index.size() << " measured, " << result.runs << " runs, " << fixed(elapsed(), "%.0f")
                << " s; front of " << result.front.size() << "\n";
    }
  }
  if (result.stopped.empty()) result.stopped = "the time budget is spent";

  // The confirmation: the best few (a front without a target: spread over it), each run
  // `confirm_reps` more times beside the reference; the pick on those runs alone.
  // Scored: every mapping measured, the best first (a lucky point may dominate the truly best one);
  // a front without a target: the front.
  std::vector<size_t> best = result.front;
  if (scored) {
    best.clear();
    for (size_t i = 0; i < result.measured.size(); ++i) {
      if (!result.measured[i].search.empty()) best.push_back(i);
    }
    std::stable_sort(best.begin(), best.end(), [&](size_t a, size_t b) {
      return score(result.measured[a].search) > score(result.measured[b].search);
    });
  }
  std::vector<size_t> to_confirm;
  if (confirm_reps > 0) {
    const size_t n = best.size(), k = std::min(settings.confirm, n);
    for (size_t j = 0; j < k; ++j) to_confirm.push_back(best[scored || k == 1 ? j : j * (n - 1) / (k - 1)]);
  }
  // Every confirmed mapping's runs against the median of all the reference's runs in the
  // confirmation: they are spread over it alike, and a 10-frame run of the reference now and then
  // measures 30 % less throughput (one frame stalled), which the median of a mapping's own five
  // neighbours does not always outvote.
  std::vector<double> reference_fps, reference_ms;
  for (size_t r = 0, pair = 0; r < confirm_reps; ++r) {
    for (size_t i : to_confirm) {
      TunedMapping& t = result.measured[i];
      if (failed.count(key(t.candidate.mapping)) != 0) continue;
      const bool reference_first = pair++ % 2 == 0;
      Measurement reference, m;
      if (has_reference && reference_first) reference = run_reference();
      run_mapping(t, t.confirmation, m);
      if (has_reference && !reference_first) reference = run_reference();
      result.confirmation_runs += has_reference ? 2 : 1;
      if (has_reference) {
        reference_fps.push_back(reference.throughput_fps);
        reference_ms.push_back(reference.latency_ms);
      }
    }
    if (progress != nullptr) *progress << "tune: confirmation round " << r + 1 << " of " << confirm_reps << "\n";
  }
  for (size_t i : to_confirm) {
    MeasuredRuns& runs = result.measured[i].confirmation;
    if (has_reference && !runs.empty()) {
      const double fps = profiler::median(reference_fps), ms = profiler::median(reference_ms);
      for (size_t j = 0; j < runs.fps.size(); ++j) {
        runs.fps_gain.push_back(runs.fps[j] / fps);
        runs.latency_gain.push_back(ms / runs.ms[j]);
      }
    }
    runs.summarize();
    if (!result.measured[i].confirmation.empty()) result.confirmed.push_back(i);
  }
  std::stable_sort(result.confirmed.begin(), result.confirmed.end(), [&](size_t a, size_t b) {
    const MeasuredRuns &x = result.measured[a].confirmation, &y = result.measured[b].confirmation;
    return scored ? score(x) > score(y) : standing(x).throughput_fps > standing(y).throughput_fps;
  });
  result.pick = !scored                    ? result.measured.size()
                : !result.confirmed.empty() ? result.confirmed.front()
                : !best.empty() && to_confirm.empty() ? best.front()  // no confirmation asked
                                                              : result.measured.size();
  result.reference.summarize();
  result.seconds = elapsed();
  return result;
}

namespace {

// "126.40 fps    9.370 ms", then with a reference " (1.86x throughput, latency / 1.57)".
std::string numbers(const MeasuredRuns& r) {
  std::string s = fixed(r.median.throughput_fps, "%9.2f fps") + fixed(r.median.latency_ms, "  %9.3f ms");
  if (r.gains.fps > 0) {
    s += fixed(r.gains.fps, "  (%.2fx throughput") + fixed(r.gains.latency, ", latency / %.2f)");
  }
  return s;
}

}  // namespace

void print_tuned(std::ostream& out, const planner::CostModel& model, const TuneGoal& goal, const TuneResult& result) {
  out << "\ntuned (measured on this machine, now: " << result.measured.size() << " mappings, " << result.runs
      << " runs in " << fixed(result.seconds, "%.0f") << " s; search stopped: " << result.stopped << ")\n";
  if (result.front.empty()) {
    out << "nothing measured: the model's plans above stand\n";
    return;
  }
  if (!result.reference.empty()) {
    out << "reference, measured in every batch: " << numbers(result.reference) << " (median of its "
        << result.reference.fps.size() << " runs); ratios below are against its runs in the same batch\n";
  }
  out << (goal.objective == planner::Objective::kPareto ? "measured Pareto front" : "best measured")
      << " (medians of each mapping's search runs; predicted beside; these are measurements of this machine at this "
         "time, not of another one or a quieter moment)\n";
  constexpr size_t kMostPrinted = 20;
  for (size_t k = 0; k < result.front.size() && k < kMostPrinted; ++k) {
    const TunedMapping& t = result.measured[result.front[k]];
    out << fixed(static_cast<double>(k + 1), "%3.0f. ") << numbers(t.search) << "  (predicted"
        << fixed(t.candidate.prediction.throughput_fps, " %.2f fps") << fixed(t.candidate.prediction.latency_ms, ", %.3f ms")
        << "; " << t.search.fps.size() << " runs) [" << t.move << "]"
        << (result.has_pick() && result.front[k] == result.pick ? "  <- picked on its confirmation" : "") << "\n"
        << "      " << planner::command_line(model, t.candidate.mapping) << "\n";
  }
  if (result.confirmed.empty()) return;
  const TunedMapping& any = result.measured[result.confirmed.front()];
  out << "\nconfirmation: " << result.confirmed.size() << " of the "
      << (goal.has_target() ? "best measured for the target"
          : goal.objective == planner::Objective::kPareto ? "front, spread over it"
                                                          : "best measured")
      << ", " << any.confirmation.fps.size() << " more runs each"
      << (result.reference.empty() ? "" : ", every run beside a run of the reference (which first alternating)")
      << "; " << (result.has_pick() ? "the pick is the best on these runs alone" : "these runs alone") << "\n";
  for (size_t k = 0; k < result.confirmed.size(); ++k) {
    const TunedMapping& t = result.measured[result.confirmed[k]];
    out << fixed(static_cast<double>(k + 1), "%3.0f. ") << "search " << numbers(t.search) << "\n"
        << "     confirmed " << numbers(t.confirmation) << "  [" << t.move << "]"
        << (result.confirmed[k] == result.pick ? "  <- picked" : "") << "\n"
        << "      " << planner::command_line(model, t.candidate.mapping) << "\n";
  }
  if (result.has_pick() && goal.has_target()) {
    const MeasuredRuns& c = result.measured[result.pick].confirmation;
    const double score = goal.score(c.median, c.gains);
    out << "the pick " << (score >= 1 ? "meets" : "misses") << " the target on its confirmation runs (score "
        << fixed(score, "%.3f") << ", >= 1: met)\n";
  }
}

}  // namespace co_up::cli
